"""--wss SECONDS (smem/working_set.py): real processes of this machine, whose working set is
known because they make it: one holding 512 MiB that keeps touching 64 MiB of it; two forks
that keep touching the same 32 MiB of shared memory.  Measured both ways (SMEM_WSS_METHOD):
idle page tracking where this kernel has /sys/kernel/mm/page_idle/bitmap (skipped elsewhere),
and clear_refs."""

import json
import os
import subprocess
import sys

import pytest

from conftest import TESTS, run_smem

from smem.errors import SmemError
from smem.formats import Rendering, render
from smem.loading import load_reading
from smem.model import Derived, Need, Needs, Snapshot
from smem.options import TableOptions
from smem.report import make_table
from smem.selection import Selection
from smem.sources import open_source
from smem.sources.live import LiveSource
from smem.views import VIEWS
from smem.working_set import WorkingSet, measure

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
    time.sleep(0.2)
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


BITMAP = "/sys/kernel/mm/page_idle/bitmap"
METHODS = [pytest.param("page_idle", marks=pytest.mark.skipif(
               not os.path.exists(BITMAP), reason="this kernel has no idle page tracking (CONFIG_IDLE_PAGE_TRACKING)")),
           "clear_refs"]


def _rows(pids, method):
    res = subprocess.run([sys.executable, "-m", "smem", "--wss", "2", "--pid", ",".join(map(str, pids)),
                          "-F", "json"], capture_output=True, cwd=TESTS.parent, timeout=120,
                         env={**os.environ, "SMEM_WSS_METHOD": method})
    assert res.returncode == 0, res.stderr
    document = json.loads(res.stdout)
    assert document["working_set"] == {"method": method, "seconds": 2}
    if method == "clear_refs":
        assert res.stderr.decode().count("clear_refs") == 1  # said once
    else:
        assert res.stderr == b""  # idle page tracking leaves reclaim's ageing alone: nothing to say
    return {r["pid"]: r for r in document["rows"]}


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("toucher", [(512, 64, "private")], indirect=True)
def test_a_process_touching_64_of_its_512_mib_has_a_64_mib_working_set(toucher, method):
    row = _rows(toucher, method)[toucher[0]]
    print(f"\n{method}: 512 MiB held, 64 MiB touched: rss {row['rss'] / MIB:.1f} MiB, "
          f"wss {row['wss'] / MIB:.1f} MiB, wsspss {row['wsspss'] / MIB:.1f} MiB")
    assert row["rss"] >= 512 * MIB
    # the 64 MiB and at most the pages beside the 512 (the interpreter's: shared with other
    # processes, whose touches set the same page's flag while the machine is busy), never the
    # 448 MiB left untouched; its share of them is what wsspss counts
    assert 64 * MIB - 6.4 * MIB <= row["wss"] <= row["rss"] - 448 * MIB + 6.4 * MIB
    assert abs(row["wsspss"] - 64 * MIB) <= 6.4 * MIB


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("toucher", [(32, 32, "shared")], indirect=True)
def test_two_forks_touching_the_same_32_mib_have_16_mib_of_working_set_pss_each(toucher, method):
    rows = _rows(toucher, method)
    assert len(rows) == 2
    for pid in toucher:
        print(f"\n{method}: fork {pid}: wss {rows[pid]['wss'] / MIB:.1f} MiB, wsspss {rows[pid]['wsspss'] / MIB:.1f} MiB")
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


@pytest.mark.parametrize("value, says", [
    ("sometimes", "SMEM_WSS_METHOD is page_idle or clear_refs (not 'sometimes')"),
    ("page_idle", "SMEM_WSS_METHOD=page_idle: no /sys/kernel/mm/page_idle/bitmap"),
])
def test_a_method_that_is_none_or_that_the_kernel_lacks_is_one_line(value, says):
    if value == "page_idle" and os.path.exists(BITMAP):
        pytest.skip("this kernel has idle page tracking")
    res = run_smem("--wss", "0.1", "--pid", str(os.getpid()), env={"SMEM_WSS_METHOD": value})
    assert res.returncode != 0 and res.stdout == b""
    lines = res.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"smem: {says}")


