"""The pie's legend (smem/charts.py): never drawn over a slice's name."""

import pytest

pytest.importorskip("matplotlib", reason="smem[charts]: matplotlib not installed")


def test_a_slice_name_on_the_right_is_not_drawn_under_the_legend():
    """-w --pie area of a 24 GiB machine with 824 MiB of userspace memory: the slice's name, on the
    pie's right half, ran into the legend beside it ("userspace mem" then the legend's first
    swatch).  The legend moves right of it, and every name stays drawn."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from smem.chart_data import PieData
    from smem.charts import draw_pie
    labels = ["firmware/hardware", "kernel image", "kernel dynamic memory", "userspace memory", "free memory"]
    kib = [448_922, 32_768, 4_508_877, 843_878, 19_398_656]
    legend = [f"{label}  {size}" for label, size in zip(labels, ["438.4M", "32.0M", "4.3G", "824.1M", "18.5G"])]
    figure = Figure()
    canvas = FigureCanvasAgg(figure)
    draw_pie(figure, PieData("System memory: Used by area", "live system", labels, kib, ["row"] * 5, legend, []))
    canvas.draw()
    renderer = canvas.get_renderer()
    box = figure.legends[0].get_window_extent(renderer)
    named = {t.get_text(): t for t in figure.axes[0].texts if t.get_text() in labels}
    assert {"kernel dynamic memory", "userspace memory", "free memory"} <= {n for n, t in named.items()
                                                                          if t.get_visible()}
    for name, text in named.items():
        assert not (text.get_visible() and text.get_window_extent(renderer).overlaps(box)), name
    assert box.x1 <= figure.bbox.width  # (still on the figure)
