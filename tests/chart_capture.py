"""The capture the chart tests draw from, and how they run it: the command line in this process
(so matplotlib is imported once), the classic report their expected labels come from, and a chart's
table built as the command line builds it.  Shared by test_charts.py (the files drawn) and
test_chart_data.py (the figures behind them)."""

import xml.etree.ElementTree as ET

import pytest

from conftest import FIXTURES
from smem.app import plan, read_snapshot
from smem.chart_data import FOLD_EACH, FOLD_TOGETHER
from smem.cli import main
from smem.options import ChartOptions, Query, ReportRequest, SystemOptions, TableOptions
from smem.report import make_table
from smem.views import VIEWS

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


def chart_table(view="process", pie=None, bar=None, ram_kib=None, source=CAPTURE, **options):
    """(Table, TableOptions, Snapshot) of a chart of ``source``, read and built as the command line does."""
    request = ReportRequest(Query(view=view, source=str(source)), TableOptions(**options),
                            ChartOptions("pie" if pie else "bar", pie or bar),
                            SystemOptions(realmem_bytes=ram_kib * 1024 if ram_kib else None))
    snapshot, _ = read_snapshot(request, plan(request))
    return make_table([snapshot], VIEWS[view], request.table, request.system, request.chart), request.table, snapshot
