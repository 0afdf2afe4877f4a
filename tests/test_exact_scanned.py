"""Whole processes read for --exact (smem.exact.scanned: PAGEMAP_SCAN in the collect workers or the
loader's, or the smaps ranges where it is missing; the C step or the numpy one) give what the
reference reader gives through each mapping of smaps, on live processes sharing anonymous memory
by fork, a file mapping and shmem (frames mapped exclusively counted apart, or listed); and the
accounting of whole processes (ranks, counts in one array) equals the reference's on an exact
capture made here.  Needs root and /proc/kpagecount."""

import contextlib
import os
import select
import subprocess
import sys
import time

import pytest

np = pytest.importorskip("numpy", reason="--exact needs smem[exact]")

from conftest import machine_changes, settled
from smem import exact
from smem.exact import scanned
from smem.exact.frame_arrays import unique_counts
from smem.loading import load_reading
from smem.parsers.smaps import parse_smaps
from smem.sources import LiveSource
from page_frames import kpagecount_readable
from test_exact import _capture_with

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not kpagecount_readable(),
                                reason="exact accounting needs root and /proc/kpagecount")

_SHARERS = r"""
import mmap, os, sys
PS = mmap.PAGESIZE
path, shm = sys.argv[1], sys.argv[2]
anon = mmap.mmap(-1, 64 * PS, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
anon.madvise(mmap.MADV_NOHUGEPAGE)
for i in range(64):
    anon[i * PS] = 1
maps = []
for name, pages in ((path, 32), (shm, 16)):
    with open(name, "wb") as f:
        f.write(b"x" * pages * PS)
    fd = os.open(name, os.O_RDWR)
    m = mmap.mmap(fd, pages * PS, flags=mmap.MAP_SHARED)
    os.close(fd)
    for i in range(pages):
        m[i * PS] = 2
    maps.append(m)
kids = []
for j in range(2):
    pid = os.fork()
    if pid == 0:
        anon[j * PS] = 3  # one page of its own (copy on write), the rest shared with its parent
        sys.stdin.read()
        os._exit(0)
    kids.append(pid)
print(" ".join(map(str, [os.getpid()] + kids)), flush=True)
sys.stdin.read()
for pid in kids:
    os.waitpid(pid, 0)
"""


