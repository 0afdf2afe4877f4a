"""The areas' colours: one palette (smem/data/area_colours.json) that --pie, --bar and the page all
draw the areas of RAM in.  Before it the pie took tab20's colours in row order (page cache green
on one machine, orange on another), and the page its own: page cache, swap cache and slab
reclaimable one orange, process anon and kernel stacks one blue.

Checked on every meminfo recorded under ../shared/realproc: every area a breakdown names has a
colour of its own family, no two areas of one breakdown share a colour, and areas of different
families stay apart for the two common colour-blindnesses too (Machado, Oliveira and Fernandes
2009's simulation, distance CIE76 in CIELAB).
"""

import itertools
import json

import pytest

from conftest import realproc_files
from page_browser import _open_file
from smem.area_colours import _palette, area_colour, palette_text
from smem.device_memory import DeviceMemory
from smem.page.html import _page_script
from smem.parsers.meminfo import parse_meminfo
from smem.views.breakdown import ProcessSums, breakdown_areas
from smem.views.system_areas import system_areas

matplotlib = pytest.importorskip("matplotlib", reason="smem[charts]: matplotlib not installed")

from chart_capture import chart_table  # noqa: E402
from smem.chart_data import bar_data, pie_data  # noqa: E402

#: the simulations of protanopia and deuteranopia (severity 1), linear RGB to linear RGB
SIMULATED = {
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
}
#: the least CIE76 distance between areas of different families, as seen with each
APART = 9


def _family(area):
    return next((family for prefix, _, family in _palette()["areas"] if area.startswith(prefix)), None)


def _lab(colour, matrix=None):
    linear = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in linear]
    if matrix is not None:
        linear = [min(1, max(0, sum(m * c for m, c in zip(row, linear)))) for row in matrix]
    r, g, b = linear
    xyz = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.9505, 0.2126 * r + 0.7152 * g + 0.0722 * b, \
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.089
    x, y, z = (t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in xyz)
    return 116 * y - 16, 500 * (x - y), 200 * (y - z)


def _distance(a, b, matrix=None):
    return sum((p - q) ** 2 for p, q in zip(_lab(a, matrix), _lab(b, matrix))) ** 0.5


def _breakdowns():
    """The area names of each breakdown the recorded meminfos give: with the kernel's PSS split,
    with PSS alone, without PSS; of all processes and of some; with dma-bufs and zram."""
    devices = DeviceMemory(shares={}, buffers={1: 4}, listed={1: 4, 2: 8})
    sums = (ProcessSums(count=3, pss=900, anon=500, file=300, shmem=100), ProcessSums(count=3, pss=900), None)
    found = set()
    for path in realproc_files("meminfo"):
        meminfo = parse_meminfo(path.read_bytes())
        if "MemTotal" not in meminfo.kib:
            continue
        for process_sums, selected in itertools.product(sums, (False, True)):
            rows = breakdown_areas(meminfo, process_sums, selected=selected, devices=devices)
            found.add(tuple(area for area, used, *_ in rows if not area.startswith("KSM")))  # (in no sum: not drawn)
    if not found:
        pytest.skip("no recorded meminfo")
    return sorted(found) + [tuple(area for area, _, _ in system_areas({"MemTotal": 1}))]


@pytest.mark.uses("cpu")
def test_every_area_has_a_colour_of_its_own_apart_from_other_families():
    for areas in _breakdowns():
        assert all(_family(area) for area in areas), [a for a in areas if not _family(a)]
        colours = [area_colour(area) for area in areas]
        assert len(set(colours)) == len(colours), [(a, c) for a, c in zip(areas, colours) if colours.count(c) > 1]
        for a, b in itertools.combinations(areas, 2):
            if _family(a) == _family(b):
                continue
            for seen, matrix in [("normal", None), *SIMULATED.items()]:
                assert _distance(area_colour(a), area_colour(b), matrix) >= APART, (a, b, seen)


def test_an_areas_family_is_one_hue():
    """Related areas in related hues: the shades of a family are its colour mixed with white or
    black, so their hue is its own (within a few degrees: the mix is rounded to 8 bits)."""
    import colorsys
    hues = {}
    for _, colour, family in _palette()["areas"]:
        r, g, b = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
        h, _, s = colorsys.rgb_to_hls(r, g, b)
        if s > 0.05:
            hues.setdefault(family, []).append(h * 360)
    for family, seen in hues.items():
        assert max(seen) - min(seen) < 8, (family, seen)