def test_what_idle_tracking_measured_is_what_the_columns_show_and_the_document_says():
    """The idle path's figures reach every view's wss and wsspss (a group sums its members'),
    in place of smaps' Referenced, and the JSON document names the method."""
    source = open_source(str(TESTS / "fixtures" / "captures" / "faithful.tar.gz"))
    try:
        reading = load_reading(source, Selection(), needs=Needs(Need.MAPPINGS | Need.STAT, None))
    finally:
        source.close()
    pids = [p.pid for p in reading.processes if p.has_memory]
    measured = {pid: (8 * (i + 1), 2 * (i + 1)) for i, pid in enumerate(pids[1:])}  # the first: not measured
    snapshot = Snapshot(reading, Derived(working_set=WorkingSet("page_idle", 2.5, measured)))
    options = TableOptions(columns=("pid", "wss", "wsspss"), sort="pid", format="json", working_set=True)
    table = make_table([snapshot], VIEWS["process"], options)
    assert {row[0]: tuple(row[1:]) for row in table.values} == {pids[0]: (None, None), **measured}
    document = json.loads(render(Rendering(table, options, snapshot)))
    assert document["working_set"] == {"method": "page_idle", "seconds": 2.5}
    assert document["rows"][0]["wss"] is None  # absent, not 0
    users = make_table([snapshot], VIEWS["user"], TableOptions(columns=("user", "wss", "wsspss"), totals=True,
                                                                              working_set=True))
    assert [sum(row[1] for row in users.values), sum(row[2] for row in users.values)] == \
        [sum(w for w, _ in measured.values()), sum(p for _, p in measured.values())]


@pytest.fixture
def unwritable_sys(tmp_path):
    """A /sys whose page_idle/bitmap is there but refuses writes, even root's: a read-only
    attribute of the real /sys stands in its place (as a read-only /sys in a container)."""
    attribute = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"
    try:
        os.close(os.open(attribute, os.O_WRONLY))
    except PermissionError:
        pass
    except OSError:
        pytest.skip(f"no {attribute}")
    else:
        pytest.skip(f"{attribute} can be written here")
    (tmp_path / "kernel/mm/page_idle").mkdir(parents=True)
    (tmp_path / "kernel/mm/page_idle/bitmap").symlink_to(attribute)
    return tmp_path


def test_a_bitmap_that_cannot_be_written_falls_back_to_clear_refs_saying_why(unwritable_sys, monkeypatch):
    monkeypatch.delenv("SMEM_WSS_METHOD", raising=False)
    working_set, notes = measure(LiveSource(sys=str(unwritable_sys)), [os.getpid()], 0.1)
    assert working_set.method == "clear_refs" and working_set.measured is None
    assert len(notes) == 1
    assert notes[0].startswith(f"--wss: {unwritable_sys}/kernel/mm/page_idle/bitmap cannot be written "
                               "(Permission denied), so: --wss clears the processes' referenced bits")


def test_a_bitmap_that_cannot_be_written_is_an_error_where_idle_tracking_is_asked_for(unwritable_sys, monkeypatch):
    monkeypatch.setenv("SMEM_WSS_METHOD", "page_idle")
    with pytest.raises(SmemError, match=r"^SMEM_WSS_METHOD=page_idle: .*bitmap cannot be written \(Permission denied\)$"):
        measure(LiveSource(sys=str(unwritable_sys)), [os.getpid()], 0.1)


@pytest.mark.uses("cpu")
def test_a_bitmap_that_opens_but_refuses_the_marks_falls_back_to_clear_refs_saying_why(tmp_path, monkeypatch):
    """/dev/full in the bitmap's place: it opens for writing, and every write fails (ENOSPC)."""
    pytest.importorskip("numpy", reason="smem[exact]: numpy not installed")
    (tmp_path / "kernel/mm/page_idle").mkdir(parents=True)
    (tmp_path / "kernel/mm/page_idle/bitmap").symlink_to("/dev/full")
    monkeypatch.delenv("SMEM_WSS_METHOD", raising=False)
    working_set, notes = measure(LiveSource(sys=str(tmp_path)), [os.getpid()], 0.1)
    assert working_set.method == "clear_refs"
    assert notes[0].startswith("--wss: marking pages idle failed (No space left on device), so: --wss clears")
    monkeypatch.setenv("SMEM_WSS_METHOD", "page_idle")
    with pytest.raises(SmemError, match=r"^SMEM_WSS_METHOD=page_idle: marking pages idle failed"):
        measure(LiveSource(sys=str(tmp_path)), [os.getpid()], 0.1)