@pytest.fixture(scope="module")
def sharers(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("scanned") / "mapped")
    shm = f"/dev/shm/smem-scanned-{os.getpid()}"
    proc = subprocess.Popen([sys.executable, "-c", _SHARERS, path, shm], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, start_new_session=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready else b""
        assert line, "the sharers did not start"
        pids = [int(p) for p in line.split()]
        for pid in pids:  # (the children were still copying pages on write into their read)
            settled(pid)
        yield pids
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(shm)


def _smaps(pid):
    with open(f"/proc/{pid}/smaps", "rb") as f:
        return parse_smaps(f.read())


def _reference(live, pids):
    """{pid: (distinct PFNs, their counts, distinct swap slots)} as the reference reader reads them."""
    reader = exact.frame_reader(live)
    out = {}
    for pid in pids:
        f = reader.process_frames(pid, _smaps(pid))
        u, c = unique_counts(f.pfns.copy())
        out[pid] = (u.tolist(), None if c is None else c.tolist(), np.unique(f.swap).tolist())
    return out


def _zero_page_dropped(frames):
    """``frames`` without the shared zero page, which no one owns (kpageflags ZERO_PAGE: every
    figure leaves it out), and which PAGEMAP_SCAN is asked not to return."""
    from smem.parsers.kpageflags import FLAGS
    fd = os.open("/proc/kpageflags", os.O_RDONLY)
    try:
        def zero(pfn):
            return int.from_bytes(os.pread(fd, 8, pfn * 8), "little") >> FLAGS["ZERO_PAGE"] & 1
        out = {}
        for pid, (pfns, counts, swap) in frames.items():
            keep = [i for i, p in enumerate(pfns) if not zero(p)]
            out[pid] = ([pfns[i] for i in keep], None if counts is None else [counts[i] for i in keep], swap)
        return out
    finally:
        os.close(fd)


def _whole(live, pids, jobs, exclusive=False):
    frames, skipped = scanned.collect_distinct_frames(live, exact.frame_reader(live), pids, jobs, exclusive)
    assert not skipped
    return ({pid: (f.pfns.tolist(), None if f.counts is None else f.counts.tolist(), f.swap.tolist(), f.own.tolist())
             for pid, f in frames.items()}, {f.scanned for f in frames.values()})


def _stable_comparison(pids, jobs, exclusive=False):
    """(reference, whole, how they were found), retried while the reference itself moved between
    two reads (a page migrated, a huge page collapsed: the kernel's doing, not ours)."""
    live = LiveSource()
    for _ in range(5):
        before = _reference(live, pids)
        whole, how = _whole(live, pids, jobs, exclusive)
        if _reference(live, pids) == before:
            return before, whole, how
    pytest.skip("the processes' frames kept moving")


@pytest.fixture(params=["C", "numpy"])
def step(request, monkeypatch):
    """Each process's entries turned into its distinct frames by the C step, or the numpy one."""
    if request.param == "C":
        if scanned.distinct_c is None:
            pytest.skip("the C step (smem/exact/_frames.c) is not built")
    else:
        monkeypatch.setattr(scanned, "distinct_c", None)
    return request.param


@pytest.mark.uses("cpu")
def test_scanned_frames_are_the_reference_frames(sharers, step):
    reference, whole, how = _stable_comparison(sharers, jobs=2)
    if how != {True}:
        pytest.skip("this kernel has no PAGEMAP_SCAN (Linux 6.7+)")
    assert whole == {pid: frames + ([],) for pid, frames in _zero_page_dropped(reference).items()}
    # the fork's shared pages are the same frames in parent and children
    assert len(set(whole[sharers[0]][0]) & set(whole[sharers[1]][0])) >= 62 + 32 + 16


@pytest.mark.uses("cpu")
def test_frames_mapped_exclusively_are_counted_apart(sharers, step):
    """Each process's frames no other process maps are its ``own``: left out of its frames, and
    mapped by none of the others; the rest are the reference's frames and counts."""
    reference, whole, how = _stable_comparison(sharers, jobs=2, exclusive=True)
    if how != {True}:
        pytest.skip("this kernel has no PAGEMAP_SCAN (Linux 6.7+)")
    reference = _zero_page_dropped(reference)
    for pid in sharers:
        pfns, counts, swap, own = whole[pid]
        ref_pfns, ref_counts, ref_swap = reference[pid]
        at = {pfn: i for i, pfn in enumerate(ref_pfns)}
        assert set(pfns) <= set(at) and swap == ref_swap
        assert (counts or [1] * len(pfns)) == [(ref_counts or [1] * len(ref_pfns))[at[p]] for p in pfns]
        apart = set(ref_pfns) - set(pfns)
        assert own == sorted(apart) and own  # (its copied page at least)
        for other in sharers:
            if other != pid:
                assert not apart & set(reference[other][0])
    # the fork's shared pages are listed in each: no one maps them alone
    assert len(set(whole[sharers[0]][0]) & set(whole[sharers[1]][0])) >= 62 + 32 + 16


@pytest.mark.uses("cpu")
def test_without_pagemap_scan_the_smaps_ranges_give_the_same_frames(sharers, monkeypatch):
    monkeypatch.setenv("SMEM_PAGEMAP_SCAN", "0")
    reference, whole, how = _stable_comparison(sharers, jobs=2, exclusive=None)
    assert how == {False}
    assert whole == {pid: frames + ([],) for pid, frames in reference.items()}


@pytest.mark.uses("cpu")
def test_frames_read_in_the_loaders_pass_account_as_read_apart(sharers, step):
    """The frames the loader reads beside each process (frames_pass) are taken as read: the
    accounting is what reading them afterwards gives."""
    from smem.selection import Selection
    live = LiveSource()

    def figures(acc):  # (map counts of library pages move with the machine's other processes)
        group = acc.groups({"s": sharers})["s"]
        return ((group.rss_kib, group.uss_kib, group.swap_kib),
                [(acc.process(pid).rss_kib, acc.process(pid).uss_kib) for pid in sharers])

    for _ in range(5):
        frames = exact.frames_pass(live)
        reading = load_reading(live, Selection(pids=frozenset(sharers)), jobs=2, beside=frames)
        assert sorted(p.pid for p in reading.processes) == sorted(sharers)
        assert set(frames.frames) == set(sharers) and not frames.skipped
        whole = exact.account(live, {pid: None for pid in sharers}, read=frames)
        assert not frames.frames  # (taken out of the pass)
        apart = exact.account(live, {pid: None for pid in sharers}, jobs=2)
        if figures(whole) == figures(apart):
            break
    assert figures(whole) == figures(apart)


@pytest.mark.parametrize("gap, chunk", [(32, 1 << 18), (0, 5), (3, 7)])
def test_map_counts_read_in_runs_are_each_frames_own(tmp_path, monkeypatch, gap, chunk):
    """kpagecount read a run of nearby frames at a time (pieces of a run longer than a read, the
    values of several reads picked out at once) gives each frame its own count; past the end
    of RAM, 0."""
    from smem.exact import readers
    monkeypatch.setattr(readers, "_KPAGE_GAP", gap)
    monkeypatch.setattr(readers, "_KPAGE_CHUNK", chunk)
    counts = np.random.default_rng(7).integers(0, 50, 5000).astype(np.uint64)
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "kpagecount").write_bytes(counts.tobytes())
    reader = readers.PagemapReader(LiveSource(str(tmp_path), local=False), 4096)
    pfns = np.unique(np.concatenate([np.arange(0, 40), np.arange(100, 5000, 9), [4998, 4999, 5000, 5003, 9999]]))
    want = np.concatenate([counts, np.zeros(10000, np.uint64)])[pfns]
    assert reader.frame_table(pfns.astype(np.uint64)).counts.tolist() == want.tolist()
    reader.skip_flags = True
    assert reader.owned_counts(pfns.astype(np.uint32)).tolist() == want.tolist()


