"""The chart data (smem.chart_data): which rows become slices or bars, what folds into "other",
when "unused" fills the pie, and the labels, from the recorded capture through the functions the
command line calls, so the figures are checked as numbers rather than read back from a drawing.
The data is made without matplotlib, so it is checked where the charts extra is not installed
(the two tests that also draw the chart skip there).
"""

import dataclasses
import shutil

import pytest

from chart_capture import VIEW_ARGS, chart_table, classic, expected_slices, smem
from conftest import FIXTURES
from smem.chart_data import FOLD_EACH, FOLD_TOGETHER, bar_data, pie_data


@pytest.mark.uses("cpu")
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
    assert list(pie.values[1:-1]) == sorted(pss, reverse=True)
    table, options, snapshot = chart_table(pie="name", ram_kib=ram, reverse=True)
    assert list(pie_data(table, options, snapshot).values[1:-1]) == sorted(pss)


@pytest.mark.parametrize("view,sort,unused", [
    ("process", "uss", True), ("process", "rss", False), ("process", "vss", False),
    ("process", "swap", False), ("user", "pss", True), ("mapping", "pss", False), ("cgroup", "pss", True),
])
def test_unused_only_for_fields_that_count_each_page_once(view, sort, unused):
    label = VIEW_ARGS[view][1] if view in VIEW_ARGS else view
    table, options, snapshot = chart_table(view, pie=label, sort=sort, ram_kib=10 ** 9)
    pie = pie_data(table, options, snapshot)
    # (so much RAM that unused is not drawn but said in a note: see the lightly loaded test)
    assert ("unused" in pie.labels or any(n.startswith("RAM not in processes") for n in pie.notes)) == unused
    if not unused:
        # The pie is the rows: nothing is added, nothing lost in the folding.
        assert sum(pie.values) == sum(v for v in table.sort_values if v)


def test_system_pie_is_the_areas_and_adds_up_to_ram():
    table, options, snapshot = chart_table("system", pie="area")
    pie = pie_data(table, options, snapshot)
    used = {row[-1]: row[table.columns.index(table.view.columns["used"])] for row in table.values}
    assert dict(zip(pie.labels, pie.values)) == {k: v for k, v in used.items() if v > 0}
    assert sum(pie.values) == sum(v for v in used.values() if v > 0)


