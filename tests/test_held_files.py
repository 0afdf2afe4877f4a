"""smem.sources.held_files: a moving process's smaps_rollup and statm read through descriptors
kept open, on real processes: what a held descriptor gives after the process execs or exits,
the budget, and where the descriptors are numbered."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from smem.parsers.stat import parse_stat
from smem.sources.held_files import HeldFiles, MovingFiles
from smem.sources.held_stats import FLOOR, held_stats
from smem.sources.live import LiveSource

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/smaps_rollup"), reason="no smaps_rollup")

WAIT_THEN_EXEC = ("import os, sys; b = bytearray(32 << 20); print(flush=True); sys.stdin.readline(); "
                  "os.execvp('sleep', ['sleep', '60'])")


@pytest.fixture
def execs():
    """A Python holding 32 MiB that execs sleep when told (a line on its stdin)."""
    proc = subprocess.Popen([sys.executable, "-c", WAIT_THEN_EXEC], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        proc.stdout.readline()  # (its 32 MiB made, and it waits: its memory no longer moves)
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _by_path(pid, name):
    with open(f"/proc/{pid}/{name}", "rb") as f:
        return f.read()


def _stat(pid):
    return parse_stat(_by_path(pid, "stat"))


def _start(pid):
    """Its stack start, once its exec has set it (0 before: see HeldFiles.read)."""
    for _ in range(500):
        start = _stat(pid).start_stack
        if start:
            return start
        time.sleep(0.01)
    pytest.fail(f"{pid} has no stack start")


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
        first = held.read(execs.pid, hold=True, start=_start(execs.pid))
        assert _rss_kib(first) > 32 * 1024
        assert [fd for fd in _held_descriptors(execs.pid, "smaps_rollup") if fd >= FLOOR]
        again = held.read(execs.pid, hold=True, start=_start(execs.pid))  # (read anew at offset 0: the same process, now)
        assert abs(_rss_kib(again) - _rss_kib(_by_path(execs.pid, "smaps_rollup"))) < 1024
    finally:
        held.close()
    assert not _held_descriptors(execs.pid, "smaps_rollup")


def test_after_an_exec_the_held_rollup_gives_way_to_the_new_programs(execs):
    """The rollup's descriptor is bound to the address space it was opened on: after an exec it
    reads nothing of the old one (ESRCH), and the caller's read by path gives sleep's."""
    files = MovingFiles()
    source = LiveSource()
    files.collection("/proc", 100, {execs.pid})
    try:
        stat = _stat(execs.pid)
        before = files.read(source, execs.pid, "smaps_rollup", stat)
        assert _rss_kib(before) > 32 * 1024 and _held_descriptors(execs.pid, "smaps_rollup")
        _exec_sleep(execs)
        # (read as if the stat said nothing of the exec: the kernel refuses it once the old address
        # space is let go, which another reader of it, as a test running smem beside this one, may
        # hold for a moment: the old program's figures, never the new one's)
        held = files._held["smaps_rollup"]
        for _ in range(200):
            old = held.read(execs.pid, hold=True, start=stat.start_stack)
            if old is None:
                break
            assert _rss_kib(old) > 32 * 1024
            time.sleep(0.01)
        assert old is None
        after = files.read(source, execs.pid, "smaps_rollup", _stat(execs.pid))
        assert _rss_kib(after) < 16 * 1024  # sleep's, not the Python's 32 MiB
        # (a statm's is bound to the process: sleep's too)
        statm = files.read(source, execs.pid, "statm", _stat(execs.pid))
        assert int(statm.split()[1]) * os.sysconf("SC_PAGE_SIZE") < 16 << 20
    finally:
        files.close()
        source.close()


def test_an_exited_process_is_read_by_path_and_its_descriptor_closed():
    proc = subprocess.Popen(["sleep", "60"])
    held = HeldFiles("/proc", "statm")
    held.budget = 4
    try:
        assert held.read(proc.pid, hold=True, start=_start(proc.pid))
        assert len(held) == 1
        start = _start(proc.pid)
        proc.kill()
        proc.wait()
        assert held.read(proc.pid, hold=True, start=start) is None
        assert len(held) == 0
    finally:
        held.close()


def test_the_budget_bounds_what_is_held_and_a_process_no_longer_moving_is_let_go():
    procs = [subprocess.Popen(["sleep", "60"]) for _ in range(3)]
    held = HeldFiles("/proc", "statm")
    held.budget = 2
    try:
        assert all(held.read(p.pid, hold=True, start=_start(p.pid)) for p in procs[:2])
        assert held.read(procs[2].pid, hold=True, start=_start(procs[2].pid)) is None  # (over the budget: read by path)
        assert len(held) == 2
        assert held.read(procs[0].pid, hold=False, start=_start(procs[0].pid))  # (read through it a last time, then closed)
        assert len(held) == 1 and not _held_descriptors(procs[0].pid, "statm")
    finally:
        held.close()
        for p in procs:
            p.kill()
            p.wait()


#: A program whose child shares its address space as a process of its own (clone with CLONE_VM,
#: no CLONE_THREAD, as vfork and posix_spawn do) and execs the program again on SIGUSR1; the
#: parent holds 64 MiB, and 8 MiB more for each byte on its stdin.
CLONED = r"""
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static char *self;
static void again(int sig) { char *argv[] = {self, "child", NULL}; (void)sig; execv(self, argv); _exit(2); }
static int child(void *arg) { (void)arg; for (;;) pause(); }
static void touch(size_t n) { char *b = malloc(n); for (size_t i = 0; i < n; i += 4096) ((volatile char *)b)[i] = 1; }
int main(int argc, char **argv) {
    static char stack[1 << 16];
    char c;
    if (argc > 1) for (;;) pause();
    self = argv[0];
    signal(SIGUSR1, again);  /* (before the clone: the child is told as soon as its pid is out) */
    touch(64 << 20);
    printf("%d\n", clone(child, stack + sizeof stack, CLONE_VM | SIGCHLD, NULL));
    fflush(stdout);
    while (read(0, &c, 1) == 1) { touch(8 << 20); printf("grown\n"); fflush(stdout); }
    return 0;
}
"""


@pytest.fixture
def cloned(tmp_path):
    """(the parent, the pid of its child that shares its address space, a function that has the
    parent grow, one that has the child exec the program again)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    (tmp_path / "cloned.c").write_text(CLONED)
    program = tmp_path / "cloned"
    subprocess.run([compiler, "-O2", "-o", str(program), str(tmp_path / "cloned.c")], check=True)
    parent = subprocess.Popen([str(program)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    child = int(parent.stdout.readline())

    def grow():
        parent.stdin.write(b"g")
        parent.stdin.flush()
        assert parent.stdout.readline() == b"grown\n"

    def execs():
        os.kill(child, signal.SIGUSR1)
        for _ in range(500):
            if _by_path(child, "cmdline").endswith(b"\0child\0"):
                return
            time.sleep(0.01)
        pytest.fail("the child did not exec")

    try:
        yield parent, child, grow, execs
    finally:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass
        parent.kill()
        parent.wait()


@pytest.mark.uses("cpu")
def test_a_cloned_child_that_execs_is_read_anew_not_through_the_address_space_it_left(cloned):
    """The child's held rollup is of the address space it shared, which its parent keeps after the
    child's exec: the kernel reads it on (no ESRCH), so the child's new stack start closes it."""
    parent, child, _, execs = cloned
    files, source = MovingFiles(), LiveSource()
    files.collection("/proc", 100, {child})
    try:
        before = files.read(source, child, "smaps_rollup", _stat(child))
        assert _rss_kib(before) > 64 * 1024 and _held_descriptors(child, "smaps_rollup")  # (its parent's 64 MiB)
        execs()
        assert _rss_kib(files.read(source, child, "smaps_rollup", _stat(child))) < 16 * 1024
    finally:
        files.close()
        source.close()


def _whole_machine(refresher):
    """The Refresher's PSS by pid, of every process (the stats and the files held: no --pid)."""
    from smem.app import plan, read_snapshot
    from smem.options import Query, ReportRequest, TableOptions
    request = ReportRequest(query=Query(jobs=1), table=TableOptions(columns=("pid", "pss")))
    snapshot = read_snapshot(request, plan(request), load=refresher.load)[0]
    return {p.pid: p.totals.get("Pss") for p in snapshot.processes}


def _held_of(pids):
    """This process's descriptors held on a smaps_rollup or statm of ``pids``."""
    return [fd for pid in pids for name in MovingFiles.NAMES for fd in _held_descriptors(pid, name)]


@pytest.mark.uses("cpu")
@pytest.mark.skipif(held_stats("/proc") is None, reason="the stats are not held (no C step): nor are the files")
def test_the_refresher_holds_what_moves_lets_go_of_all_on_a_whole_read_and_of_what_exits(cloned):
    """Through the Refresher, of the whole machine: the child that moves is read through its held
    rollup, after its exec through its own (not its parent's 64 MiB); a whole read closes every
    descriptor held, and those of processes that exit are closed at the next collection."""
    from smem.incremental import Refresher
    from smem.selection import Selection
    parent, child, grow, execs = cloned
    refresher = Refresher(3600.0, trust_after=10 ** 6)  # (no figure from counters: the rollups walked)
    _whole_machine(refresher)
    grow()  # (the child's stat moves with the address space it shares)
    assert _whole_machine(refresher)[child] > 64 * 1024 and _held_descriptors(child, "smaps_rollup")
    execs()
    assert _whole_machine(refresher)[child] < 16 * 1024
    assert _held_of([child])
    refresher.load(LiveSource(), Selection(), with_processes=False)  # (a whole read)
    assert not any(_points_at_a_moving_file(fd) for fd in _over_floor())
    _whole_machine(refresher)
    grow()
    _whole_machine(refresher)
    assert _held_of([parent.pid])
    os.kill(child, signal.SIGKILL)
    parent.kill()
    parent.wait()
    for _ in range(500):  # (the child, reparented, is reaped by another)
        if not os.path.exists(f"/proc/{child}"):
            break
        time.sleep(0.01)
    _whole_machine(refresher)
    assert not _held_of([parent.pid, child])


def _over_floor():
    return [fd for fd in map(int, os.listdir("/proc/self/fd")) if fd >= FLOOR]


def _points_at_a_moving_file(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}").endswith(("/smaps_rollup", "/statm"))
    except OSError:
        return False


#: Run as nobody: a process of nobody's makes itself undumpable (as ssh-agent does) while its
#: rollup is held; a rollup it may no longer open is not read through the descriptor either.
UNDUMPABLE = """
import subprocess, sys, time
from smem.parsers.stat import parse_stat
from smem.sources.held_files import HeldFiles
child = subprocess.Popen([sys.executable, '-c', 'import ctypes, sys; sys.stdin.readline(); '
                          'ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); print(flush=True); sys.stdin.readline()'],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def start():
    with open(f'/proc/{child.pid}/stat', 'rb') as f:
        return parse_stat(f.read()).start_stack
held = HeldFiles('/proc', 'smaps_rollup')
held.budget = 4
try:
    while not start():  # (its exec under way)
        time.sleep(0.01)
    assert held.read(child.pid, True, start()) and len(held) == 1, 'not held'
    child.stdin.write(b'\\n'); child.stdin.flush(); child.stdout.readline()  # (PR_SET_DUMPABLE 0 done)
    try:
        open(f'/proc/{child.pid}/smaps_rollup', 'rb').read()
        sys.exit('the rollup of an undumpable process opened')
    except PermissionError:
        pass
    assert held.read(child.pid, True, start()) is None and len(held) == 0, 'read through the held descriptor'
finally:
    held.close()
    child.kill()
print('ok')
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="runs as nobody: needs root and setpriv")
def test_a_process_that_becomes_undumpable_is_not_read_through_a_descriptor_held_before():
    """Its stat says no stack start to a reader it no longer lets look (PR_SET_DUMPABLE): what
    ptrace access the rollup's open checked is checked again through the stat."""
    tree = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                          "/usr/bin/python3", "-c", UNDUMPABLE], capture_output=True, text=True, timeout=60,
                         cwd="/", env={"PYTHONPATH": tree, "PATH": os.environ.get("PATH", "")})
    assert out.stdout == "ok\n", out.stderr


def test_what_is_held_over_a_budget_that_shrank_is_closed_what_does_not_move_first():
    """Processes came (a million, here): the held stats' room leaves the files none, and those
    held are closed at the collection, not when their processes exit."""
    procs = [subprocess.Popen(["sleep", "60"]) for _ in range(2)]
    files = MovingFiles()
    try:
        files.collection("/proc", 100, {p.pid for p in procs})
        for p in procs:
            _start(p.pid)  # (its exec done)
            assert files.read(None, p.pid, "statm", _stat(p.pid))
        assert len(files._held["statm"]) == 2
        held = files._held["statm"]
        files.collection("/proc", 100, {procs[0].pid})
        held.budget = 1  # (as a shrunk room would leave it)
        held.trim({procs[0].pid})
        assert list(held._fds) == [procs[0].pid]  # (the one that moves kept)
        files.collection("/proc", 10 ** 6, {procs[0].pid})
        assert len(held) == 0 and not _held_of([p.pid for p in procs])
    finally:
        files.close()
        for p in procs:
            p.kill()
            p.wait()