@pytest.mark.uses("cpu")
def test_whole_processes_live_give_the_reference_frames_counted(sharers):
    live = LiveSource()
    group = {"sharers": sharers}
    # map counts of library pages move with the machine's other processes, and with them the
    # group's USS (a page of libpython mapped by the sharers alone, until another Python starts):
    # the two are compared as read while no process was forked or ended, for up to 30 s
    deadline = time.monotonic() + 30
    while True:
        changes = machine_changes()
        whole = exact.account(live, {pid: None for pid in sharers}, jobs=2)
        reference = exact.account(live, {pid: _smaps(pid) for pid in sharers})
        if machine_changes() == changes:
            break
        if time.monotonic() > deadline:
            pytest.skip("no reading in 30 s without a process started or ended meanwhile")
        time.sleep(0.2)
    a, b = whole.groups(group)["sharers"], reference.groups(group)["sharers"]
    assert (a.rss_kib, a.uss_kib, a.swap_kib) == (b.rss_kib, b.uss_kib, b.swap_kib)
    for pid in sharers:
        assert whole.process(pid).rss_kib == reference.process(pid).rss_kib


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("ranked_by", ["map", "bisection"])
def test_whole_processes_of_an_exact_capture_account_as_the_reference(sharers, monkeypatch, ranked_by):
    from smem.exact import accounting, frame_arrays
    # the map of PFNs in use, in small windows; or, frames too spread for one, bisection
    monkeypatch.setattr(accounting, "_SPREAD_FLOOR", 1 << 40 if ranked_by == "map" else 0)
    monkeypatch.setattr(frame_arrays, "RANK_WINDOW", 1 << 12)
    live = LiveSource()
    maps = {pid: _smaps(pid) for pid in sharers}
    members = exact.account(live, maps, keep_frames=True).capture_members()
    source = _capture_with(members)
    snap = load_reading(source)
    offline_maps = {p.pid: p.mappings for p in snap.processes if p.pid in maps}
    reference = exact.account(source, offline_maps)
    whole = exact.account(source, {pid: None for pid in sharers})
    assert whole.processes() == reference.processes()
    grouping = {"all": sharers, "kids": sharers[1:], "parent": sharers[:1]}
    assert whole.groups(grouping) == reference.groups(grouping)
    assert whole.total() == reference.total()
    a, b = whole.shared_with(sharers[:1]), reference.shared_with(sharers[:1])
    assert (a.shared_kib, a.holders, a.elsewhere_kib) == (b.shared_kib, b.holders, b.elsewhere_kib)
    kids = whole.groups({"kids": sharers[1:]})["kids"]
    assert kids.uss_kib >= 2 * exact_page_kib()


