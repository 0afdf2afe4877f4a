"""Charts (--pie, --bar): drawn from a recorded capture through the command line, files read back.

The expected labels come from the same capture's classic report (``-c "name
pss"`` and friends), never from a list typed here.  Rendering runs the real
command line in this process (``smem.cli.main``, what ``python -m smem``
calls) so that matplotlib is imported once; the errors and the import check
run ``python -m smem`` as a user would, to see the exit status and stderr.
"""

import re
import shutil
import tarfile
import xml.etree.ElementTree as ET

import pytest

from conftest import FIXTURES, REALPROC, run_smem, run_smem_process

matplotlib = pytest.importorskip("matplotlib")

from smem.chart_data import FOLD_EACH, FOLD_TOGETHER, bar_data, pie_data  # noqa: E402
from smem.cli import main  # noqa: E402
from smem.app import plan, read_snapshot  # noqa: E402
from smem.options import ChartOptions, Query, ReportRequest, SystemOptions, TableOptions  # noqa: E402
from smem.report import make_table  # noqa: E402
from smem.views import VIEWS  # noqa: E402

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"

# view -> (option, label field, the view's memory measure for the pie)
VIEW_ARGS = {
    "process": ([], "name", "pss"),
    "user": (["-u"], "user", "pss"),
    "mapping": (["-m"], "map", "pss"),
    "system": (["-w"], "area", "used"),
}
if "program" in VIEWS:  # -g: processes grouped by program name
    VIEW_ARGS["program"] = (["-g"], "name", "pss")
PROCESS_ROWS = ("process", "user", "program", "cgroup")


def smem(capsys, *args, source=CAPTURE):
    """Run the command line in-process: (exit status, stdout, stderr)."""
    with pytest.raises(SystemExit) as exit:
        main(["-S", str(source), *map(str, args)])
    out, err = capsys.readouterr()
    return exit.value.code or 0, out, err


def classic(capsys, *args):
    """Rows of the classic report (header dropped), split on whitespace."""
    code, out, err = smem(capsys, "-H", *args)
    assert code == 0, err
    return [line.split() for line in out.splitlines()]


def svg_texts(path):
    """Every string drawn in an SVG chart (labels are <text>, svg.fonttype none)."""
    root = ET.parse(path).getroot()
    return {"".join(e.itertext()).strip() for e in root.iter() if e.tag.endswith("}text")}


def check_png(path):
    from matplotlib.image import imread
    import numpy
    pixels = imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 200 and pixels.shape[1] > 200
    # each pixel's channels packed into one integer: numpy.unique(axis=0) over rows takes seconds
    channels = numpy.rint(pixels.reshape(-1, pixels.shape[2]) * 255).astype(numpy.uint64)
    packed = numpy.zeros(len(channels), dtype=numpy.uint64)
    for c in range(channels.shape[1]):
        packed = (packed << numpy.uint64(8)) | channels[:, c]
    colours = numpy.unique(packed)
    assert len(colours) > 8, "the chart is blank"


def check_pdf(path):
    data = path.read_bytes()
    assert data.startswith(b"%PDF-")
    assert data.rstrip().endswith(b"%%EOF")
    assert len(re.findall(rb"/Type\s*/Page\b", data)) >= 1


def expected_slices(capsys, view):
    """(RAM for -R, labels that must be slices, labels small enough to fold) from the classic report.

    -R is twice the memory the rows use, so that "unused" is half the pie and the
    biggest rows get slices of their own whatever the capture machine's RAM.
    """
    option, label, measure = VIEW_ARGS[view]
    rows = classic(capsys, *option, "-c", f"{measure} {label}")
    # (-w prints notes under the table: they do not start with a number.)
    values = [(int(r[0]), " ".join(r[1:])) for r in rows if r[0].isdigit()]
    ram = 2 * sum(v for v, _ in values) if view in PROCESS_ROWS else sum(v for v, _ in values)
    # The classic report cuts names to the column width: only whole ones can be compared.
    width = VIEWS[view].columns[label].width
    big = [name for value, name in values if value >= FOLD_TOGETHER * ram and len(name) < width]
    small = [name for value, name in values if 0 < value < FOLD_EACH * ram]
    return ram, big, small


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
    for name in big:  # (a name shown twice carries the pid: "postgres (1234)")
        assert name in texts or any(t.startswith(name + " (") for t in texts), (name, sorted(texts))
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


# The chart data, from the same capture, through the functions the command line calls.

def chart_table(view="process", pie=None, bar=None, ram_kib=None, **options):
    """(Table, TableOptions, Snapshot) of a chart, read and built as the command line does."""
    request = ReportRequest(Query(view=view, source=str(CAPTURE)), TableOptions(**options),
                            ChartOptions("pie" if pie else "bar", pie or bar),
                            SystemOptions(realmem_bytes=ram_kib * 1024 if ram_kib else None))
    snapshot, _ = read_snapshot(request, plan(request))
    return make_table([snapshot], VIEWS[view], request.table, request.system, request.chart), request.table, snapshot


