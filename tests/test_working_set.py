"""--wss SECONDS (smem/working_set.py): real processes of this machine, whose working set is
known because they make it: one holding 512 MiB that keeps touching 64 MiB of it; two forks
that keep touching the same 32 MiB of shared memory."""

import json
import os
import subprocess
import sys

import pytest

from conftest import TESTS, run_smem

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="--wss clears referenced bits: root only")

MIB = 1024

#: argv[1] MiB held, argv[2] MiB touched over and over, argv[3] "shared": the touched part is
#: MAP_SHARED memory, and the process forks once (both touch it)
TOUCHER = r"""
import ctypes, mmap, os, sys, time
held, touched, shared = int(sys.argv[1]) << 20, int(sys.argv[2]) << 20, sys.argv[3] == "shared"
libc = ctypes.CDLL(None)
def address(m):
    return ctypes.addressof(ctypes.c_char.from_buffer(m))
hot = mmap.mmap(-1, touched, flags=mmap.MAP_SHARED if shared else mmap.MAP_PRIVATE)
cold = mmap.mmap(-1, held - touched) if held > touched else None
for m in (hot, cold):
    if m is not None:
        libc.memset(ctypes.c_void_p(address(m)), 1, len(m))
child = os.fork() if shared else 0
if not shared or child:
    sys.stdout.write(f"{os.getpid()} {child}\n")
    sys.stdout.flush()
where = ctypes.c_void_p(address(hot))
while True:
    libc.memset(where, 2, touched)
    time.sleep(0.05)
"""


@pytest.fixture
def toucher(request):
    held, touched, how = request.param
    proc = subprocess.Popen([sys.executable, "-c", TOUCHER, str(held), str(touched), how], stdout=subprocess.PIPE)
    try:
        pids = [int(p) for p in proc.stdout.readline().split() if int(p)]
        yield pids
    finally:
        for pid in pids[1:]:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        proc.kill()
        proc.wait()


def _rows(pids, *args):
    res = subprocess.run([sys.executable, "-m", "smem", "--wss", "2", "--pid", ",".join(map(str, pids)),
                          "-F", "json", *args], capture_output=True, cwd=TESTS.parent, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stderr.decode().count("clear_refs") == 1  # said once
    return {r["pid"]: r for r in json.loads(res.stdout)["rows"]}


@pytest.mark.parametrize("toucher", [(512, 64, "private")], indirect=True)
def test_a_process_touching_64_of_its_512_mib_has_a_64_mib_working_set(toucher):
    row = _rows(toucher)[toucher[0]]
    print(f"\n512 MiB held, 64 MiB touched: rss {row['rss'] / MIB:.1f} MiB, wss {row['wss'] / MIB:.1f} MiB, "
          f"wsspss {row['wsspss'] / MIB:.1f} MiB")
    assert row["rss"] >= 512 * MIB
    assert abs(row["wss"] - 64 * MIB) <= 6.4 * MIB
    assert abs(row["wsspss"] - 64 * MIB) <= 6.4 * MIB


@pytest.mark.parametrize("toucher", [(32, 32, "shared")], indirect=True)
def test_two_forks_touching_the_same_32_mib_have_16_mib_of_working_set_pss_each(toucher):
    rows = _rows(toucher)
    assert len(rows) == 2
    for pid in toucher:
        print(f"\nfork {pid}: wss {rows[pid]['wss'] / MIB:.1f} MiB, wsspss {rows[pid]['wsspss'] / MIB:.1f} MiB")
        assert abs(rows[pid]["wsspss"] - 16 * MIB) <= 1.6 * MIB
        assert rows[pid]["wss"] >= 32 * MIB


def test_the_columns_are_the_defaults_with_wss_and_asked_only_with_it():
    res = run_smem("--wss", "0.1", "--pid", str(os.getpid()), "-F", "json")
    assert [c["key"] for c in json.loads(res.stdout)["columns"]] == ["pid", "user", "command", "swap", "uss",
                                                                      "pss", "rss", "wss", "wsspss"]


@pytest.mark.parametrize("args, says", [
    (["--wss", "1", "-S", "tests/fixtures/gpu_proc/tree"], "not a capture"),
    (["--wss", "0"], "above 0"), (["--wss", "nan"], "above 0"), (["--wss", "1", "-w"], "no wss column"),
    (["--wss", "1", "--interval", "1"], "does not combine with --interval"),
])
def test_wrong_uses_are_one_line(args, says):
    res = run_smem(*args)
    assert res.returncode != 0 and says in res.stderr.decode() and len(res.stderr.decode().splitlines()) == 1