def exact_page_kib():
    return os.sysconf("SC_PAGESIZE") // 1024


@pytest.mark.uses("cpu")
def test_a_whole_process_beside_one_by_its_mappings_keeps_its_own_frames(sharers):
    """Frames a process maps alone, counted not listed, count as much when another process in
    the same accounting comes by its mappings (the general path) as when it is accounted alone."""
    from smem.selection import Selection
    from smem.sources import open_source
    live = LiveSource()
    whole, other = sharers[0], sharers[1]

    def passed():
        frames = scanned.FramesPass(live, exact.frame_reader(live), True)
        for pid in sharers[:2]:
            frames.take(frames.read(pid))
        return frames

    source = open_source(None, per_mapping=True, every_mapping=True, streamed=False)
    reading = load_reading(source, Selection(pids=frozenset({other})), needs=None)
    mappings = {p.pid: p.mappings for p in reading.processes}[other]
    for _ in range(5):
        alone = exact.account(live, {whole: None}, read=passed()).process(whole)
        beside = exact.account(live, {whole: None, other: mappings}, read=passed()).process(whole)
        if (alone.rss_kib, alone.uss_kib) == (beside.rss_kib, beside.uss_kib):
            break
    assert (beside.rss_kib, beside.uss_kib) == (alone.rss_kib, alone.uss_kib)
    assert alone.uss_kib >= os.sysconf("SC_PAGE_SIZE") // 1024  # (its copied page at least)


_MAPPER = r"""
import mmap, sys
f = open(sys.argv[1], "rb")
print("ready", flush=True)
for line in sys.stdin:
    m = mmap.mmap(f.fileno(), 64 * mmap.PAGESIZE, prot=mmap.PROT_READ)
    sum(m[i * mmap.PAGESIZE] for i in range(64))
    print("mapped", flush=True)
"""


