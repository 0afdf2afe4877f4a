"""Charts (--pie, --bar): drawn from a recorded capture through the command line, files read back.

The expected labels come from the same capture's classic report (``-c "name
pss"`` and friends), never from a list typed here.  Rendering runs the real
command line in this process (``smem.cli.main``, what ``python -m smem``
calls) so that matplotlib is imported once; the errors and the import check
run ``python -m smem`` as a user would, to see the exit status and stderr.
What the charts are drawn from (slices, bars, folding) is test_chart_data.py's.
"""

import re

import pytest

from conftest import nopss_tree, run_smem, run_smem_process

matplotlib = pytest.importorskip("matplotlib", reason="smem[charts]: matplotlib not installed")

from chart_capture import (CAPTURE, PROCESS_ROWS, VIEW_ARGS, chart_table, classic,  # noqa: E402
                           expected_slices, smem, svg_texts)
from smem.chart_data import pie_data  # noqa: E402
from smem.views import VIEWS  # noqa: E402

pytestmark = pytest.mark.uses("charts")  # each test draws with matplotlib


def check_png(path):
    from matplotlib.image import imread
    import numpy
    pixels = imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 200 and pixels.shape[1] > 200
    # each pixel's channels packed into one integer (numpy.unique(axis=0) over rows takes seconds),
    # a band of rows at a time until more than 8 colours are seen: the colours of the whole image
    # number more than 8 as soon as those of its first bands do (sorting all of a tall bar chart's
    # pixels took a good part of a second)
    colours = set()
    for top in range(0, pixels.shape[0], 64):
        channels = numpy.rint(pixels[top:top + 64].reshape(-1, pixels.shape[2]) * 255).astype(numpy.uint64)
        packed = numpy.zeros(len(channels), dtype=numpy.uint64)
        for c in range(channels.shape[1]):
            packed = (packed << numpy.uint64(8)) | channels[:, c]
        colours.update(numpy.unique(packed).tolist())
        if len(colours) > 8:
            break
    assert len(colours) > 8, "the chart is blank"


def check_pdf(path):
    data = path.read_bytes()
    assert data.startswith(b"%PDF-")
    assert data.rstrip().endswith(b"%%EOF")
    assert len(re.findall(rb"/Type\s*/Page\b", data)) >= 1


def _formats(view):
    """Every format for the process view; SVG, whose text is what a view changes, for the others
    (a PNG and a PDF are checked as files, the same whatever view drew them)."""
    return ("png", "svg", "pdf") if view == "process" else ("svg",)


def _check_files(tmp_path, kind, view):
    if view == "process":
        check_png(tmp_path / f"{kind}.png")
        check_pdf(tmp_path / f"{kind}.pdf")


@pytest.mark.parametrize("view", list(VIEW_ARGS))
def test_pie_in_every_format(view, capsys, tmp_path):
    option, label, _ = VIEW_ARGS[view]
    ram, big, small = expected_slices(capsys, view)
    assert big, "the capture has no row big enough to check"
    ram_option = ["-R", f"{ram}K"] if view in PROCESS_ROWS else []
    for fmt in _formats(view):
        out = tmp_path / f"pie.{fmt}"
        code, stdout, err = smem(capsys, *option, *ram_option, "--pie", label, "-o", out)
        assert (code, stdout, err) == (0, "", "")
        assert out.stat().st_size > 1000
    _check_files(tmp_path, "pie", view)
    texts = svg_texts(tmp_path / "pie.svg")
    # every big slice is in the legend ("NAME  SIZE"), and named on the pie but where its name would
    # be drawn over a bigger one's (test_pie_slice_names_never_overlap): a few at most
    legend = {t.rsplit("  ", 1)[0] for t in texts if "  " in t}
    on_pie = [name for name in big  # (a name shown twice carries the pid: "postgres (1234)")
              if name in texts or any(t.startswith(name + " (") for t in texts)]
    assert all(name in legend or any(n.startswith(name + " (") for n in legend) for name in big), (big, legend)
    assert len(on_pie) >= len(big) * 2 / 3, (big, sorted(texts))
    # unused only where RAM minus the rows means something; -w areas are never folded.
    assert ("unused" in texts) == (view in PROCESS_ROWS)
    if view != "system" and len(small) >= 2:
        assert "other" in texts
    if view == "system":
        assert "other" not in texts
    assert any(t.startswith(VIEWS[view].title.capitalize() + ":") for t in texts)
    assert any(t.startswith("capture ") and "faithful.tar.gz" in t for t in texts)


