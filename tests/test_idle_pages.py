"""--wss through idle page tracking (smem/idle_pages.py): real processes' pagemap, kpageflags
and kpagecount on this machine.

This kernel may lack the bitmap (CONFIG_IDLE_PAGE_TRACKING); the tracker is then pointed at a
plain file in its place, and the test sets what the kernel's bitmap would read back: every bit
clear (every page was used) or every bit as marked (none was).  What is checked is smem's own
part: which frames it marks (each present LRU page's folio head, once) and the arithmetic from
the pages used to wss and wsspss, against the kernel's own Rss and Pss of the same processes.
tests/test_working_set.py measures real working sets where the kernel has the bitmap.
"""

import mmap
import os
import struct
import subprocess
import sys

import pytest

from workload import forked_workers

np = pytest.importorskip("numpy", reason="smem[exact]: numpy not installed")

from smem.idle_pages import IdleTracker, folio_heads, working_set_figures  # noqa: E402
from smem.parsers.kpageflags import FLAGS, parse_kpageflags  # noqa: E402
from smem.parsers.maps import parse_maps_ranges  # noqa: E402
from smem.parsers.page_idle_bitmap import parse_page_idle_bitmap  # noqa: E402

needs_kpageflags = pytest.mark.skipif(os.geteuid() != 0 or not os.access("/proc/kpageflags", os.R_OK),
                                      reason="pagemap's PFNs and kpageflags are root's")


def test_maps_ranges_are_each_lines_addresses_and_damaged_lines_are_passed_over(realproc):
    x86 = (realproc / "prometheus-procfs-fixtures/proc/26232/maps").read_bytes()
    ranges = parse_maps_ranges(x86)
    assert len(ranges) == len(x86.splitlines())
    assert ranges[0] == (0x55680ae1e000, 0x55680ae20000)
    arm = (realproc / "hikvision-dvr-arm-2.6-nopss/proc/1/maps").read_bytes()
    assert parse_maps_ranges(arm)[:2] == [(0x8000, 0x5a000), (0x62000, 0x63000)]
    damaged = b"40-40 r--p 0 0:0 0\nzz-10 r--p 0 0:0 0\n20-10 r--p 0 0:0 0\n-10 r--p\n1-11111111111111111 r--p\n\n30-40 rw-p 0 0:0 0"
    assert parse_maps_ranges(damaged) == [(0x30, 0x40)]


def test_a_used_page_counts_once_in_wss_and_one_over_its_map_count_in_wsspss():
    pfns = np.array([10, 11, 12, 12, 13], dtype=np.uint64)  # frame 12 mapped at two addresses
    used = np.array([True, True, True, True, False])
    counts = np.array([1, 2, 2, 2, 1], dtype=np.uint64)
    assert working_set_figures(pfns, used, counts, 4) == (16, 4 + 2 + 2 + 2)
    # a page the kernel does not map-count (0) is the process's own
    assert working_set_figures(pfns[:1], used[:1], np.zeros(1, np.uint64), 4) == (4, 4)
    assert working_set_figures(pfns[:0], used[:0], counts[:0], 4) == (0, 0)


def _flags(*names):
    return sum(1 << FLAGS[n] for n in names)


def test_a_tail_page_is_tracked_by_its_folio_head_found_through_consecutive_frames():
    head, tail, lru = _flags("COMPOUND_HEAD"), _flags("COMPOUND_TAIL"), _flags("LRU")
    pfns = np.array([100, 101, 102, 103, 200, 202, 203, 300, 301], dtype=np.uint64)
    flags = np.array([head | lru, tail, tail, lru, tail, head, tail, lru, tail], dtype=np.uint64)
    assert folio_heads(pfns, flags).tolist() == [100, 100, 100, 103, -1, 202, 202, 300, -1]