@pytest.mark.uses("cpu")
def test_a_slice_below_zero_is_named_as_left_out(tmp_path):
    """A breakdown row below zero (meminfo read before processes that then grew) is no slice: the
    pie's notes name it and its amount, beside the table's note that says why."""
    import tarfile
    from chart_capture import CAPTURE
    from smem.units import human
    with tarfile.open(CAPTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    meminfo = tmp_path / "meminfo"
    meminfo.write_bytes(b"\n".join(b"AnonPages:             0 kB" if line.startswith(b"AnonPages:") else line
                                   for line in meminfo.read_bytes().split(b"\n")))
    table, options, snapshot = chart_table("breakdown", pie="area", source=tmp_path)
    pie = pie_data(table, options, snapshot)
    used = table.view.columns["used"]
    below = {row.area: used.getter(row) for row in table.rows if (used.getter(row) or 0) < 0}
    assert below and not set(below) & set(pie.labels)
    assert [n for n in pie.notes if n.startswith("below zero, not drawn: ")] == [
        "below zero, not drawn: " + ", ".join(f"{area} (-{human(-kib)})" for area, kib in below.items())], pie.notes


@pytest.mark.uses("charts")
def test_pie_with_a_name_sort_shows_pss_in_name_order(capsys, tmp_path):
    pytest.importorskip("matplotlib", reason="smem[charts]: matplotlib not installed")  # (it draws the chart too)
    table, options, snapshot = chart_table(pie="name", sort="name", columns=("pid", "name"))
    pie = pie_data(table, options, snapshot)
    pss = {int(pid): int(value) for pid, value in classic(capsys, "-c", "pid pss")}
    pids = [row[0] for row in table.values]
    assert any("slices show PSS" in n for n in pie.notes)
    assert "unused" not in pie.labels and any(n.startswith("RAM not in processes") for n in pie.notes)  # 99% of RAM
    assert sum(pss[p] for p in pids) == sum(pie.values)
    code, _, err = smem(capsys, "-s", "name", "-c", "pid name", "--pie", "name", "-o", tmp_path / "p.svg")
    assert code == 0, err


def test_the_drawing_reads_values_no_one_can_change():
    table, options, snapshot = chart_table(pie="name")
    for data in (pie_data(table, options, snapshot), bar_data(table, options, snapshot)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            data.notes = []
        sequences = [getattr(data, f.name) for f in dataclasses.fields(data) if f.name not in ("title", "subtitle",
                                                                                            "axis_label")]
        for sequence in sequences + [v for v in getattr(data, "values", ()) if not isinstance(v, (int, float))]:
            assert sequence is None or isinstance(sequence, tuple), sequence  # (no list to append to)


def test_bar_order_and_columns_follow_s_r_c():
    table, options, snapshot = chart_table(bar="name", columns=("name", "rss", "uss", "maps"), sort="rss")
    bars = bar_data(table, options, snapshot)
    assert bars.series == ("RSS", "USS")   # memory columns only, in -c order
    assert bars.labels[-1].startswith("other (")  # the smallest, last
    assert list(bars.values[0][:-1]) == sorted(bars.values[0][:-1], reverse=True)
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


def test_a_lightly_loaded_machine_gets_a_readable_pie():
    """99% unused would leave every process in "other": the pie is then the used part, and says so."""
    table, options, snapshot = chart_table(pie="name")
    used = sum(v for v in table.sort_values if v)
    table, options, snapshot = chart_table(pie="name", ram_kib=100 * used)
    pie = pie_data(table, options, snapshot)
    assert "unused" not in pie.labels and sum(pie.values) == used
    # (what is left out is named as what it is: not "unused", which free(1) counts apart)
    assert any(n.startswith("RAM not in processes ") and "free memory, page cache and the kernel's) not drawn"
               in n for n in pie.notes), pie.notes
    biggest = max(table.sort_values)
    assert biggest in pie.values and len([k for k in pie.kinds if k == "row"]) >= 3
    from smem.units import human
    for text, value in zip(pie.legend, pie.values):  # amounts in human units, not KiB counts
        assert text.endswith("  " + human(value)) and "KiB" not in text


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


@pytest.mark.uses("charts")
def test_bars_fold_small_rows_and_keep_a_sensible_height(capsys, tmp_path):
    """-m --bar map drew every mapping, dozens of them 0, thousands of pixels tall: the rows a pie
    would fold, and those beyond the largest MAX_BARS, are one "other" bar holding their sums."""
    pytest.importorskip("matplotlib", reason="smem[charts]: matplotlib not installed")  # (it draws the chart too)
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


def test_two_sharers_of_one_name_are_told_apart_by_pid():
    """--shared-with's chart: two processes called bash are "bash (PID)", as the process view's are."""
    from types import SimpleNamespace

    from smem.chart_data import _labels
    from smem.views import VIEWS
    from smem.views.sharing import HolderRow
    rows = [HolderRow(SimpleNamespace(pid=pid), "root", 100.0) for pid in (11, 12)]
    name = VIEWS["process"].columns["name"]
    assert _labels([("bash", rows[0]), ("bash", rows[1])], name) == ["bash (11)", "bash (12)"]


def test_a_long_cgroup_label_keeps_its_end_as_the_table_does(tmp_path):
    """A chart cut a cgroup's path at its end, as a command's: every container under one slice
    (/system.slice/docker-<64 hex digits>.scope) read the same; the table keeps the end."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "cgroup2_zswap" / "capture", tree)
    parent = "/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef"
    (tree / "13337" / "cgroup").write_text(f"0::{parent}aaaa.scope\n")
    (tree / "13423" / "cgroup").write_text(f"0::{parent}bbbb.scope\n")
    for chart in ({"bar": "cgroup"}, {"pie": "cgroup"}):
        table, options, snapshot = chart_table(view="cgroup", source=tree, **chart)
        labels = (bar_data if "bar" in chart else pie_data)(table, options, snapshot).labels
        cut = sorted(label for label in labels if label.startswith("\u2026"))
        assert [label[-10:] for label in cut] == ["aaaa.scope", "bbbb.scope"], labels
        assert all(len(label) == 40 for label in cut)
