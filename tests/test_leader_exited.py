"""A process whose first thread has exited while its other threads run on (ps says "Zl").

The thread group's leader, whose id is the pid, is a zombie: /proc/PID/smaps and cmdline are
empty and smaps_rollup and pagemap fail (ESRCH), while the process holds all its memory through
the threads left.  smem 1.5, ps and top show it with nothing; smem reads its address space
through a live thread (/proc/PID/task/TID/), live, under --exact and in both capture writers.
Its open files went with the leader too (/proc/PID/fd is empty): a memfd, a GPU or dma-buf fd
are looked for in a live thread's fd/ as well.  The process is a real one: Python whose main
thread calls pthread_exit after another thread filled 64 MiB and wrote 1 MiB to a memfd it holds
by its fd only (no mapping names it).
"""

import json
import os
import subprocess
import sys
import tarfile
import time

import pytest

from conftest import run_smem
from smemcap_shells import BUSYBOX, SCRIPT, script_env
from test_tcp_capture import smem_in
from test_working_set import METHODS

HELD_MIB = 64
LEADER_EXITS = f"""
import ctypes, os, sys, threading
held, ready = [], threading.Event()
def hold():
    held.append(bytearray(b"\\x01" * ({HELD_MIB} << 20)))
    memfd = os.memfd_create(sys.argv[1])
    os.write(memfd, bytes(1 << 20))
    held.append(memfd)
    ready.set()
    sys.stdin.read()
    os._exit(0)
threading.Thread(target=hold).start()
ready.wait()
print("ready", flush=True)
ctypes.CDLL(None).pthread_exit(None)
"""

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/PID/task is Linux's")


