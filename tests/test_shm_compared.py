"""--shm across two readings and in charts, on objects this test makes: a /dev/shm file it
grows, a SysV segment it removes and two memfds of one name, one of which it grows.

``smem diff`` of two captures made around the changes finds each again by its identity
(device and inode, shmid) and shows the growth to the page, the segment gone and the two
memfds apart; watch mode (--count 2, off a terminal) keys its rows the same way; -t totals
and the charts' slices count each page once.

The captures hold this machine's shared-memory objects, all of them, and the smaps of this
test's process alone: every process's smaps take seconds to read on a busy machine and say
nothing of these objects (watch mode reads them all, as it must).
"""

import ctypes
import json
import os
import uuid

import pytest

from conftest import run_smem
from smem.app import plan, read_snapshot
from smem.capture_writer import write_capture
from smem.chart_data import bar_data, pie_data
from smem.options import ChartOptions, Query, ReportRequest, SystemOptions, TableOptions
from smem.report import make_table
from smem.sources import LiveSource
from smem.views import VIEWS

PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1 << 20
IPC_PRIVATE, IPC_CREAT, IPC_RMID = 0, 0o1000, 0


class _ThisProcess(LiveSource):
    """This machine, with this process as its only one."""

    def pids(self):
        return [os.getpid()]


def _capture(path):
    with open(path, "wb") as f:
        write_capture(_ThisProcess(), f, compression=None)
    return path


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    libc.shmctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    return libc


@pytest.fixture
def objects():
    """A 4 MiB /dev/shm file, a 2 MiB SysV segment, two memfds named alike (8 and 4 pages,
    held by this process); all removed afterwards."""
    if not os.path.isdir("/dev/shm") or not os.path.exists("/proc/sysvipc/shm"):
        pytest.skip("no /dev/shm or no SysV IPC")
    tag = f"smem-cmp-{uuid.uuid4().hex[:12]}"  # /dev/shm/TAG: a chart's label, not cut
    path = f"/dev/shm/{tag}"
    libc = _libc()
    shmid = libc.shmget(IPC_PRIVATE, 2 * MIB, IPC_CREAT | 0o600)
    if shmid < 0:
        pytest.skip(f"shmget failed: {os.strerror(ctypes.get_errno())}")
    memfds = []
    try:
        with open(path, "wb") as f:
            f.write(b"f" * (4 * MIB))
        for pages in (8, 4):
            fd = os.memfd_create(tag)
            memfds.append(fd)
            os.write(fd, b"m" * (pages * PAGE))
        yield dict(tag=tag, path=path, shmid=shmid, libc=libc, memfds=memfds,
                   memfd_inodes=[os.fstat(fd).st_ino for fd in memfds])
    finally:
        libc.shmctl(shmid, IPC_RMID, None)
        for fd in memfds:
            os.close(fd)
        if os.path.exists(path):
            os.unlink(path)


def _ours(rows, o):
    found = {
        "file": [r for r in rows if r["kind"] == "file" and r["name"] == o["path"]],
        "sysv": [r for r in rows if r["kind"] == "sysv" and r["inode"] == o["shmid"]],
        "memfds": [r for r in rows if r["kind"] == "memfd" and r["name"] == o["tag"]],
    }
    assert len(found["file"]) == len(found["sysv"]) == 1 and len(found["memfds"]) == 2, found
    return found["file"][0], found["sysv"][0], {r["inode"]: r for r in found["memfds"]}


def _counted_sum(rows, key):
    """A column summed as -t counts it: mounts, segments, memfds; a file is in its mount's row."""
    return sum(r[key] for r in rows if r["kind"] != "file" and r[key] is not None)