@needs_kpageflags
def test_tail_pages_of_a_real_huge_page_lead_to_its_head():
    """A 2 MiB transparent huge page (MADV_HUGEPAGE): its 511 tail frames' head is its first."""
    code = r"""
import ctypes, mmap, sys
libc = ctypes.CDLL(None)
m = mmap.mmap(-1, 8 << 20, flags=mmap.MAP_PRIVATE)
base = ctypes.addressof(ctypes.c_char.from_buffer(m))
start = (base + (2 << 20) - 1) & ~((2 << 20) - 1)
m.madvise(14, start - base, 4 << 20)  # MADV_HUGEPAGE
libc.memset(ctypes.c_void_p(start), 1, 4 << 20)
print(start, flush=True)
sys.stdin.read()
"""
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        start = int(proc.stdout.readline())
        page = mmap.PAGESIZE
        with open(f"/proc/{proc.pid}/pagemap", "rb") as f:
            f.seek(start // page * 8)
            entries = np.frombuffer(f.read((4 << 20) // page * 8), dtype="<u8")
        pfns = np.sort(entries & np.uint64((1 << 55) - 1))
        with open("/proc/kpageflags", "rb") as f:
            flags = []
            for pfn in pfns.tolist():
                f.seek(pfn * 8)
                flags.append(parse_kpageflags(f.read(8))[0])
        flags = np.array(flags, dtype=np.uint64)
        heads = flags & np.uint64(1 << FLAGS["COMPOUND_HEAD"]) != 0
        if not heads.any():
            pytest.skip("no transparent huge page was given (THP off, or memory too fragmented)")
        found = folio_heads(pfns, flags)
        for at in np.flatnonzero(heads).tolist():
            folio = slice(at, at + 512)
            if len(pfns[folio]) == 512 and pfns[at + 511] - pfns[at] == 511:
                assert (found[folio] == int(pfns[at])).all()
                break
        else:
            pytest.fail("a head page without its 511 tail frames")
    finally:
        proc.kill()
        proc.wait()


def _rollup(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        return {line.split(":")[0]: int(line.split()[1]) for line in f if line.split()[-1] == "kB"}


def _frames(pid):
    """The frames ``pid`` maps, read here address by address (bit 63 present, bits 0-54 PFN)."""
    frames = set()
    with open(f"/proc/{pid}/maps", "rb") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in maps:
            low, high = (int(a, 16) // mmap.PAGESIZE for a in line.split()[0].split(b"-"))
            if high >= 1 << 52:
                continue
            pagemap.seek(low * 8)
            data = pagemap.read((high - low) * 8)
            for (entry,) in struct.iter_unpack("<Q", data):
                if entry >> 63:
                    frames.add(entry & ((1 << 55) - 1))
    return frames


@pytest.fixture
def bitmap(tmp_path):
    path = tmp_path / "bitmap"
    path.write_bytes(b"")
    return path


@pytest.mark.uses("cpu")
@needs_kpageflags
def test_it_marks_each_present_lru_page_once_and_with_every_page_used_gives_rss_and_pss(bitmap):
    with forked_workers(8192, 4096, 2) as workload:
        tracker = IdleTracker("/proc", str(bitmap), mmap.PAGESIZE)
        tracker.mark(workload.pids)
        marked = parse_page_idle_bitmap(bitmap.read_bytes())
        frames = set().union(*(_frames(pid) for pid in workload.pids))
        # none used: every bit still as marked
        unused = tracker.measure(workload.pids)
        bitmap.write_bytes(bytes(len(bitmap.read_bytes())))  # every page used
        before = {pid: _rollup(pid) for pid in workload.pids}
        used = tracker.measure(workload.pids)
        rollups = {pid: _rollup(pid) for pid in workload.pids}
    # each frame marked once, whichever processes map it: the frames they map, and no other
    print(f"\nmarked {len(marked)} frames of the {len(frames)} the processes map")
    # (a page not yet on an LRU list, just faulted in and still in a per-CPU batch, cannot be marked:
    # a few, more on a busy machine)
    assert set(marked.tolist()) <= frames
    assert len(marked) >= 0.98 * len(frames)
    for pid in workload.pids:
        # (a page not yet on an LRU list when marked, just faulted in, reads as used: it was)
        print(f"pid {pid}, none used: wss {unused[pid][0]} KiB")
        # (more of them on a busy machine: at most 2% of what it maps; all of it if marking failed)
        assert unused[pid][0] <= max(64, before[pid]["Rss"] // 50) and unused[pid][1] <= unused[pid][0]
        wss, wsspss = used[pid]
        rss, pss = rollups[pid]["Rss"], rollups[pid]["Pss"]
        print(f"pid {pid}: wss {wss} KiB (Rss {rss}), wsspss {wsspss} KiB (Pss {pss})")
        # a page that is on no LRU list (the zero page, a special mapping, a page still in a
        # per-CPU batch when marked, more of them on a busy machine) is not tracked: up to 2%
        assert rss - max(64, rss // 50) <= wss <= rss
        # the library pages they share with every Python on the machine: their PSS moves as other
        # processes start and exit (the test suite's own, in parallel) between the kernel's count
        # and the rollup, by up to half of it when a few Pythons exit; a split not by mapcount
        # would be off by most of the 8 MiB the forks share
        moving = abs(pss - before[pid]["Pss"]) + rollups[pid].get("Pss_File", 0) // 2
        assert abs(wsspss - pss) <= 64 + moving


@pytest.mark.uses("cpu")
@needs_kpageflags
def test_a_process_gone_meanwhile_is_left_out(bitmap):
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    tracker = IdleTracker("/proc", str(bitmap), mmap.PAGESIZE)
    tracker.mark([proc.pid, os.getpid()])
    proc.kill()
    proc.wait()
    assert set(tracker.measure([proc.pid, os.getpid()])) == {os.getpid()}