def test_a_frame_mapped_by_a_second_process_during_the_pass_is_counted_once(tmp_path):
    """A maps 64 pages of a file no one maps and is read (they are its own, by pagemap's bit),
    then B maps them and is read: the pages are A's and B's, listed in both and split, as the
    reference path (every frame listed) counts them; not A's alone and B's half as well."""
    data = tmp_path / "data"
    data.write_bytes(b"x" * 64 * os.sysconf("SC_PAGE_SIZE"))
    live = LiveSource()

    def figures():
        """(exclusive frames counted, every frame listed): two passes over the same two processes,
        each read at the same moments."""
        with contextlib.ExitStack() as stack:
            a, b = (stack.enter_context(subprocess.Popen(
                [sys.executable, "-c", _MAPPER, str(data)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                text=True)) for _ in range(2))
            for p in (a, b):
                stack.callback(p.stdin.close)
                p.stdout.readline()
            passes = [scanned.FramesPass(live, exact.frame_reader(live), exclusive) for exclusive in (True, False)]
            for p in (a, b):
                p.stdin.write("go\n")
                p.stdin.flush()
                p.stdout.readline()
                for frames in passes:
                    frames.take(frames.read(p.pid))
            accounts = [exact.account(live, {a.pid: None, b.pid: None}, read=frames) for frames in passes]
            return [(acc.total().rss_kib, acc.process(a.pid).uss_kib, acc.process(b.pid).uss_kib)
                    for acc in accounts]

    if not scanned.scan_enabled():
        pytest.skip("this kernel has no PAGEMAP_SCAN (Linux 6.7+)")
    for _ in range(5):
        counted, listed = figures()
        if counted == listed:
            break
    assert counted == listed


@pytest.mark.parametrize("base", [0, 1 << 40], ids=["dense", "spread"])
def test_settle_own_lists_again_what_another_lists_or_also_counts(base):
    """settle_own on frames as workers send them, near PFN 0 (a byte a PFN) and far above it (RAM
    at high physical addresses: sorted): a frame counted as its own by one process goes back
    into its list where another lists it or counts it too; the rest stay counted."""
    from smem.exact.frames import DistinctFrames, settle_own
    u64 = lambda *v: np.array([base + x for x in v], dtype=np.uint64)
    a = DistinctFrames(1, u64(10, 11), np.array([1, 2], np.uint32), u64(), True, own=u64(20, 21, 22))
    b = DistinctFrames(2, u64(11, 21), None, u64(), True, own=u64(30, 22))
    c = DistinctFrames(3, u64(11), None, u64(), True, own=u64(40))
    assert settle_own({1: a, 2: b, 3: c}) == {1: 1, 2: 1, 3: 1}
    assert a.own.tolist() == u64(20).tolist() and a.pfns.tolist() == u64(10, 11, 21, 22).tolist()
    assert a.counts.tolist() == [1, 2, 1, 1]
    assert b.own.tolist() == u64(30).tolist() and b.pfns.tolist() == u64(11, 21, 22).tolist()
    assert b.counts is None
    assert c.own.tolist() == u64(40).tolist() and c.pfns.tolist() == u64(11).tolist()


@pytest.mark.parametrize("distinct", [False, True], ids=["listed", "distinct"])
def test_a_count_below_what_was_listed_still_adds_up(distinct):
    """kpagecount is read after every pagemap: a frame three processes listed may count two by
    then (one mapping gone meanwhile).  Counted as listed, each process's PSS is a third of it and
    the group's the sum of theirs, on both ways of building the accounting (whole frames as read,
    and each process's distinct frames as the workers send them); below, the processes had
    half each, and 14 KiB between them against the group's 12."""
    from smem.exact.accounting import ExactAccounting
    from smem.exact.frames import DistinctFrames, FrameTable, ProcessFrames
    u64 = lambda *v: np.array(v, dtype=np.uint64)
    listed = {1: u64(100, 101), 2: u64(100, 102), 3: u64(100)}
    if distinct:
        frames = {pid: DistinctFrames(pid, pfns, None, u64(), True) for pid, pfns in listed.items()}
    else:
        frames = {pid: ProcessFrames(pid, pfns, u64(), np.zeros((0, 3), np.uint64)) for pid, pfns in listed.items()}
    table = FrameTable(u64(100, 101, 102), u64(2, 1, 1), None)

    class Reader:  # what a live reader gives the distinct path: the counts of the frames ranked
        flags_available = False

        @staticmethod
        def owned_counts(ranked):
            return table.counts[np.searchsorted(table.pfns, ranked)].astype(np.uint32)

    accounting = ExactAccounting(frames, Reader() if distinct else table, 4096)
    each = {pid: figures.pss_kib for pid, figures in accounting.processes().items()}
    assert each == pytest.approx({1: 4 + 4 / 3, 2: 4 + 4 / 3, 3: 4 / 3})
    assert accounting.total().pss_kib == pytest.approx(sum(each.values())) == pytest.approx(12.0)
    assert accounting.groups({"a": [1, 2]})["a"].pss_kib == pytest.approx(each[1] + each[2])