def test_pie_folds_small_slices_as_smem15_and_fills_ram_with_unused(capsys):
    ram, _, _ = expected_slices(capsys, "process")
    table, options, snapshot = chart_table(pie="name", ram_kib=ram)
    pie = pie_data(table, options, snapshot)
    pss = sorted(v for v in table.sort_values)
    # smem 1.5: the smallest go into "other" while together under 2%, or each under 0.5%.
    other = 0
    while pss and (other + pss[0] < FOLD_TOGETHER * ram or pss[0] < FOLD_EACH * ram):
        other += pss.pop(0)
    assert pie.labels[0] == "unused" and pie.labels[-1] == "other"
    assert pie.values[-1] == other
    assert sorted(pie.values[1:-1]) == pss
    assert sum(pie.values) == ram   # unused + the rows are all of RAM
    # Largest first, as smem 1.5 draws them; -r flips the order.
    assert pie.values[1:-1] == sorted(pss, reverse=True)
    table, options, snapshot = chart_table(pie="name", ram_kib=ram, reverse=True)
    assert pie_data(table, options, snapshot).values[1:-1] == sorted(pss)


@pytest.mark.parametrize("view,sort,unused", [
    ("process", "uss", True), ("process", "rss", False), ("process", "vss", False),
    ("process", "swap", False), ("user", "pss", True), ("mapping", "pss", False), ("cgroup", "pss", True),
])
def test_unused_only_for_fields_that_count_each_page_once(view, sort, unused):
    label = VIEW_ARGS[view][1] if view in VIEW_ARGS else view
    table, options, snapshot = chart_table(view, pie=label, sort=sort, ram_kib=10 ** 9)
    pie = pie_data(table, options, snapshot)
    # (so much RAM that unused is not drawn but said in a note: see the lightly loaded test)
    assert ("unused" in pie.labels or any(n.startswith("unused") for n in pie.notes)) == unused
    if not unused:
        # The pie is the rows: nothing is added, nothing lost in the folding.
        assert sum(pie.values) == sum(v for v in table.sort_values if v)


def test_system_pie_is_the_areas_and_adds_up_to_ram():
    table, options, snapshot = chart_table("system", pie="area")
    pie = pie_data(table, options, snapshot)
    used = {row[-1]: row[table.columns.index(table.view.columns["used"])] for row in table.values}
    assert dict(zip(pie.labels, pie.values)) == {k: v for k, v in used.items() if v > 0}
    assert sum(pie.values) == sum(v for v in used.values() if v > 0)


def test_pie_with_a_name_sort_shows_pss_in_name_order(capsys, tmp_path):
    table, options, snapshot = chart_table(pie="name", sort="name", columns=("pid", "name"))
    pie = pie_data(table, options, snapshot)
    pss = {int(pid): int(value) for pid, value in classic(capsys, "-c", "pid pss")}
    pids = [row[0] for row in table.values]
    assert any("slices show PSS" in n for n in pie.notes)
    assert "unused" not in pie.labels and any(n.startswith("unused") for n in pie.notes)  # 99% of RAM
    assert sum(pss[p] for p in pids) == sum(pie.values)
    code, _, err = smem(capsys, "-s", "name", "-c", "pid name", "--pie", "name", "-o", tmp_path / "p.svg")
    assert code == 0, err


def test_bar_order_and_columns_follow_s_r_c():
    table, options, snapshot = chart_table(bar="name", columns=("name", "rss", "uss", "maps"), sort="rss")
    bars = bar_data(table, options, snapshot)
    assert bars.series == ["RSS", "USS"]   # memory columns only, in -c order
    assert bars.labels[-1].startswith("other (")  # the smallest, last
    assert bars.values[0][:-1] == sorted(bars.values[0][:-1], reverse=True)
    table, options, snapshot = chart_table(bar="name", columns=("name", "rss", "uss", "maps"), sort="rss",
                                           reverse=True)
    reversed_bars = bar_data(table, options, snapshot)
    assert reversed_bars.values[0][:-1] == bars.values[0][:-1][::-1]
    # (rows alike in every shown value keep their order both ways: compare the names, not the pids)
    def names(labels):
        return [label.rsplit(" (", 1)[0] for label in labels[:-1]]
    assert names(reversed_bars.labels) == names(bars.labels)[::-1]


def test_long_labels_are_cut_with_an_ellipsis():
    table, options, snapshot = chart_table(bar="command", columns=("pss",))
    bars = bar_data(table, options, snapshot)
    commands = [row[-1] for row in table.values][::-1]  # the largest first, as drawn; "other" last
    long = [(c, label) for c, label in zip(commands, bars.labels[:-1]) if len(c) > 40]
    assert long, "the capture has no long command line"
    for command, label in long:
        assert len(label) == 40 and label.endswith("\u2026") and command.startswith(label[:-1])