def test_diff_finds_each_object_again_grown_to_the_page_or_gone(objects, tmp_path):
    old = _capture(tmp_path / "old.tar")
    grown_pages = 3
    with open(objects["path"], "ab") as f:
        f.write(b"g" * (grown_pages * PAGE))
    os.write(objects["memfds"][0], b"g" * (grown_pages * PAGE))  # the first of the two, at its end
    objects["libc"].shmctl(objects["shmid"], IPC_RMID, None)  # attached by nobody: destroyed at once

    new = _capture(tmp_path / "new.tar")
    res = run_smem("diff", old, new, "--shm", "-F", "json", "-t",
                   "-c", "kind name inode status old_used used dused old_size dsize drss")
    assert res.returncode == 0, res.stderr
    document = json.loads(res.stdout)
    file, sysv, memfds = _ours(document["rows"], objects)
    growth_kib = grown_pages * PAGE // 1024

    assert file["status"] == "" and file["dused"] == file["dsize"] == growth_kib
    assert file["used"] == 4 * MIB // 1024 + growth_kib
    if file["drss"] is not None:  # cachestat (Linux 6.5+), or no swap in use
        assert file["drss"] == growth_kib

    assert sysv["status"] == "gone" and sysv["used"] is None
    assert sysv["old_size"] == 2 * MIB // 1024 and sysv["dsize"] == -sysv["old_size"]

    # the same name twice: told apart by inode, each with its own change
    first, second = (memfds[i] for i in objects["memfd_inodes"])
    assert first["status"] == second["status"] == ""
    assert (first["old_size"], first["dsize"]) == (8 * PAGE // 1024, growth_kib)
    assert (second["old_size"], second["dsize"]) == (4 * PAGE // 1024, 0)

    # -t: the changes as the plain view totals them, each page once (a file is in its mount)
    rows = document["rows"]
    assert document["totals"]["dused"] == _counted_sum(rows, "dused")
    assert document["sources"]["old"]["description"].endswith("old.tar")
    assert document["sources"]["new"] == document["source"] and document["source"]["description"].endswith("new.tar")


@pytest.mark.uses("cpu")
def test_watch_keys_the_rows_of_each_frame(objects):
    res = run_smem("--shm", "--interval", "0.05", "--count", "2", "-F", "json", "-t",
                   "-c", "kind name inode used dused status")
    assert res.returncode == 0, res.stderr
    records = [json.loads(line) for line in res.stdout.decode().splitlines()]
    assert {r["frame"] for r in records} == {1, 2}
    for number in (1, 2):
        rows = [r for r in records if r["frame"] == number and not r["total"]]
        (totals,) = [r for r in records if r["frame"] == number and r["total"]]
        file, sysv, memfds = _ours(rows, objects)
        # nothing of ours changed between the frames: matched, unmarked, no change
        for row in (file, sysv, *memfds.values()):
            assert row["status"] == "" and row["dused"] == 0, row
        assert totals["used"] == _counted_sum(rows, "used")
        if number == 1:  # the first frame is its own baseline
            assert all(r["dused"] in (0, None) and r["status"] == "" for r in rows)


def test_charts_count_each_page_once_as_the_totals_do(objects, tmp_path):
    capture = _capture(tmp_path / "now.tar")
    request = ReportRequest(Query(view="shm", source=str(capture)), TableOptions(totals=True),
                            ChartOptions("pie", "name"), SystemOptions())
    snapshot, _ = read_snapshot(request, plan(request))
    view = VIEWS["shm"]
    totals = make_table([snapshot], view, request.table, request.system)
    rss = {c.key: v for c, v in zip(totals.columns, totals.totals)}["rss"]
    charted = make_table([snapshot], view, request.table, request.system, request.chart)
    # files of a mount whose own RAM is unknown (a walk cut short) are drawn, but no total has them
    unknown = {o.device for o in snapshot.shared_memory.objects if o.fstype is not None and o.rss_kib is None}
    beyond = sum(o.rss_kib or 0 for o in snapshot.shared_memory.objects
                 if o.kind == "file" and o.device in unknown)

    (file,) = [o for o in snapshot.shared_memory.objects if o.kind == "file" and o.name == objects["path"]]

    pie = pie_data(charted, request.table, snapshot)
    assert sum(pie.values) == rss + beyond
    if file.rss_kib is not None:  # its own slice, unless folded into "other"
        ours = [v for label, v in zip(pie.labels, pie.values) if label == objects["path"]]
        assert ours == [file.rss_kib] or "other" in pie.labels
    assert any("(rest)" in n for n in pie.notes)

    bars = bar_data(charted, request.table, snapshot)
    drawn = bars.values[bars.series.index("RSS")]
    unit = {"memory (KiB)": 1, "memory (MiB)": 1024, "memory (GiB)": 1024 ** 2}[bars.axis_label]  # human units
    assert sum(v for v in drawn if v is not None) * unit == pytest.approx(rss + beyond)
    # the mount drawn only as what its files leave (its own bar, or in "other" with the small ones)
    assert f"{file.parent} (rest)" in bars.labels or bars.labels[-1].startswith("other (")
    assert any(row[-1] == f"{file.parent} (rest)" for row in charted.values)
    assert not [r for r in charted.rows if r.fstype is not None and r.device == file.device and r.name == file.parent]