@pytest.fixture(scope="module")
def exited(pid_namespace):
    """(this machine's pid, the namespace's pid, a word its command line holds) of a process whose
    leader has exited, in the module's PID namespace."""
    marker = f"leader-exited-{os.getpid()}"
    proc = subprocess.Popen(pid_namespace.argv([sys.executable, "-c", LEADER_EXITS, marker]),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"ready\n"
        pid = pid_namespace.command_pid(proc)
        _leader_has_exited(pid)
        with open(f"/proc/{pid}/smaps", "rb") as f:
            assert f.read() == b""  # (what every reader of the leader's files sees)
        yield pid, pid_namespace.pid_in(pid), marker
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def _leader_has_exited(pid):
    """Wait until ``pid``'s first thread is a zombie and one other runs on (pthread_exit returns
    nothing to wait on: the state says when; a loaded machine may take a while to run it)."""
    for _ in range(6000):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            break
        time.sleep(0.01)
    assert fields[0] == "Z" and fields[17] == "2", fields


def _rows(*args, env=None):
    proc = run_smem(*args, "-F", "json", env=env, check=True)
    return json.loads(proc.stdout)["rows"]


def _holds_its_memory(row):
    return row["pss"] >= HELD_MIB << 10 and row["uss"] >= HELD_MIB << 10 and row["rss"] >= row["pss"]


def test_a_report_shows_what_it_holds_through_a_live_thread(exited):
    pid, _, marker = exited
    (row,) = _rows("--pid", pid, "-c", "pid state threads command uss pss rss")
    assert row["pid"] == pid and row["state"] == "Z" and row["threads"] == 2 and marker in row["command"]
    assert _holds_its_memory(row), row
    mappings = _rows("-m", "--pid", pid, "-c", "map pss")
    # (read a moment later, and each mapping's PSS rounded down on its own)
    assert abs(sum(m["pss"] for m in mappings) - row["pss"]) <= row["pss"] / 200


def test_exact_accounting_reads_its_pagemap_through_a_live_thread(exited):
    pytest.importorskip("numpy", reason="smem[exact]: numpy not installed")
    if os.geteuid() != 0:
        pytest.skip("--exact reads /proc/kpagecount: root")
    pid, _, _ = exited
    (row,) = _rows("--exact", "--pid", pid, "-c", "pid uss pss rss")
    assert row["pid"] == pid and _holds_its_memory(row), row


def _its_memfd(pid, marker, *source):
    """--shm's row of the memfd the process holds by its fd only."""
    (row,) = [r for r in json.loads(run_smem(*source, "--shm", "-F", "json", check=True).stdout)["rows"]
              if r["kind"] == "memfd" and r["name"] == marker]
    return row


def test_the_memfd_it_holds_is_found_in_a_live_threads_fds(exited):
    pid, _, marker = exited
    assert os.listdir(f"/proc/{pid}/fd") == []
    row = _its_memfd(pid, marker)
    assert row["processes"].endswith(f"[{pid}](fd)"), row  # (held by its fd, no mapping)
    assert row["size"] == row["unmapped"] == 1024 and row["mapped"] == 0, row


def test_its_descriptors_are_a_live_threads(exited):
    """The fd/ and fdinfo/ that smem's GPU and dma-buf columns and --shm read."""
    from smem.sources.proc_files import descriptors
    pid, _, _ = exited
    where, names = descriptors("/proc", pid)
    assert where.startswith(f"/proc/{pid}/task/") and where != f"/proc/{pid}/task/{pid}"
    assert any(os.readlink(f"{where}/fd/{n}").startswith("/memfd:") for n in names)
    assert all(os.path.exists(f"{where}/fdinfo/{n}") for n in names)


def _captured(capture, pid, marker):
    with tarfile.open(capture) as tar:
        smaps = tar.extractfile(f"{pid}/smaps").read()
        assert smaps and marker.encode() in tar.extractfile(f"{pid}/cmdline").read()
    (row,) = _rows("-S", capture, "--pid", pid, "-c", "pid state uss pss rss")
    assert row["pid"] == pid and row["state"] == "Z" and _holds_its_memory(row), row


def test_smem_capture_copies_its_address_space(exited, pid_namespace, tmp_path):
    _, pid, marker = exited
    capture = tmp_path / "capture.tgz"
    smem_in(pid_namespace, "capture", "-o", capture)
    _captured(capture, pid, marker)
    assert _its_memfd(pid, marker, "-S", capture)["processes"].endswith(f"[{pid}](fd)")


@pytest.mark.skipif(BUSYBOX is None, reason="no busybox")
def test_smemcap_sh_copies_its_address_space(exited, pid_namespace, tmp_path):
    _, pid, marker = exited
    capture = tmp_path / "capture.tgz"
    with open(capture, "wb") as out:
        subprocess.run(pid_namespace.argv([BUSYBOX, "sh", str(SCRIPT)]), env=script_env(os.environ["PATH"], tmp_path),
                       stdout=out, check=True, timeout=300)
    _captured(capture, pid, marker)
    # the memfd it holds by its fd only, listed from the thread the script read it through
    assert _its_memfd(pid, marker, "-S", capture)["processes"].endswith(f"[{pid}](fd)")


@pytest.mark.parametrize("method", METHODS)
def test_its_working_set_is_what_it_referenced_through_a_live_thread(exited, method):
    """The leader's clear_refs takes a write and clears nothing, and its maps is empty: the working
    set was its whole RSS (clear_refs) or nothing (idle page tracking).  Its threads touch nothing
    meanwhile (one waits on stdin)."""
    if os.geteuid() != 0:
        pytest.skip("--wss: root")
    pid, _, _ = exited
    (row,) = _rows("--wss", "1", "--pid", pid, "-c", "pid rss wss", env={"SMEM_WSS_METHOD": method})
    assert row["pid"] == pid and row["rss"] >= HELD_MIB << 10 and row["wss"] is not None, row
    assert row["wss"] < (HELD_MIB << 10) // 2, row


_FREES = """
import ctypes, os, threading
held, ready = [bytearray(b"\\x01" * (64 << 20))], threading.Event()
def hold():
    ready.set()
    while os.read(0, 1):
        held.clear()  # (munmap: no fault; nor does reading or writing a byte fault)
        os.write(1, b"f")
threading.Thread(target=hold).start()
ready.wait()
print("ready", flush=True)
ctypes.CDLL(None).pthread_exit(None)
"""


@pytest.mark.uses("cpu")
def test_an_incremental_collection_re_reads_it_each_time():
    """A Zl's stat says vsize and rss 0 (the leader has no mm), and a thread that frees memory
    moves no fault counter: smem watch, serve and record kept its figure from before."""
    from smem.app import plan, read_snapshot
    from smem.incremental import Refresher
    from smem.options import Query, ReportRequest, TableOptions
    proc = subprocess.Popen([sys.executable, "-c", _FREES], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"ready\n"
        _leader_has_exited(proc.pid)
        request = ReportRequest(query=Query(pids=(proc.pid,), jobs=1), table=TableOptions(columns=("pid", "pss")))
        the_plan, refresher = plan(request), Refresher(3600.0)

        def pss(load=None):
            (process,) = read_snapshot(request, the_plan, **({"load": load} if load else {}))[0].processes
            return process.totals["Pss"]

        assert pss(refresher.load) >= HELD_MIB << 10
        proc.stdin.write(b"f")
        proc.stdin.flush()
        assert proc.stdout.read(1) == b"f"
        # (a full read on either side: another worker's interpreter starting or exiting between two
        # reads moves the PSS of the library pages this one shares with it, by over 1% on a busy machine)
        before, kept, full = pss(), pss(refresher.load), pss()
        assert full < (HELD_MIB << 10) // 2, full
        assert any(abs(kept - side) <= side / 100 for side in (before, full)), (before, kept, full)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