def test_absent_values_are_missing_not_zero(capsys, tmp_path):
    """A 2.6.2x kernel's smaps has no Pss and no Swap: they show as n/a, never as 0."""
    old = REALPROC / "hikvision-dvr-arm-2.6-nopss" / "proc"
    if not old.is_dir():
        pytest.skip("../shared/realproc is not available")
    # The device's own proc dump has no meminfo: borrow the capture's.
    proc = tmp_path / "capture" / "proc"
    shutil.copytree(old, proc)
    with tarfile.open(CAPTURE) as tar:
        member = next(m for m in tar.getmembers() if m.name.rstrip("/").endswith("meminfo"))
        (proc / "meminfo").write_bytes(tar.extractfile(member).read())
    source = tmp_path / "capture"
    out = tmp_path / "bar.svg"
    code, _, err = smem(capsys, "-c", "swap pss rss", "--bar", "name", "-o", out, source=source)
    assert code == 0
    texts = svg_texts(out)
    assert "n/a" in texts and any("absent" in t for t in texts)
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


def test_a_lightly_loaded_machine_gets_a_readable_pie():
    """99% unused would leave every process in "other": the pie is then the used part, and says so."""
    table, options, snapshot = chart_table(pie="name")
    used = sum(v for v in table.sort_values if v)
    table, options, snapshot = chart_table(pie="name", ram_kib=100 * used)
    pie = pie_data(table, options, snapshot)
    assert "unused" not in pie.labels and sum(pie.values) == used
    assert any("not drawn" in n and "unused" in n for n in pie.notes)
    biggest = max(table.sort_values)
    assert biggest in pie.values and len([k for k in pie.kinds if k == "row"]) >= 3
    from smem.units import human
    for text, value in zip(pie.legend, pie.values):  # amounts in human units, not KiB counts
        assert text.endswith("  " + human(value)) and "KiB" not in text


def test_slice_colours_never_repeat():
    from smem.charts import OTHER_COLOUR, UNUSED_COLOUR, slice_colours
    from matplotlib.colors import to_hex
    for count in (1, 18, 19, 54, 55, 200):
        colours = [to_hex(c) for c in slice_colours(count)]
        assert len(colours) == count == len(set(colours))
        assert OTHER_COLOUR not in colours and UNUSED_COLOUR not in colours


def test_repeated_labels_carry_the_pid():
    table, options, snapshot = chart_table(bar="name", columns=("pss",))
    bars = bar_data(table, options, snapshot)
    assert bars.labels[-1].startswith("other (")
    drawn = bars.labels[:-1]
    names = [label.rsplit(" (", 1)[0] for label in drawn]
    repeated = {n for n in names if names.count(n) > 1}
    assert repeated, "the capture has no program running twice"
    for label, name in zip(drawn, names):
        assert (name in repeated) == label.endswith(")"), label
    assert len(set(bars.labels)) == len(bars.labels)


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


def test_bars_fold_small_rows_and_keep_a_sensible_height(capsys, tmp_path):
    """-m --bar map drew every mapping, dozens of them 0, thousands of pixels tall: the rows a pie
    would fold, and those beyond the largest MAX_BARS, are one "other" bar holding their sums."""
    from smem.chart_data import MAX_BARS
    table, options, snapshot = chart_table("mapping", bar="map", columns=("pss",))
    bars = bar_data(table, options, snapshot)
    pss = table.column_values(table.view.columns["pss"])
    assert len(table.values) > MAX_BARS and 0 in pss  # what there is to fold
    *drawn, other = bars.labels
    count = len(table.values) - len(drawn)
    assert other == f"other ({count} mappings)" and len(drawn) <= MAX_BARS
    assert 0 not in bars.values[0][:-1]                  # no empty bars
    unit = {"KiB": 1, "MiB": 1024, "GiB": 1024 ** 2}[bars.axis_label[8:11]]
    assert sum(bars.values[0]) * unit == pytest.approx(sum(pss))  # nothing lost: "other" is their sum
    out = tmp_path / "bars.png"
    code, _, err = smem(capsys, "-m", "--bar", "map", "-o", out)
    assert code == 0, err
    import struct
    width, height = struct.unpack(">II", out.read_bytes()[16:24])
    assert height <= 1700, (width, height)  # 16 inches at 100 dpi, and the margins


def test_chart_signatures_say_more_than_the_container(tmp_path):
    from smem.charts import _holds_chart
    assert _holds_chart("svg")(b'<?xml version="1.0"?>\n<svg xmlns=...') and not _holds_chart("svg")(b"<?xml?><html>")
    assert _holds_chart("webp")(b"RIFF\0\0\0\0WEBPVP8 ") and not _holds_chart("webp")(b"RIFF\0\0\0\0WAVEfmt ")
    import gzip
    assert _holds_chart("svgz")(gzip.compress(b"<?xml?><svg>")) and not _holds_chart("svgz")(gzip.compress(b"tar"))


def test_two_sharers_of_one_name_are_told_apart_by_pid():
    """--shared-with's chart: two processes called bash are "bash (PID)", as the process view's are."""
    from types import SimpleNamespace

    from smem.chart_data import _labels
    from smem.views.sharing import HolderRow
    rows = [HolderRow(SimpleNamespace(pid=pid), "root", 100.0) for pid in (11, 12)]
    assert _labels([("bash", rows[0]), ("bash", rows[1])], "name") == ["bash (11)", "bash (12)"]