@pytest.mark.parametrize("view", list(VIEW_ARGS))
def test_bar_in_every_format(view, capsys, tmp_path):
    option, label, measure = VIEW_ARGS[view]
    view_obj = VIEWS[view]
    amounts = [view_obj.columns[k] for k in view_obj.default_columns if view_obj.columns[k].is_amount]
    rows = classic(capsys, *option, "-c", f"{measure} {label}")
    width = view_obj.columns[label].width
    # the largest rows are drawn (the smallest may be folded into "other")
    largest = sorted((r for r in rows if r[0].isdigit()), key=lambda r: int(r[0]))[-3:]
    names = {" ".join(r[1:]) for r in largest if len(" ".join(r[1:])) < width}
    for fmt in _formats(view):
        out = tmp_path / f"bar.{fmt}"
        code, stdout, err = smem(capsys, *option, "--bar", label, "-o", out)
        assert (code, stdout, err) == (0, "", "")
    _check_files(tmp_path, "bar", view)
    texts = svg_texts(tmp_path / "bar.svg")
    labels = {t.rsplit(" (", 1)[0] if t.endswith(")") else t for t in texts}
    assert names and names <= labels, names - labels
    assert {c.header for c in amounts} <= texts    # the legend: one series per memory column
    assert any(re.fullmatch(r"memory \([KMG]iB\)", t) for t in texts)  # the axis, in human units


def test_bar_axis_follows_k_and_p(capsys, tmp_path):
    columns = ["-c", "uss pss rss name"]
    raw = classic(capsys, *columns)
    human = classic(capsys, *columns, "-k")
    # The largest amount and how -k writes it: its suffix is the axis unit.
    cells = [(int(v), h) for r, rk in zip(raw, human) for v, h in zip(r[:3], rk[:3])]
    suffix = max(cells)[1][-1]
    labels = {}
    for flag in ("", "-k", "-p"):
        out = tmp_path / f"bar{flag}.svg"
        code, _, err = smem(capsys, *columns, *([flag] if flag else []), "--bar", "name", "-o", out)
        assert code == 0, err
        labels[flag] = {t for t in svg_texts(out) if t.startswith(("memory", "%"))}
    assert labels[""] == labels["-k"] == {f"memory ({suffix}iB)"}  # human units, -k or not
    assert labels["-p"] == {"% of RAM"}
    out = tmp_path / "swap.svg"
    assert smem(capsys, "-c", "name swap pss", "-p", "--bar", "name", "-o", out)[0] == 0
    assert "% of RAM (Swap: % of swap)" in svg_texts(out)


def test_other_formats_from_the_canvas(capsys, tmp_path):
    """Each written by matplotlib's canvas, as png, svg and pdf are: the users' pie, a handful of
    slices, is enough to see the file is of that format."""
    from matplotlib.figure import Figure
    supported = Figure().canvas.get_supported_filetypes()
    magic = {"eps": b"%!PS-Adobe", "ps": b"%!PS-Adobe", "jpg": b"\xff\xd8\xff",
             "tif": (b"II*\x00", b"MM\x00*"), "webp": b"RIFF"}
    for fmt, start in magic.items():
        if fmt not in supported:
            continue
        out = tmp_path / f"pie.{fmt}"
        code, _, err = smem(capsys, "-u", "--pie", "user", "-o", out)
        assert code == 0, err
        assert out.read_bytes().startswith(start), fmt


def _one_error_line(proc):
    assert proc.returncode != 0
    assert proc.stdout == b""
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("smem: "), lines
    assert "Traceback" not in lines[0]
    return lines[0]


def test_unknown_extension_lists_the_supported_ones(tmp_path):
    out = tmp_path / "chart.xyz"
    line = _one_error_line(run_smem("-S", CAPTURE, "--pie", "name", "-o", out))
    assert "xyz" in line
    for fmt in ("png", "svg", "pdf"):
        assert fmt in line
    assert not out.exists() and not list(tmp_path.iterdir())


