"""Watch mode's -t totals are of what is there now: a process that exited between frames is shown
(gone, its change all of it) but neither its memory nor the process itself is counted in the
totals of the figures now, as `smem diff` totals NEW's side (a group's Count totals NEW's
processes).  The changes' totals still count it: they are now minus then.

Real children that exit between frames, watched by a separate smem.
"""

import json
import os
import re
import select
import subprocess
import sys

import pytest

from conftest import TESTS, run_smem

pytestmark = pytest.mark.uses("cpu")

CHILD = "import sys; print('ready', flush=True); sys.stdin.read()"


def _child(marker):
    child = subprocess.Popen([sys.executable, "-c", CHILD, marker], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "ready\n"
    return child


def test_the_totals_line_of_the_table_counts_the_processes_there_now():
    """The table a user reads: under PID the totals line says how many processes there are now,
    under PSS what they hold."""
    marker = f"smem-watch-gone-line-{os.getpid()}"
    children = [_child(marker) for _ in range(2)]
    smem = subprocess.Popen([sys.executable, "-m", "smem", "--interval", "0.1", "-P", marker, "-t",
                             "-c", "pid pss dpss status"], stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, cwd=TESTS.parent, text=True)
    try:
        frame = _table_frame(smem.stdout)
        assert frame[-1].split()[0] == "2"
        children[0].stdin.close()
        children[0].wait()
        for _ in range(600):
            frame = _table_frame(smem.stdout)
            if any(re.search(rf"^ *{children[0].pid} .* gone *$", line) for line in frame):
                break
        gone = [line for line in frame if re.search(rf"^ *{children[0].pid} .* gone *$", line)]
        assert gone and gone[0].split()[1] == "-"
        total = frame[-1].split()
        assert total[0] == "1"  # one process there now, the gone row shown above it (was 2)
        here = [line.split() for line in frame[:-1]
                if re.match(r" *\d+ ", line) and not line.rstrip().endswith("gone")]
        assert [int(row[0]) for row in here] == [children[1].pid]
        assert int(total[1]) == int(here[0][1])  # the memory now: the process there, not the one gone
    finally:
        for proc in (smem, *children):
            if proc.poll() is None:
                if proc is not smem:
                    proc.stdin.close()
                proc.kill()
                proc.wait()


def _table_frame(stream):
    """The lines of the next frame of a table stream, up to its totals line."""
    lines = []
    while True:
        ready, _, _ = select.select([stream], [], [], 60)
        assert ready, "smem wrote no frame for 60 s"
        line = stream.readline()
        assert line, "smem ended early"
        if line.startswith("---"):
            lines.append(stream.readline())
            return lines
        lines.append(line.rstrip("\n"))


def test_diff_totals_the_processes_new_has(tmp_path):
    """smem diff -t: the PID column's total is NEW's processes, as its PSS total is NEW's memory
    and a group view's Count total NEW's processes (the same code as watch mode's)."""
    marker = f"smem-diff-gone-totals-{os.getpid()}"
    children = [_child(marker) for _ in range(2)]
    try:
        old = tmp_path / "old.tgz"
        assert run_smem("capture", "-o", old).returncode == 0
        children[0].stdin.close()
        children[0].wait()
        proc = run_smem("diff", old, "live", "-P", marker, "-t", "-F", "json", "-c", "pid status pss dpss")
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        status = {r["pid"]: r["status"] for r in doc["rows"]}
        assert status == {children[0].pid: "gone", children[1].pid: ""}
        assert doc["totals"]["processes"] == 1
    finally:
        for child in children:
            if child.poll() is None:
                child.stdin.close()
                child.kill()
                child.wait()
