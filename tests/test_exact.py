"""Exact per-frame accounting (smem.exact) on real processes with sharing arranged to the page.

A *family*: a parent maps N anonymous private pages and writes them, then
forks K children; each child writes the first M of them.  Copy on write then
gives every child M frames of its own, leaves the parent's M originals mapped
by the parent alone, and keeps the N - M unwritten frames shared by all K + 1
processes.  So, for that region, every process has RSS N, USS M and PSS
M + (N - M) / (K + 1) pages, while the family as a group owns all
(K + 1) M + N - M frames it maps: group USS holds the N - M frames the sum of
per-process USS misses.  Besides, a POSIX shared memory segment mapped by a
root server and a client running as nobody (tests/workload.py).  The figures
are checked live and from a capture holding the frames; all in one file because
the family and the segment are started once for it.  The parsers of the frame
tables, and who may read them, are test_pagemap_interface.py's.

Needs root and a readable /proc/kpagecount (CONFIG_PROC_PAGE_MONITOR).
"""

import contextlib
import gzip
import io
import json
import os
import select
import subprocess
import sys
import tarfile
import time

import pytest

np = pytest.importorskip("numpy", reason="--exact needs smem[exact]")

from smem import exact
from smem.capture_writer import write_capture
from smem.errors import CaptureError
from smem.loading import load_reading
from smem.parsers import pagemap as pm
from smem.parsers.smaps import parse_smaps
from smem.sources import LiveSource
from smem.sources.archive import ArchiveSource
import pagemap_bits as bits
from conftest import machine_changes
from page_frames import has_flag, kpage_words, kpagecount_readable, mapping_at, smaps_of
from workload import PAGE_KIB, PAGE_SIZE, shm_server


pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not kpagecount_readable(),
                                reason="exact accounting needs root and /proc/kpagecount")

N, M, K = 256, 64, 3          # family: pages mapped, pages each child writes, children
ZERO_PAGES = 32               # read, never written: the shared zero page
THP_KIB = 4096                # two PMD-sized pages (if THP is available), one subpage copied
SHM_KIB = 512

_FAMILY = r"""
import json, mmap, os, sys
import numpy as np
N, M, K, Z, T = (int(a) for a in sys.argv[1:6])
PS = mmap.PAGESIZE
anon = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
priv = mmap.mmap(-1, N * PS, flags=anon)
priv.madvise(mmap.MADV_NOHUGEPAGE)
zero = mmap.mmap(-1, Z * PS, flags=anon, prot=mmap.PROT_READ)  # read-only: never merged
big = mmap.mmap(-1, T * 1024 + (2 << 20), flags=anon)
base = lambda m: np.frombuffer(m, dtype=np.uint8).__array_interface__['data'][0]
thp = (base(big) + (2 << 20) - 1) & ~((2 << 20) - 1)
off = thp - base(big)
if hasattr(mmap, 'MADV_HUGEPAGE'):
    try:
        big.madvise(mmap.MADV_HUGEPAGE)
    except OSError:
        pass
for i in range(N):
    priv[i * PS] = 1
sum(zero[i * PS] for i in range(Z))
for i in range(0, T * 1024, PS):
    big[off + i] = 1
block_r, block_w = os.pipe()
ready_r, ready_w = os.pipe()
kids = []
for j in range(K):
    pid = os.fork()
    if pid == 0:
        os.close(block_w)
        for i in range(M):
            priv[i * PS] = 2 + j
        if j == 0:
            big[off + 3 * PS] = 9
        os.write(ready_w, b'.')
        os.read(block_r, 1)
        os._exit(0)
    kids.append(pid)
os.close(block_r)
got = 0
while got < K:
    got += len(os.read(ready_r, K))
print(json.dumps(dict(pids=[os.getpid()] + kids, priv=base(priv), zero=base(zero), thp=base(big))),
      flush=True)
sys.stdin.read()
os.close(block_w)
for pid in kids:
    os.waitpid(pid, 0)
"""


