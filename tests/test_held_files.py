"""smem.sources.held_files: a moving process's smaps_rollup and statm read through descriptors
kept open, on real processes: what a held descriptor gives after the process execs or exits,
the budget, and where the descriptors are numbered."""

import os
import subprocess
import sys
import time

import pytest

from smem.sources.held_files import HeldFiles, MovingFiles
from smem.sources.held_stats import FLOOR
from smem.sources.live import LiveSource

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/smaps_rollup"), reason="no smaps_rollup")

WAIT_THEN_EXEC = "import os, sys; b = bytearray(32 << 20); sys.stdin.readline(); os.execvp('sleep', ['sleep', '60'])"


@pytest.fixture
def execs():
    """A Python holding 32 MiB that execs sleep when told (a line on its stdin)."""
    proc = subprocess.Popen([sys.executable, "-c", WAIT_THEN_EXEC], stdin=subprocess.PIPE)
    try:
        for _ in range(200):  # (its 32 MiB made)
            if _rss_kib(_by_path(proc.pid, "smaps_rollup")) > 32 * 1024:
                break
            time.sleep(0.02)
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _by_path(pid, name):
    with open(f"/proc/{pid}/{name}", "rb") as f:
        return f.read()


def _rss_kib(rollup):
    return next(int(line.split()[1]) for line in rollup.splitlines() if line.startswith(b"Rss:"))


def _held_descriptors(pid, name):
    """This process's descriptors open on /proc/PID/name."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == f"/proc/{pid}/{name}":
                found.append(int(fd))
        except OSError:
            pass
    return found


def _exec_sleep(proc):
    proc.stdin.write(b"\n")
    proc.stdin.flush()
    for _ in range(500):
        with open(f"/proc/{proc.pid}/comm", "rb") as f:
            if f.read().strip() == b"sleep":
                return
        time.sleep(0.01)
    pytest.fail("the child did not exec sleep")


def test_a_held_rollup_is_the_process_now_and_numbered_over_the_floor(execs):
    held = HeldFiles("/proc", "smaps_rollup")
    held.budget = 4
    try:
        first = held.read(execs.pid, hold=True)
        assert _rss_kib(first) > 32 * 1024
        assert [fd for fd in _held_descriptors(execs.pid, "smaps_rollup") if fd >= FLOOR]
        again = held.read(execs.pid, hold=True)  # (read anew at offset 0: the same process, now)
        assert abs(_rss_kib(again) - _rss_kib(_by_path(execs.pid, "smaps_rollup"))) < 1024
    finally:
        held.close()
    assert not _held_descriptors(execs.pid, "smaps_rollup")


def test_after_an_exec_the_held_rollup_gives_way_to_the_new_programs(execs):
    """The rollup's descriptor is bound to the address space it was opened on: after an exec it
    reads nothing of the old one (ESRCH), and the caller's read by path gives sleep's."""
    files = MovingFiles()
    source = LiveSource("/proc")
    files.collection("/proc", 100, {execs.pid})
    try:
        before = files.read(source, execs.pid, "smaps_rollup")
        assert _rss_kib(before) > 32 * 1024 and _held_descriptors(execs.pid, "smaps_rollup")
        _exec_sleep(execs)
        assert files._held["smaps_rollup"].read(execs.pid, hold=True) is None
        after = files.read(source, execs.pid, "smaps_rollup")
        assert _rss_kib(after) < 16 * 1024  # sleep's, not the Python's 32 MiB
        statm = files.read(source, execs.pid, "statm")  # (a statm's is bound to the process: sleep's too)
        assert int(statm.split()[1]) * os.sysconf("SC_PAGE_SIZE") < 16 << 20
    finally:
        files.close()
        source.close()


def test_an_exited_process_is_read_by_path_and_its_descriptor_closed():
    proc = subprocess.Popen(["sleep", "60"])
    held = HeldFiles("/proc", "statm")
    held.budget = 4
    try:
        assert held.read(proc.pid, hold=True)
        assert len(held) == 1
        proc.kill()
        proc.wait()
        assert held.read(proc.pid, hold=True) is None
        assert len(held) == 0
    finally:
        held.close()


def test_the_budget_bounds_what_is_held_and_a_process_no_longer_moving_is_let_go():
    procs = [subprocess.Popen(["sleep", "60"]) for _ in range(3)]
    held = HeldFiles("/proc", "statm")
    held.budget = 2
    try:
        assert all(held.read(p.pid, hold=True) for p in procs[:2])
        assert held.read(procs[2].pid, hold=True) is None  # (over the budget: read by path)
        assert len(held) == 2
        assert held.read(procs[0].pid, hold=False)  # (read through it a last time, then closed)
        assert len(held) == 1 and not _held_descriptors(procs[0].pid, "statm")
    finally:
        held.close()
        for p in procs:
            p.kill()
            p.wait()