def test_no_display_and_no_output_says_how_to_save(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    for chart in ("--pie", "--bar"):
        proc = run_smem("-S", CAPTURE, chart, "name")
        assert proc.returncode == 2
        assert "-o" in _one_error_line(proc)


def test_empty_result_is_nothing_to_chart(tmp_path):
    out = tmp_path / "empty.png"
    for chart in ("--pie", "--bar"):
        proc = run_smem("-S", CAPTURE, "-P", "^no-such-process-here$", chart, "name", "-o", out)
        assert "nothing to chart" in _one_error_line(proc)
        assert not out.exists()


@pytest.mark.process
def test_text_reports_do_not_import_matplotlib(tmp_path):
    # a fresh interpreter: this one has imported matplotlib already
    text = run_smem_process("-S", CAPTURE, "-c", "pid", env={"PYTHONPROFILEIMPORTTIME": "1"}, check=True)
    assert b"smem.report" in text.stderr and b"matplotlib" not in text.stderr
    chart = run_smem_process("-S", CAPTURE, "-u", "--pie", "user", "-o", tmp_path / "p.png",
                     env={"PYTHONPROFILEIMPORTTIME": "1"}, check=True)
    assert b"matplotlib" in chart.stderr  # the check above can see it


def test_absent_values_are_missing_not_zero(capsys, tmp_path):
    """A 2.6.2x kernel's smaps has no Pss and no Swap: they show as n/a, never as 0."""
    source = nopss_tree(tmp_path)  # (its own proc dump, with the capture's meminfo)
    out = tmp_path / "bar.svg"
    code, _, err = smem(capsys, "-c", "swap pss rss", "--bar", "name", "-o", out, source=source)
    assert code == 0
    texts = svg_texts(out)
    # (a column with no figure on any row is said once, not marked n/a on each: e5409b5's sparse columns)
    assert {"Swap: no figure on any row", "PSS: no figure on any row"} <= set(texts) and "n/a" not in texts
    # The pie falls back to RSS (no PSS), as the classic report sorts by it.
    out = tmp_path / "pie.svg"
    code, _, err = smem(capsys, "--pie", "name", "-o", out, source=source)
    assert code == 0
    assert any(t.startswith("Processes: RSS by name") for t in svg_texts(out))
    # A pie of PSS alone has nothing to draw: an error, not a pie of zeros.
    code, _, err = smem(capsys, "-s", "pss", "--pie", "name", "-o", tmp_path / "x.svg", source=source)
    assert code == 1 and "PSS" in err
    assert err.splitlines()[-1].startswith("smem: nothing to chart: ")   # after the no-PSS warning
    assert not (tmp_path / "x.svg").exists()


def test_slice_colours_never_repeat():
    from smem.charts import OTHER_COLOUR, UNUSED_COLOUR, slice_colours
    from matplotlib.colors import to_hex
    for count in (1, 18, 19, 54, 55, 200):
        colours = [to_hex(c) for c in slice_colours(count)]
        assert len(colours) == count == len(set(colours))
        assert OTHER_COLOUR not in colours and UNUSED_COLOUR not in colours


def test_pie_title_is_centred_over_the_pie():
    from matplotlib.figure import Figure
    from smem.charts import PIE_BOX, draw_pie
    table, options, snapshot = chart_table(pie="name")
    figure = Figure()
    draw_pie(figure, pie_data(table, options, snapshot))
    title = next(t for t in figure.texts if t.get_text().startswith("Processes"))
    assert title.get_position()[0] == pytest.approx(PIE_BOX[0] + PIE_BOX[2] / 2)
    box = figure.axes[0].get_position()
    assert (box.x0 + box.x1) / 2 == pytest.approx(title.get_position()[0], abs=0.01)


def test_chart_signatures_say_more_than_the_container(tmp_path):
    from smem.charts import _MARK, _holds_chart
    svg = b'<?xml version="1.0"?>\n<svg xmlns=...><dc:title>Matplotlib v3</dc:title>'
    assert _holds_chart("svg")(svg, b"") and not _holds_chart("svg")(b"<?xml?><html><!-- matplotlib -->", b"")
    webp = b"RIFF\0\0\0\0WEBPVP8 "
    assert _holds_chart("webp")(webp, _MARK) and not _holds_chart("webp")(b"RIFF\0\0\0\0WAVEfmt ", _MARK)
    import gzip
    assert _holds_chart("svgz")(gzip.compress(svg), b"") and not _holds_chart("svgz")(gzip.compress(b"tar matplotlib"), b"")


def test_pie_slice_names_never_overlap():
    """Two slices big enough to be named, side by side near the bottom of the pie, had their names
    drawn over each other (a breakdown's "slab reclaimable" and "slab unreclaimable"); of two that
    would meet, the bigger slice keeps its name (the legend names every slice)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from smem.chart_data import PieData
    from smem.charts import draw_pie
    labels = ["process anon (PSS)", "process file (PSS)", "process shmem (PSS)", "anon of processes not read",
              "page cache not mapped", "slab reclaimable", "slab unreclaimable", "kernel stacks", "page tables",
              "free", "unexplained"]
    mib = [18.9, 8.2, 50.0, 532.6, 1018.6, 95.2, 158.6, 32.5, 48.8, 1272.2, 389.4]
    values = [round(m * 1024) for m in mib]
    data = PieData("System memory", "capture", labels, values, ["row"] * len(values), labels, [])
    figure = Figure()
    canvas = FigureCanvasAgg(figure)
    draw_pie(figure, data)
    renderer = canvas.get_renderer()
    named = [t for t in figure.axes[0].texts if t.get_text() in labels]
    assert {"free", "page cache not mapped", "slab unreclaimable"} <= {t.get_text() for t in named}
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in named]
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            assert not box_a.overlaps(box_b), (a, b)


@pytest.mark.parametrize("rows", [3, 28])
def test_a_bars_notes_stay_under_its_axis(rows):
    """The foot of a bar chart kept room for two lines of notes whatever their number: a breakdown's
    seven (sources, KSM, unexplained, --recommend, pressure) were drawn over the axis's figures and
    its label."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from smem.chart_data import BarData
    from smem.charts import draw_bar
    notes = [f"note {n}: where a figure came from, and what was left out" for n in range(7)]
    data = BarData("System memory", "capture", [f"area {n}" for n in range(rows)], ["Used", "Cache"],
                   [[float(n) for n in range(rows)], [None] * rows], "memory (MiB)", notes)
    figure = Figure()
    canvas = FigureCanvasAgg(figure)
    draw_bar(figure, data)
    canvas.draw()  # (the axis label is placed when drawn)
    renderer = canvas.get_renderer()
    axis = figure.axes[0]
    lowest = min(box.y0 for box in [axis.xaxis.label.get_window_extent(renderer),
                                    *(t.get_window_extent(renderer) for t in axis.get_xticklabels())])
    drawn = [t for t in figure.texts if t.get_text() in notes]
    assert len(drawn) == len(notes)
    assert max(t.get_window_extent(renderer).y1 for t in drawn) < lowest


@pytest.mark.parametrize("count", [0, 2, 7])
def test_a_pies_notes_stay_under_it_and_its_names(count):
    """A breakdown's seven notes were drawn over the pie's bottom and the name of its slice there
    ("free"): the figure grows by what they need under the pie."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from smem.chart_data import PieData
    from smem.charts import draw_pie
    notes = [f"note {n}: where a figure came from, and what was left out" for n in range(count)]
    labels, values = ["page cache", "slab", "free"], [900, 700, 21000]
    figure = Figure()
    canvas = FigureCanvasAgg(figure)
    draw_pie(figure, PieData("System memory", "capture", labels, values, ["row"] * 3, labels, notes))
    canvas.draw()
    renderer = canvas.get_renderer()
    names = [t.get_window_extent(renderer) for t in figure.axes[0].texts if t.get_text() in labels]
    wedges = [p.get_window_extent(renderer) for p in figure.axes[0].patches]
    drawn = [t.get_window_extent(renderer) for t in figure.texts if t.get_text() in notes]
    assert len(drawn) == count and "free" in [t.get_text() for t in figure.axes[0].texts]
    if drawn:
        assert max(box.y1 for box in drawn) < min(box.y0 for box in names + wedges)
    assert figure.get_size_inches()[1] >= 7


@pytest.mark.parametrize("chart", ["pie", "bar"])
def test_a_long_note_is_wrapped_inside_the_chart(chart):
    """A note longer than the chart is wide (a list of areas below zero, say) ran off its right
    edge: it is wrapped, its lines under the pie or the axis, all of it drawn."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from smem.chart_data import BarData, PieData
    from smem.charts import draw_bar, draw_pie
    long = "below zero, not drawn: " + ", ".join(f"area number {n} (-{n}.5M)" for n in range(30))
    notes = ["first note", long, "last note"]
    labels, values = ["page cache", "slab", "free"], [900, 700, 21000]
    figure = Figure()
    canvas = FigureCanvasAgg(figure)
    if chart == "pie":
        draw_pie(figure, PieData("System memory", "capture", labels, values, ["row"] * 3, labels, notes))
    else:
        draw_bar(figure, BarData("System memory", "capture", labels, ["Used"], [values], "memory (MiB)", notes))
    canvas.draw()
    renderer = canvas.get_renderer()
    axis = figure.axes[0]
    drawn = [t for t in figure.texts if t.get_position()[1] == 0]  # (the notes: at the foot)
    assert " ".join(t.get_text().strip() for t in reversed(drawn)) == " ".join(notes)
    assert len(drawn) > len(notes)
    assert all(t.get_window_extent(renderer).x1 <= figure.bbox.x1 for t in drawn)
    above = [*axis.texts, *axis.patches] if chart == "pie" else [axis.xaxis.label, *axis.get_xticklabels()]
    assert max(t.get_window_extent(renderer).y1 for t in drawn) < min(a.get_window_extent(renderer).y0 for a in above)
