"""Exact accounting, page frame by page frame, for any grouping of processes.

smaps gives each process its USS and PSS, but smem's per-user and
per-mapping totals are sums of those, so a page shared only among one group's
processes (a forked server's workers) counts as shared in each of them and
vanishes from every USS.  The kernel exposes the truth page by page
(Documentation/admin-guide/mm/pagemap.rst): /proc/PID/pagemap says which
physical frame (PFN) backs each virtual page, /proc/kpagecount how many
page-table mappings each frame has system-wide, /proc/kpageflags what the
frame is.  With those, for a group G of processes and each frame f it maps,
with c = mappings of f inside G and K = kpagecount(f):

* RSS  = distinct frames mapped by G (a frame mapped twice counts once);
* USS  = frames with c == K: nothing outside G maps them;
* PSS  = sum of c / K pages, the kernel's Pss summed over G (within rounding);
* shared = RSS - USS: frames G shares with processes outside it;
* swap = distinct swap slots G's page tables point to.

Counts are mappings, not processes: a frame one process maps at two addresses
has K = 2 and, for that process alone, c = 2, so it is its USS (smaps calls it
shared, as Private_* counts pages whose mapcount is 1).

The layering: parsers (pagemap, kpagecount, kpageflags) turn bytes into numpy
arrays; a *frame reader* gets each process's frames and the counts of the
frames needed, either from a source's own files (:class:`PagemapReader`, the
live /proc) or from the compact members a capture holds
(:class:`CaptureReader`, members written by :func:`exact_capture_members`);
:class:`ExactAccounting` does the arithmetic, vectorised, so hundreds of
processes and a hundred million page entries take seconds.

Limitations, by design or because the kernel does not say:

* Root is needed: since Linux 4.0 pagemap's PFNs are zero (4.0, 4.1: the
  file cannot be opened) without CAP_SYS_ADMIN, and kpagecount/kpageflags are
  root-only and exist only with CONFIG_PROC_PAGE_MONITOR.
  :class:`ExactUnavailable` says which.
* Frames with kpagecount 0 are owned by no one and left out of every figure:
  the shared zero page (KPF_ZERO_PAGE; what reading untouched anonymous
  memory maps, KSM's use_zero_pages included) and PFN-mapped special pages
  (vvar, device memory).  smaps leaves them out of Rss too.
* hugetlbfs pages (KPF_HUGE) are left out, as smaps keeps them out of Rss
  and Pss (it reports them as Shared_/Private_Hugetlb).  Without a readable
  kpageflags they cannot be told apart and are counted.
* Transparent huge pages: pagemap reports every 4 KiB subpage, with
  consecutive PFNs, and kpagecount each subpage's own mapcount (PMD mappings
  included) when the kernel has CONFIG_PAGE_MAPCOUNT, so a THP partly
  copied on write is counted exactly.  Kernels built with
  CONFIG_NO_PAGE_MAPCOUNT (6.15+) report the folio's average mapcount for
  every subpage; smaps uses the same average, so PSS still agrees with it,
  but USS of a partly shared large folio is then approximate.
* Swap: a swap slot's sharing count (swap_map) is not exported, so swap is
  the number of distinct slots the group's page tables point to; there is
  no swap USS or PSS.  Swapped-out shmem pages leave the page tables, so
  pagemap does not show them (smaps' Swap does count them).  A page under
  migration briefly shows as a swap entry.
* A live process read whole (smem.exact.scanned) lists only the frames others
  may map too: those pagemap marks exclusively mapped (bit 56) are counted as its
  own, USS in every group it is in, with no map count read.  Two pids sharing one
  address space (a vfork child before its exec) would each count them.  A frame
  another process maps after this one is read and before that one is goes back
  into the lists (frames.settle_own), split by its map count as the reference
  path splits it.
* Only mappings whose smaps Rss or Swap is non-zero are read (huge empty
  reservations cost nothing).  pagemap, kpagecount and smaps are read at
  different instants; a frame whose in-group count exceeds the kpagecount
  read (it was mapped in between) is taken as mapped by the group alone.
"""

from ..errors import SmemError
from .accounting import ExactAccounting, ExactFigures, SharedWith, account, exact_capture_members
from .frames import ExactUnavailable, FrameTable, ProcessFrames
from .members import KPAGES_MEMBER, decode_frames, decode_kpages, encode_frames, encode_kpages
from .readers import COUNTERS_READ, CaptureReader, PagemapReader, frame_reader

__all__ = [
    "ExactUnavailable", "ProcessFrames", "FrameTable", "ExactFigures", "SharedWith",
    "PagemapReader", "CaptureReader", "ExactAccounting", "account", "frame_reader",
    "exact_capture_members", "encode_frames", "decode_frames", "encode_kpages",
    "decode_kpages", "KPAGES_MEMBER", "account_snapshot", "frames_pass", "sharing_of_selection", "COUNTERS_READ",
]


def frames_pass(source):
    """A :class:`~smem.exact.scanned.FramesPass` for the loader to run beside its reading of
    ``source``'s processes (smem.loading.load_reading's ``beside``), or None where the frames are
    not read from the source's own pagemap (a capture's members) or cannot be (account says why)."""
    from .scanned import FramesPass
    reader = frame_reader(source)
    if not isinstance(reader, PagemapReader):
        return None
    try:
        reader.check()
    except ExactUnavailable:
        return None
    return FramesPass(source, reader)


def account_snapshot(snapshot, jobs=None, read=None):
    """Exact accounting of a snapshot's processes (their mappings after -M, or every mapping where
    the loader read only the rollup), or ExactUnavailable.  ``jobs``: as smem.collect takes it;
    ``read``: the frames_pass the loader ran, if any."""
    mappings = {p.pid: p.mappings for p in snapshot.processes if p.has_memory}
    return account(snapshot.source, mappings, jobs=jobs, read=read)


def sharing_of_selection(snapshot, accounting, selection, exclude=()):
    """(selected pids, SharedWith): what the processes ``selection`` picks share, and with whom.

    ``exclude``: pids never selected (smem's own invocation, whose command lines hold the pattern).
    """
    selected = [p.pid for p in snapshot.processes
                if p.has_memory and p.pid not in exclude and selection.wants(p.name, p.cmdline, p.user, p.pid, p.uid)]
    if not selected:
        raise SmemError("--shared-with: no process matches the selection")
    return selected, accounting.shared_with(selected)
