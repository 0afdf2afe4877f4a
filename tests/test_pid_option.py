"""--pid PID[,PID...] (issue 13, as ps_mem has it): only those processes, in every view."""

import subprocess
import sys

import pytest

from conftest import run_smem


@pytest.fixture
def children():
    procs = [subprocess.Popen([sys.executable, "-c", "import sys; print('ready', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(3)]
    for p in procs:
        assert p.stdout.readline() == b"ready\n"
    yield [p.pid for p in procs]
    for p in procs:
        p.stdin.close()
        p.wait(30)


def _pids(proc):
    assert proc.returncode == 0, proc.stderr
    return sorted(int(line.split()[0]) for line in proc.stdout.decode().splitlines())


def test_only_the_named_processes(children):
    a, b, c = children
    assert _pids(run_smem("--pid", str(a), "-c", "pid", "-H")) == [a]
    assert _pids(run_smem("--pid", f"{a},{c}", "-c", "pid", "-H")) == sorted([a, c])
    # in the other views too: the user view counts only them, the mapping view maps only theirs
    (line,) = run_smem("--pid", f"{a},{b}", "-u", "-c", "count", "-H").stdout.decode().splitlines()
    assert int(line) == 2
    mine = run_smem("--pid", str(a), "-m", "-c", "pids", "-H").stdout.decode().split()
    assert mine and set(mine) == {"1"}
    # with -P, both must select (none selected: an error, below)
    assert run_smem("--pid", f"{a},{b}", "-P", "^no-such-name$", "-c", "pid", "-H").stdout == b""


@pytest.mark.parametrize("value", ["", "x", "0", "-5", "12,,x", "١٢"])
def test_a_pid_that_is_none_is_a_usage_error(value):
    proc = run_smem("--pid", value)
    assert proc.returncode == 2 and len(proc.stderr.decode().splitlines()) == 1
    assert "--pid takes process ids" in proc.stderr.decode()


@pytest.mark.uses("cpu")
def test_pids_not_found_are_named(children):
    """A --pid that matches nothing said on stderr: a warning beside those found, an error (exit 1)
    when none is."""
    a, b, c = children
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(30)  # its pid is free now (and not reused this soon)
    some = run_smem("--pid", f"{a},{gone.pid},2", "-c", "pid", "-H")
    assert _pids(some) == [a]
    assert some.stderr.decode().splitlines() == [
        f"smem: warning: --pid {gone.pid},2: not found, or a kernel thread or zombie (which has no memory of its own)"]
    none = run_smem("--pid", str(gone.pid), "-c", "pid")
    assert none.returncode == 1 and none.stdout == b""
    assert none.stderr.decode() == (f"smem: --pid {gone.pid}: not found, or a kernel thread or zombie "
                                    "(which has no memory of its own)\n")
    filtered = run_smem("--pid", str(a), "-P", "^no-such-name$")
    assert filtered.returncode == 1 and filtered.stderr.decode().endswith(", or left out by -P/-U\n")


@pytest.mark.uses("cpu")
def test_watching_pids_not_found_is_the_same_error(children):
    """Watch mode says so at its first frame as one report does, rather than drawing empty frames."""
    a = children[0]
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(30)
    none = run_smem("--pid", str(gone.pid), "-c", "pid", "--interval", "0.1", "--count", "2")
    assert none.returncode == 1 and none.stdout == b""
    assert none.stderr.decode() == (f"smem: --pid {gone.pid}: not found, or a kernel thread or zombie "
                                    "(which has no memory of its own)\n")
    some = run_smem("--pid", f"{a},{gone.pid}", "-c", "pid", "-H", "--interval", "0.1", "--count", "1")
    assert some.returncode == 0 and [int(l.split()[0]) for l in some.stdout.decode().splitlines()
                                     if not l.startswith("#")] == [a]
    assert some.stderr.decode().splitlines() == [
        f"smem: warning: --pid {gone.pid}: not found, or a kernel thread or zombie (which has no memory of its own)"]