@contextlib.contextmanager
def _family():
    proc = subprocess.Popen([sys.executable, "-c", _FAMILY, str(N), str(M), str(K),
                             str(ZERO_PAGES), str(THP_KIB)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready else b""
        if not line:
            raise RuntimeError("family did not start")
        yield json.loads(line)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()


def _rollup_pss(pid):
    with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
        return parse_smaps(f.read())[0].counters["Pss"]


@pytest.fixture(scope="module")
def family():
    with _family() as info:
        yield info


@pytest.fixture(scope="module")
def shm():
    with shm_server(SHM_KIB, users=("nobody",)) as wl:
        yield wl


def _pss_pages(m, n, k):
    return m + (n - m) / (k + 1)


# ---------------------------------------------------------------- the family

def _region_accounting(family, name):
    maps = {pid: [mapping_at(pid, family[name])] for pid in family["pids"]}
    return exact.account(LiveSource(), maps), maps


@pytest.mark.uses("cpu")
def test_each_family_member_to_the_page(family):
    acc, maps = _region_accounting(family, "priv")
    assert acc.skipped == {}
    for pid in family["pids"]:
        f = acc.process(pid)
        assert f.rss_kib == N * PAGE_KIB
        assert f.uss_kib == M * PAGE_KIB
        assert f.shared_kib == (N - M) * PAGE_KIB
        assert f.pss_kib == pytest.approx(_pss_pages(M, N, K) * PAGE_KIB)
        assert f.swap_kib == 0
        # the kernel agrees (its per-mapping Pss is truncated to a whole kB)
        c = maps[pid][0].counters
        assert c["Rss"] == f.rss_kib
        assert c["Private_Clean"] + c["Private_Dirty"] == f.uss_kib
        assert 0 <= f.pss_kib - c["Pss"] < 1


@pytest.mark.uses("cpu")
def test_family_as_a_group_owns_what_per_process_uss_misses(family):
    acc, _ = _region_accounting(family, "priv")
    pids = family["pids"]
    g = acc.groups({"family": pids, "children": pids[1:]})
    frames = (K + 1) * M + (N - M)
    fam = g["family"]
    assert (fam.rss_kib, fam.uss_kib, fam.shared_kib) == (frames * PAGE_KIB, frames * PAGE_KIB, 0)
    assert fam.pss_kib == pytest.approx(frames * PAGE_KIB)
    per_process_uss = sum(acc.process(p).uss_kib for p in pids)
    assert fam.uss_kib - per_process_uss == (N - M) * PAGE_KIB
    kids = g["children"]
    assert kids.rss_kib == (K * M + N - M) * PAGE_KIB
    assert kids.uss_kib == K * M * PAGE_KIB
    assert kids.shared_kib == (N - M) * PAGE_KIB
    assert kids.pss_kib == pytest.approx((K * M + K * (N - M) / (K + 1)) * PAGE_KIB)
    assert acc.total() == fam


@pytest.mark.uses("cpu")
def test_shared_with_names_the_siblings(family):
    acc, _ = _region_accounting(family, "priv")
    parent, *kids = family["pids"]
    sw = acc.shared_with([parent], family["pids"])
    assert sw.shared_kib == (N - M) * PAGE_KIB
    assert sw.holders == {kid: (N - M) * PAGE_KIB for kid in kids}
    assert sw.elsewhere_kib == 0
    # the same, by group; and with half the family not looked at, its mappings are "elsewhere"
    sw = acc.shared_with([parent], grouping={"kids": kids})
    assert sw.holders == {"kids": (N - M) * PAGE_KIB}
    sw = acc.shared_with([parent], kids[:1])
    assert sw.holders == {kids[0]: (N - M) * PAGE_KIB}
    assert sw.elsewhere_kib == (N - M) * PAGE_KIB
    # a child shares nothing of its own M pages
    sw = acc.shared_with(kids[:1])
    assert sw.shared_kib == (N - M) * PAGE_KIB


@pytest.mark.uses("cpu")
def test_accounting_from_frames_one_frame_each(family):
    """ExactAccounting built directly: each process keeps one frame of the region read live."""
    pids = family["pids"]
    reader = exact.PagemapReader(LiveSource())
    full = {pid: reader.process_frames(pid, [mapping_at(pid, family["priv"])]) for pid in pids}
    empty = np.zeros(0, dtype=np.uint64)

    def one(pid, index):
        return exact.ProcessFrames(pid, full[pid].pfns[index:index + 1].copy(), empty,
                                   np.array([[family["priv"], 1, 0]], dtype=np.uint64))

    # page M is unwritten: the same frame in the whole family; page 0 is each one's own
    for index, shared in ((M, True), (0, False)):
        frames = {pid: one(pid, index) for pid in pids}
        acc = exact.ExactAccounting(frames, reader.frame_table, PAGE_SIZE)
        count = int(kpage_words("kpagecount", frames[pids[0]].pfns)[0])
        assert count == (K + 1 if shared else 1)
        for pid in pids:
            f = acc.process(pid)
            assert (f.rss_kib, f.uss_kib) == (PAGE_KIB, 0 if shared else PAGE_KIB)
            assert f.pss_kib == pytest.approx(PAGE_KIB / count)
        fam = acc.groups({"f": pids})["f"]
        assert fam.rss_kib == fam.uss_kib == (1 if shared else K + 1) * PAGE_KIB


@pytest.mark.uses("cpu")
def test_zero_page_is_owned_by_no_one(family):
    acc, maps = _region_accounting(family, "zero")
    pid = family["pids"][0]
    assert maps[pid][0].counters["Rss"] == 0  # smaps leaves it out too
    # pagemap does show the zero page as present; kpageflags says what it is
    fd = os.open(f"/proc/{pid}/pagemap", os.O_RDONLY)
    try:
        e = pm.parse_pagemap(os.pread(fd, ZERO_PAGES * 8, family["zero"] // PAGE_SIZE * 8))
    finally:
        os.close(fd)
    assert bits.present(e).all()
    pfns = np.unique(bits.pfn(e))
    assert len(pfns) == 1
    assert has_flag(kpage_words("kpageflags", pfns), "ZERO_PAGE").all()
    # the region is not skipped for Rss 0 here: read it whatever smaps says
    region = maps[pid][0]
    region.counters = {k: v for k, v in region.counters.items() if k != "Rss"}
    acc = exact.account(LiveSource(), {pid: maps[pid]})
    assert acc.process(pid).rss_kib == acc.process(pid).uss_kib == 0
    assert acc.process(pid).pss_kib == 0


@pytest.mark.uses("cpu")
def test_transparent_huge_pages_partly_copied(family):
    acc, maps = _region_accounting(family, "thp")
    parent, first, *_ = family["pids"]
    for pid in family["pids"]:
        f, c = acc.process(pid), maps[pid][0].counters
        assert f.rss_kib == c["Rss"] == THP_KIB
        assert f.uss_kib == c["Private_Clean"] + c["Private_Dirty"]
        assert 0 <= f.pss_kib - c["Pss"] < 1
    # one subpage was copied by the first child: its copy and the parent's original
    # (mapped by the parent and the other children) are the only frames not in everyone
    fam = acc.groups({"f": family["pids"]})["f"]
    assert fam.rss_kib == fam.uss_kib == THP_KIB + PAGE_KIB
    assert acc.process(first).uss_kib == PAGE_KIB


@pytest.mark.uses("cpu")
def test_whole_process_pss_matches_smaps_rollup(family, shm):
    pids = family["pids"] + shm.pids
    # Another process starting or exiting meanwhile changes the counts of shared library
    # pages (every Python the other workers start maps the same libpython): a reading taken
    # while a process was forked or ended is taken again, for up to 30 s; one taken while
    # none was must be within a page of the rollups read around it.
    deadline, off, checked = time.monotonic() + 30, None, False
    while time.monotonic() < deadline:
        changes = machine_changes()
        before = {pid: _rollup_pss(pid) for pid in pids}
        acc = exact.account(LiveSource(), {pid: smaps_of(pid) for pid in pids})
        after = {pid: _rollup_pss(pid) for pid in pids}
        if machine_changes() != changes or before != after:
            time.sleep(0.2)
            continue
        off = {pid: acc.process(pid).pss_kib - after[pid] for pid in pids
               if abs(acc.process(pid).pss_kib - after[pid]) > PAGE_KIB}
        checked = True
        break
    if not checked:
        pytest.skip("no reading in 30 s without a process started or ended meanwhile")
    assert not off, off
    # and the family as a group owns at least the N - M frames per-process USS misses
    fam = acc.groups({"f": family["pids"]})["f"]
    assert fam.uss_kib >= sum(acc.process(p).uss_kib for p in family["pids"]) + (N - M) * PAGE_KIB


# ---------------------------------------------------------------- two users, one segment

@pytest.mark.uses("cpu")
def test_segment_shared_between_users(shm):
    server, client = shm.pids
    assert shm.users[client] == "nobody"
    maps = {pid: [mapping_at(pid, shm.regions[pid]["segment"].start)] for pid in shm.pids}
    acc = exact.account(LiveSource(), maps)
    by_user = acc.groups({"root": [server], "nobody": [client], "both": shm.pids})
    for user in ("root", "nobody"):
        f = by_user[user]
        assert (f.rss_kib, f.uss_kib, f.shared_kib) == (SHM_KIB, 0, SHM_KIB)
        assert f.pss_kib == pytest.approx(SHM_KIB / 2)
    assert (by_user["both"].uss_kib, by_user["both"].shared_kib) == (SHM_KIB, 0)
    sw = acc.shared_with([server], grouping={"nobody": [client]})
    assert sw.holders == {"nobody": SHM_KIB} and sw.shared_kib == SHM_KIB


# ---------------------------------------------------------------- captures

def _capture_with(members, pids=None):
    """A gzip capture of the live system (smem.capture) with ``members`` appended."""
    raw = io.BytesIO()
    write_capture(LiveSource(), raw, compression=None)
    raw.seek(0)
    with tarfile.open(fileobj=raw, mode="a") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return ArchiveSource(gzip.compress(raw.getvalue()), "exact.tar.gz")


@pytest.mark.uses("cpu")
def test_capture_gives_the_live_figures(family, shm):
    pids = family["pids"] + shm.pids
    live = LiveSource()
    maps = {pid: smaps_of(pid) for pid in pids}
    acc = exact.account(live, maps, keep_frames=True)
    source = _capture_with(acc.capture_members())
    snap = load_reading(source)
    offline_maps = {p.pid: p.mappings for p in snap.processes if p.pid in maps}
    assert set(offline_maps) == set(pids)
    offline = exact.account(source, offline_maps)
    assert isinstance(exact.frame_reader(source), exact.CaptureReader)
    for pid in pids:
        assert offline.process(pid) == acc.process(pid), pid
    grouping = {"family": family["pids"], "shm": shm.pids, "all": pids}
    assert offline.groups(grouping) == acc.groups(grouping)
    a, b = acc.shared_with(family["pids"][:1]), offline.shared_with(family["pids"][:1])
    assert (a.shared_kib, a.holders, a.elsewhere_kib) == (b.shared_kib, b.holders, b.elsewhere_kib)
    # a mapping filter offline selects the frames of those mappings only
    region = {pid: [m for m in offline_maps[pid] if m.start == family["priv"]]
              for pid in family["pids"]}
    g = exact.account(source, region).groups({"f": family["pids"]})["f"]
    assert g.uss_kib == ((K + 1) * M + N - M) * PAGE_KIB


@pytest.mark.uses("cpu")
def test_exact_capture_members_round_trip(family):
    live = LiveSource()
    pids = family["pids"]
    maps = {pid: [mapping_at(pid, family["priv"])] for pid in pids}
    members = exact.exact_capture_members(live, pids, maps)
    assert set(members) == {f"{pid}/frames" for pid in pids} | {exact.KPAGES_MEMBER}
    source = _capture_with(members)
    offline = exact.account(source, maps)
    live_acc = exact.account(live, maps)
    grouping = {"family": pids, "kids": pids[1:]}
    assert offline.groups(grouping) == live_acc.groups(grouping)
    assert offline.processes() == live_acc.processes()
    # the frames member holds one PFN per present page, and the counts only what is used
    frames = exact.decode_frames(pids[0], members[f"{pids[0]}/frames"])
    assert len(frames.pfns) == N and frames.segments.tolist() == [[family["priv"], N, 0]]
    page_size, table = exact.decode_kpages(members[exact.KPAGES_MEMBER])
    assert page_size == PAGE_SIZE
    assert len(table.pfns) == (K + 1) * M + N - M
    assert sorted(set(table.counts.tolist())) == [1, K + 1]


@pytest.mark.uses("cpu")
def test_corrupt_members_are_capture_errors(family):
    pid = family["pids"][0]
    maps = {pid: [mapping_at(pid, family["priv"])]}
    members = exact.exact_capture_members(LiveSource(), [pid], maps)
    frames, kpages = members[f"{pid}/frames"], members[exact.KPAGES_MEMBER]
    for bad in (frames[:-8], frames[:-3], b"junk" * 4, frames[:48] + b"\xff" * 8 + frames[56:]):
        with pytest.raises(CaptureError):
            exact.decode_frames(pid, bad)
    for bad in (kpages[:-8], b"SMEMKPG1", kpages[:5]):
        with pytest.raises(CaptureError):
            exact.decode_kpages(bad)


@pytest.mark.uses("cpu")
def test_capture_without_frame_data_says_so():
    source = _capture_with({})
    with pytest.raises(exact.ExactUnavailable, match="no page frame data"):
        exact.account(source, {1: []})
