"""Rows at 0 in a chart: the pie has no slice for them and the bar chart no empty bars under their
labels; both name them once in a note.  -w --breakdown --bar drew six empty rows of a machine's
(bounce buffers, hugetlb pool, ...), and a bar chart of swap one empty row per process not
swapped, while the pie left them out silently."""

import csv
import io

import pytest

matplotlib = pytest.importorskip("matplotlib", reason="smem[charts]: matplotlib not installed")

from chart_capture import chart_table, smem, svg_texts  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from smem.chart_data import ZERO_NAMED, bar_data, pie_data  # noqa: E402

pytestmark = pytest.mark.uses("charts")  # each test draws with matplotlib


def _csv(capsys, *args):
    code, table, err = smem(capsys, *args, "-F", "csv")
    assert code == 0, err
    return list(csv.DictReader(io.StringIO(table)))


def test_breakdown_bars_leave_out_the_rows_at_zero(capsys, tmp_path):
    rows = _csv(capsys, "-w", "--breakdown")
    figures = ("used", "cache", "noncache", "saved")
    zero = [r["area"] for r in rows if {r[k] for k in figures} <= {"0", ""} and "0" in {r[k] for k in figures}]
    absent = [r["area"] for r in rows if not any(r[k] for k in figures)]
    assert len(zero) >= 3 and absent  # (the capture has both: empty pools, fields its kernel lacks)
    out = tmp_path / "bar.svg"
    code, _, err = smem(capsys, "-w", "--breakdown", "--bar", "area", "-o", out)
    assert code == 0, err
    texts = svg_texts(out)
    assert not set(zero) & texts
    assert set(absent) < texts  # (no figure at all is another thing: marked n/a on its row)
    assert {r["area"] for r in rows} - set(zero) < texts
    assert "zero, not drawn: " + ", ".join(zero) in texts
    # the pie says the same of its slices
    out = tmp_path / "pie.svg"
    code, _, err = smem(capsys, "-w", "--breakdown", "--pie", "area", "-o", out)
    assert code == 0, err
    assert "zero, not drawn: " + ", ".join(zero) in svg_texts(out)


def test_process_bars_of_swap_show_the_processes_that_swapped():
    """21 empty rows and an empty "other" for one process in swap: now its bar alone, and the 23
    processes (the "other" bar's 3 with them) counted in the note, which has too many to name."""
    table, options, snapshot = chart_table(bar="name", columns=("name", "swap"))
    swap = [row[1] for row in table.values]
    bars = bar_data(table, options, snapshot)
    drawn = bars.values[0]
    assert drawn and all(drawn) and len(drawn) == sum(1 for v in swap if v)
    zero = sum(1 for v in swap if v == 0)
    assert zero > ZERO_NAMED
    assert f"zero, not drawn: {zero} processes" in bars.notes
    assert not any(n.startswith("other: ") for n in bars.notes)  # (its bar is one of those left out)
    # sorted by swap, the pie names them the same way
    table, options, snapshot = chart_table(pie="name", columns=("name", "swap"), sort="swap")
    assert f"zero, not drawn: {zero} processes" in pie_data(table, options, snapshot).notes


def test_bars_of_nothing_but_zero_are_nothing_to_chart(capsys, tmp_path):
    out = tmp_path / "bar.png"
    code, _, err = smem(capsys, "-P", "smem-shm", "-c", "name swap", "--bar", "name", "-o", out)
    assert code == 1 and err == "smem: nothing to chart: the processes' Swap is 0 for all of them\n"
    assert not out.exists()


def test_a_column_at_zero_on_every_row_is_no_legend_entry():
    """A machine without swap: --bar's Swap column is 0 for every process, a legend entry with no
    bar beside USS, PSS and RSS.  It is left out and named once."""
    table, options, snapshot = chart_table(bar="pid", source=FIXTURES / "captures" / "armv7-noswap.tar.gz")
    data = bar_data(table, options, snapshot)
    assert data.series == ("USS", "PSS", "RSS") and len(data.values) == 3
    assert "Swap: 0 on every row, not drawn" in data.notes


def test_an_other_bar_at_zero_is_named_by_the_rows_it_holds(capsys, tmp_path):
    """A process's mappings as bars: [vdso], [vsyscall], [vvar] and [vvar_vclock] (PSS 0) fold into
    one "other" bar, which is 0 and so left out; the note said "zero, not drawn: other (4
    mappings)", which names none of them.  It names the four."""
    out = tmp_path / "bar.svg"
    code, _, err = smem(capsys, "-m", "-P", "^smem-long", "-M", r"^\[(v|heap)", "--bar", "map", "-o", out)
    assert code == 0, err
    (note,) = [t for t in svg_texts(out) if t.startswith("zero, not drawn: ")]
    assert sorted(note.removeprefix("zero, not drawn: ").split(", ")) == ["[vdso]", "[vsyscall]", "[vvar]",
                                                                            "[vvar_vclock]"], note


@pytest.mark.parametrize("chart", [("--pie", "name"), ("--bar", "name")])
def test_nothing_to_chart_names_a_view_whose_title_is_no_plural(capsys, tmp_path, chart):
    """--shm's tmpfs mounts with nothing in RAM: the line said "the shared memory' RSS", a plural's
    apostrophe on a title that is none; "the processes' Swap" keeps its own."""
    import tarfile
    tree = tmp_path / "capture"
    with tarfile.open(FIXTURES / "captures" / "faithful.tar.gz") as archive:
        archive.extractall(tree, filter="data")
    (tree / "smem").mkdir(exist_ok=True)
    (tree / "smem" / "shmem").write_text("# smem shmem inventory 1\n"
                                         "mount 0:23 tmpfs 1048576 0 0 0 /dev/shm\n"
                                         "mount 0:27 tmpfs 2097152 0 0 0 /run/user/0\n")
    out = tmp_path / "chart.png"
    code, _, err = smem(capsys, "--shm", "-c", "name rss", *chart, "-o", out, source=tree)
    assert code == 1 and err.splitlines()[-1] == "smem: nothing to chart: the shared memory's RSS is 0 for all of them"
    assert not out.exists()
