"""A comparison's columns in its report's order: smem diff and watch mode put a breakdown's Source
(and --shm's Processes) last, where the report has them, with the changes beside the figures, not
Source second; and Source, last, wraps under itself on a terminal as in the report."""

import json

import pytest

from conftest import FIXTURES, run_smem

OLD = FIXTURES / "captures" / "faithful.tar.gz"
NEW = FIXTURES / "captures" / "quirks.tar.gz"


def _header(proc):
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode().splitlines()[0].split()


@pytest.mark.parametrize("view, measure", [(["-w", "--breakdown"], "Used"), (["--shm"], "RSS")])
def test_diff_keeps_the_reports_order(view, measure):
    """smem diff -w --breakdown read "Area Source Status OldUsed ...": the Source of each row (up to
    62 characters) between its name and its figures; --shm's Processes likewise."""
    report = _header(run_smem("-S", NEW, *view))
    compared = _header(run_smem("diff", OLD, NEW, *view))
    assert compared[0] == report[0] and compared[-1] == report[-1], (report, compared)
    # the measure's two sides and every change together, after the marks, before what the report ends with
    changes = [f"d{h}" for h in report if f"d{h}" in compared]
    assert len(changes) > 1
    assert compared[compared.index("Status"):] == ["Status", f"Old{measure}", measure, *changes, report[-1]]


@pytest.mark.uses("cpu")
def test_watch_keeps_the_reports_order():
    """-w --breakdown --interval read "... Saved Source dUsed Status": Source unwrapped in the middle."""
    report = _header(run_smem("-w", "--breakdown"))
    lines = run_smem("-w", "--breakdown", "--interval", "0.05", "--count", "1").stdout.decode().splitlines()
    watched = next(line for line in lines if line.startswith("Area")).split()
    assert watched == report[:-1] + ["dUsed", "Status", "Source"]


def _sources(lines, indent):
    rows = []
    for line in lines[1:]:
        if line.startswith(" " * indent):
            rows[-1] += " " + line[indent:]
        else:
            rows.append(line[indent:])
    return rows


@pytest.mark.uses("cpu")
def test_diffs_source_wraps_under_itself():
    """The comparison's Source, last now, wraps at words on a terminal too narrow for its lines
    (COLUMNS, as in the report); no word is lost, and a pipe still gets one line a row."""
    document = json.loads(run_smem("diff", OLD, NEW, "-w", "--breakdown", "-F", "json").stdout)
    sources = [row["source"] for row in document["rows"]]
    proc = run_smem("diff", OLD, NEW, "-w", "--breakdown", env={"COLUMNS": "130"})
    lines = [line for line in proc.stdout.decode().splitlines() if line]
    indent = lines[0].index("Source")
    assert max(map(len, lines)) <= 130 and len(lines) > len(sources) + 1
    assert _sources(lines, indent) == sources
    piped = [line for line in run_smem("diff", OLD, NEW, "-w", "--breakdown").stdout.decode().splitlines() if line]
    assert len(piped) == len(sources) + 1
