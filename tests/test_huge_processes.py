"""Huge processes (issue 12): --max-rss skips them before their smaps is read, and a process whose
smaps is slow to read is named."""

import subprocess
import sys
import uuid

import pytest

from conftest import run_smem
from smem.app import load_warnings
from smem.loading import load_reading
from smem.model import Need, Needs
from smem.sources import LiveSource


@pytest.fixture
def big_child():
    """A process holding 64 MiB resident, named by a token on its command line."""
    token = uuid.uuid4().hex
    code = ("import sys; data = bytearray(64 << 20)\n"
            "for i in range(0, len(data), 4096): data[i] = 1\n"
            "print('ready', flush=True); sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code, token], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"ready\n"
    yield proc, token
    proc.stdin.close()
    proc.wait(30)


def test_max_rss_skips_and_lists_big_processes(big_child):
    proc, token = big_child
    shown = run_smem("-P", token, "-c", "pid rss", "-H")
    assert [int(l.split()[0]) for l in shown.stdout.decode().splitlines()] == [proc.pid]
    skipped = run_smem("-P", token, "-c", "pid rss", "-H", "--max-rss", "32M")
    assert skipped.returncode == 0 and skipped.stdout == b""
    warnings = [l for l in skipped.stderr.decode().splitlines() if "--max-rss" in l]
    assert len(warnings) == 1 and f"pid {proc.pid} (python" in warnings[0]
    kept = run_smem("-P", token, "-c", "pid rss", "-H", "--max-rss", "1G")
    # (the same process kept: its RSS may move by a page between two reads of a live process)
    assert [int(l.split()[0]) for l in kept.stdout.decode().splitlines()] == [proc.pid]
    assert b"--max-rss" not in kept.stderr


@pytest.mark.uses("cpu")
def test_a_slow_read_is_named_once(big_child):
    proc, token = big_child
    snapshot = load_reading(LiveSource(), needs=Needs(Need.MAPPINGS | Need.STAT, frozenset({"Rss"})))
    assert all(p.read_seconds is not None for p in snapshot.processes)
    slow = [w for w in load_warnings(snapshot, slow_seconds=0.0) if w.startswith("reading pid")]
    assert len(slow) == 1 and "--max-rss" in slow[0]  # one line, the slowest, whatever the count
    assert not [w for w in load_warnings(snapshot) if w.startswith("reading pid")] or \
        max(p.read_seconds for p in snapshot.processes) > 1.0
