"""The dashed line over a table's totals is as wide as the table drawn: in the views smem 1.5
lacked (their last column not padded) it counted the last column's own width, not what it held,
so ``smem -S x.tgz --shm -t | cat`` of a capture no process maps shared memory in drew 117 dashes
under a header of 96.  smem 1.5's views draw it as wide as their header (tests/test_goldens.py)."""

import shutil
import subprocess

import pytest

from conftest import FIXTURES, TESTS, run_smem

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"
SCRIPT = TESTS.parent / "scripts" / "smemcap.sh"


def _table(capture, *args):
    proc = run_smem("-S", capture, *args, "-t")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    dashes = next(i for i, line in enumerate(lines) if line and set(line) == {"-"})
    return lines[:dashes], lines[dashes], lines[dashes + 1]


def _widest(lines):
    return max(map(len, lines))


def test_shm_without_rows_draws_its_totals_line_as_wide_as_its_header():
    (header, *rows), dashes, total = _table(CAPTURE, "--shm")
    assert rows == [] and header.endswith("Processes")
    assert len(dashes) == len(header) == 96


@pytest.mark.parametrize("args", [["-w", "--breakdown"], ["--cgroup"], ["-g"], ["-w", "-c", "area used source"]])
def test_the_totals_line_is_as_wide_as_the_widest_line_drawn(args):
    table, dashes, total = _table(CAPTURE, *args)
    assert len(dashes) == _widest([*table, total]), (args, len(dashes), _widest([*table, total]))


@pytest.mark.skipif(shutil.which("dash") is None, reason="no dash")
def test_shm_of_a_pid_namespace_capture_whose_objects_nobody_there_maps(pid_namespace, tmp_path):
    """The new user's capture: smemcap.sh in a PID namespace of its own, where the machine's
    /dev/shm files and segments are seen and no process there maps them (rows without Processes)."""
    if not pid_namespace.isolated:
        pytest.skip("no PID namespace here (needs root, unshare and nsenter)")
    capture = tmp_path / "x.tgz"
    with open(capture, "wb") as out:
        subprocess.run(pid_namespace.argv(["dash", SCRIPT]), stdout=out, check=True, timeout=300)
    table, dashes, total = _table(capture, "--shm")
    assert len(dashes) == _widest([*table, total]) == len(table[0])