@pytest.mark.uses("charts")
def test_the_charts_draw_the_areas_in_their_colours():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_hex
    from matplotlib.figure import Figure
    from smem.charts import draw_bar, draw_pie
    for view in ("breakdown", "system"):
        table, options, snapshot = chart_table(view, pie="area")
        pie = pie_data(table, options, snapshot)
        figure = Figure()
        FigureCanvasAgg(figure)
        draw_pie(figure, pie)
        wedges = [p for p in figure.axes[0].patches]
        assert [to_hex(w.get_facecolor()) for w in wedges] == [area_colour(a).lower() for a in pie.labels], view
    # one column of bars: each bar in its area's colour; several: a colour a column, as the legend says
    table, options, snapshot = chart_table("breakdown", bar="area", columns=("used", "area"))
    bars = bar_data(table, options, snapshot)
    figure = Figure()
    FigureCanvasAgg(figure)
    draw_bar(figure, bars)
    drawn = [(label, to_hex(p.get_facecolor())) for label, p in zip(bars.labels, figure.axes[0].patches)
             if p.get_width() == p.get_width()]  # (an absent bar is NaN wide)
    assert drawn and all(colour == area_colour(label).lower() for label, colour in drawn), drawn
    assert figure.axes[0].get_legend() is None


def test_the_page_carries_the_palette_the_charts_read():
    script = _page_script()
    start = script.index("const AREA_PALETTE = ") + len("const AREA_PALETTE = ")
    carried, _ = json.JSONDecoder().raw_decode(script[start:])
    assert carried == json.loads(palette_text())


@pytest.mark.xdist_group("page")
def test_the_page_draws_the_areas_in_the_palettes_colours(browser, pages):  # noqa: F811
    """The header's bar, its legend and the MemTotal picture's area boxes."""
    _open_file(browser, pages["plain"][0])
    drawn = browser.execute_script("""
        const hex = (css) => '#' + css.match(/[0-9]+/g).slice(0, 3).map((v) => (+v).toString(16).padStart(2, '0')).join('');
        const rows = window.smemPage.state.data.system.rows.filter((r) => r.used > 0 && r.status !== 'gone');
        const segments = [...document.querySelectorAll('#bar .seg')].map((s, i) => [rows[i].area, hex(getComputedStyle(s).backgroundColor)]);
        const legend = [...document.querySelectorAll('#legend .item')].map((item) =>
            [item.textContent.split(' ').slice(0, -2).join(' '), hex(getComputedStyle(item.querySelector('.swatch')).backgroundColor)]);
        const boxes = window.smemPage.state.tree.children.filter((n) => n.kind === 'area').map((n) => [n.label, n.color.toLowerCase()]);
        return {segments, legend, boxes};""")
    for part, pairs in drawn.items():
        assert len(pairs) > 5, part
        assert all(colour == area_colour(area).lower() for area, colour in pairs), (part, pairs)


@pytest.mark.xdist_group("page")
def test_the_pictures_anon_file_and_shmem_are_the_headers_colours_for_them(browser, pages):  # noqa: F811
    """In the processes' picture a process's anonymous, file and shared memory are drawn in the
    colours the header gives "process anon/file/shmem (PSS)", its mappings in paler shades of them;
    users, programs and processes in greys, never in an area's hue (an orange user read as page
    cache)."""
    _open_file(browser, pages["plain"][0])
    drawn = browser.execute_script("""
        const page = window.smemPage;
        page.zoomTo(page.state.tree.children.find((n) => n.kind === 'processes'));
        const trace = document.getElementById('chart').data[0];
        return trace.ids.map((id, i) => { const n = page.state.shown.get(id);
            return [n.kind, n.part || (n.parent && n.parent.part) || null, trace.marker.colors[i]]; });""")
    kinds = [(part, colour) for kind, part, colour in drawn if kind == "kind"]
    assert {part for part, _ in kinds} >= {"anon", "file"}
    assert all(colour.lower() == area_colour(f"process {part}").lower() for part, colour in kinds), kinds
    groups = [colour for kind, _, colour in drawn if kind in ("user", "program", "cgroup", "process")]
    assert groups
    for colour in groups:
        red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
        assert max(red, green, blue) - min(red, green, blue) <= 50, colour  # (a grey, slightly blue at most)
