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
* Only mappings whose smaps Rss or Swap is non-zero are read (huge empty
  reservations cost nothing).  pagemap, kpagecount and smaps are read at
  different instants; a frame whose in-group count exceeds the kpagecount
  read (it was mapped in between) is taken as mapped by the group alone.
"""

import errno
import mmap

import numpy as np

from .errors import CaptureError, ProcessGone, ProcessUnreadable, SmemError
from .parsers import pagemap as pm
from .parsers.kpagecount import parse_kpagecount
from .parsers.kpageflags import FLAGS, parse_kpageflags

__all__ = [
    "ExactUnavailable", "ProcessFrames", "FrameTable", "ExactFigures", "SharedWith",
    "PagemapReader", "CaptureReader", "ExactAccounting", "account", "frame_reader",
    "exact_capture_members", "encode_frames", "decode_frames", "encode_kpages",
    "decode_kpages", "KPAGES_MEMBER",
]

#: The capture member holding kpagecount/kpageflags of the frames the processes map.
KPAGES_MEMBER = "kpages.sparse"
FRAMES_MEMBER = "frames"   # per process: N/frames

_FRAMES_MAGIC = b"SMEMFRM1"
_KPAGES_MAGIC = b"SMEMKPG1"

_PAGEMAP_CHUNK = 1 << 18   # pagemap entries per read (2 MiB)
_PAGEMAP_GAP = 64          # read across holes up to this many pages between mappings
_KPAGE_CHUNK = 1 << 18     # kpagecount entries per read
_KPAGE_GAP = 512           # read across this many unneeded PFNs rather than seek
_BLOCK_SHIFT = 12          # the dense frame index maps PFNs in blocks of 4096 frames
_BLOCK_MASK = (1 << _BLOCK_SHIFT) - 1
_UNOWNED = (1 << FLAGS["ZERO_PAGE"]) | (1 << FLAGS["HUGE"])
_GONE = (errno.ENOENT, errno.ESRCH, errno.ENOTDIR)
_SWAPPED_ONLY = np.int64(1 << 62)
_DIRECT_BLOCKS = 1 << 16   # find a process's blocks by bisection when its PFNs span fewer


class ExactUnavailable(SmemError):
    """Exact accounting needs files this source does not have or we may not read."""


class ProcessFrames:
    """The frames one process maps, as pagemap reported them.

    ``pfns``: uint64, one per present page in address order (a frame mapped
    at two addresses appears twice).  ``swap``: uint64 swap slots (pagemap
    bits 0-54: type | offset << 5), one per swapped-out page.  ``segments``:
    uint64 array of rows (mapping start address, present pages, swapped
    pages), one per mapping read, in address order, so the frames of a
    subset of the mappings can be sliced out again.
    """

    __slots__ = ("pid", "pfns", "swap", "segments")

    def __init__(self, pid, pfns, swap, segments):
        self.pid = pid
        self.pfns = pfns
        self.swap = swap
        self.segments = segments

    def select(self, starts):
        """The frames of the mappings starting at the addresses in ``starts`` only."""
        keep = np.isin(self.segments[:, 0], np.fromiter(starts, np.uint64))
        if keep.all():
            return self
        pfns = self.pfns[np.repeat(keep, self.segments[:, 1].astype(np.intp))]
        swap = self.swap[np.repeat(keep, self.segments[:, 2].astype(np.intp))]
        return ProcessFrames(self.pid, pfns, swap, self.segments[keep])

    def __repr__(self):
        return f"ProcessFrames({self.pid}, {len(self.pfns)} present, {len(self.swap)} swapped)"


class FrameTable:
    """kpagecount (and kpageflags, or None) for ``pfns``, a sorted array of distinct PFNs."""

    __slots__ = ("pfns", "counts", "flags")

    def __init__(self, pfns, counts, flags):
        self.pfns = pfns
        self.counts = counts
        self.flags = flags


class ExactFigures:
    """A group's exact figures, KiB (PSS is fractional: sum of c / K pages)."""

    __slots__ = ("rss_kib", "pss_kib", "uss_kib", "shared_kib", "swap_kib")

    def __init__(self, rss_kib, pss_kib, uss_kib, shared_kib, swap_kib):
        self.rss_kib = rss_kib          # distinct frames the group maps
        self.pss_kib = pss_kib          # its proportional share of them
        self.uss_kib = uss_kib          # frames nothing outside the group maps
        self.shared_kib = shared_kib    # rss - uss: frames shared with the rest
        self.swap_kib = swap_kib        # distinct swap slots (see module notes)

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __eq__(self, other):
        return isinstance(other, ExactFigures) and self.as_dict() == other.as_dict()

    def __repr__(self):
        return ("ExactFigures(rss={0.rss_kib}, pss={0.pss_kib:.1f}, uss={0.uss_kib}, "
                "shared={0.shared_kib}, swap={0.swap_kib})".format(self))


class SharedWith:
    """Where the frames a selection shares with others are mapped (KiB).

    ``shared_kib``: distinct frames of the selection that something outside
    it maps too.  ``holders``: for each other process (or group), how much of
    that it maps, largest first; a frame counts once per holder, so holders
    overlap and may sum to more than ``shared_kib``.  ``elsewhere_kib``:
    frames with mappings not found in any process looked at (processes not
    read, or gone since).
    """

    __slots__ = ("shared_kib", "holders", "elsewhere_kib")

    def __init__(self, shared_kib, holders, elsewhere_kib):
        self.shared_kib = shared_kib
        self.holders = holders
        self.elsewhere_kib = elsewhere_kib

    def __repr__(self):
        return (f"SharedWith(shared={self.shared_kib}, holders={len(self.holders)}, "
                f"elsewhere={self.elsewhere_kib})")


# ---------------------------------------------------------------- readers

def _is_empty(mapping):
    """True if smaps says the mapping has nothing in RAM or swap (no pagemap read needed)."""
    counters = getattr(mapping, "counters", None)
    if not counters or "Rss" not in counters:
        return False
    return counters["Rss"] == 0 and not counters.get("Swap")


def _per_span(mask, total, los, his):
    """How many True entries of ``mask`` fall in each [lo, hi) span."""
    if len(los) == 1:
        return total
    where = np.flatnonzero(mask)
    return (np.searchsorted(where, his) - np.searchsorted(where, los)).astype(np.uint64)


class PagemapReader:
    """Frames from a source's own pagemap, kpagecount and kpageflags (the live /proc)."""

    def __init__(self, source, page_size=None):
        self.source = source
        self.page_size = page_size or int(source.facts().get("pagesize") or mmap.PAGESIZE)
        self.flags_available = None

    def check(self):
        """Raise :class:`ExactUnavailable` unless kpagecount can be read."""
        try:
            self.source.read_at("kpagecount", 0, 8)
        except FileNotFoundError:
            raise ExactUnavailable(
                f"{self.source.description}: no /proc/kpagecount (kernel built without "
                "CONFIG_PROC_PAGE_MONITOR), so frames' map counts are unknown") from None
        except PermissionError:
            raise ExactUnavailable(
                f"{self.source.description}: /proc/kpagecount is not readable: exact "
                "accounting needs root (CAP_SYS_ADMIN); pagemap also hides physical "
                "frame numbers from others since Linux 4.0") from None

    def process_frames(self, pid, mappings):
        """Read the pagemap ranges of ``mappings`` of ``pid``; a :class:`ProcessFrames`.

        Raises ProcessGone if the process exited, ProcessUnreadable if its
        pagemap may not be read.
        """
        ps = self.page_size
        spans = sorted((m.start // ps, -(-m.end // ps), m.start)
                       for m in mappings if m.end > m.start and not _is_empty(m))
        segments = np.zeros((len(spans), 3), dtype=np.uint64)
        if spans:
            segments[:, 0] = [s[2] for s in spans]
        present_parts, swap_parts = [], []
        path = f"{pid}/pagemap"
        i = 0
        while i < len(spans):
            first, end = spans[i][0], spans[i][1]
            j = i + 1
            while (j < len(spans) and spans[j][0] - end <= _PAGEMAP_GAP
                   and spans[j][1] - first <= _PAGEMAP_CHUNK):
                end = max(end, spans[j][1])
                j += 1
            for off in range(first, end, _PAGEMAP_CHUNK):
                entries = self._read_pagemap(path, pid, off, min(_PAGEMAP_CHUNK, end - off))
                n = len(entries)
                ks = [k for k in range(i, j) if spans[k][0] < off + n and spans[k][1] > off]
                if not ks:
                    continue
                los = [max(spans[k][0] - off, 0) for k in ks]
                his = [min(spans[k][1] - off, n) for k in ks]
                signed = entries.view(np.int64)  # bit 63 (present) is the sign bit
                pmask = signed < 0
                smask = signed >= _SWAPPED_ONLY  # bit 62 (swapped) set, bit 63 clear
                if len(ks) != 1 or los[0] != 0 or his[0] != n:
                    # pages between the mappings read (holes, or mappings smaps says
                    # are empty, which may map the zero page) are not ours to count
                    inside = np.zeros(n, dtype=bool)
                    for lo, hi in zip(los, his):
                        inside[lo:hi] = True
                    pmask &= inside
                    smask &= inside
                present = entries[pmask]
                present &= pm.PFN_MASK
                present_parts.append(present)
                segments[ks, 1] += _per_span(pmask, len(present), los, his)
                if smask.any():
                    swapped = entries[smask]
                    swapped &= pm.PFN_MASK
                    swap_parts.append(swapped)
                    segments[ks, 2] += _per_span(smask, len(swapped), los, his)
            i = j
        return ProcessFrames(pid, _concat(present_parts), _concat(swap_parts), segments)

    def _read_pagemap(self, path, pid, first, count):
        try:
            data = self.source.read_at(path, first * pm.ENTRY_SIZE, count * pm.ENTRY_SIZE)
        except PermissionError as e:
            raise ProcessUnreadable(pid, e.strerror or "pagemap not readable") from None
        except OSError as e:
            if e.errno in _GONE or isinstance(e, ProcessLookupError):
                raise ProcessGone(pid) from None
            raise ProcessUnreadable(pid, e.strerror or str(e)) from None
        if not data:
            raise ProcessGone(pid)  # the mm is gone: the process exited
        return pm.parse_pagemap(data[:len(data) - len(data) % pm.ENTRY_SIZE])

    def frame_table(self, pfns):
        """kpagecount and kpageflags of ``pfns`` (sorted, distinct), read in runs."""
        counts = self._read_kpages("kpagecount", parse_kpagecount, pfns)
        try:
            flags = self._read_kpages("kpageflags", parse_kpageflags, pfns)
        except ExactUnavailable:
            flags = None
        self.flags_available = flags is not None
        return FrameTable(pfns, counts, flags)

    def _read_kpages(self, name, parse, pfns):
        out = np.zeros(len(pfns), dtype=np.uint64)
        if not len(pfns):
            return out
        breaks = np.flatnonzero(np.diff(pfns) > _KPAGE_GAP) + 1
        bounds = np.concatenate(([0], breaks, [len(pfns)]))
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            while a < b:
                lo = int(pfns[a])
                # the entries of this run that fit into one read
                stop = a + int(np.searchsorted(pfns[a:b], lo + _KPAGE_CHUNK))
                hi = int(pfns[stop - 1])
                try:
                    data = self.source.read_at(name, lo * 8, (hi - lo + 1) * 8)
                except FileNotFoundError:
                    raise ExactUnavailable(f"{self.source.description}: no /proc/{name} "
                                           "(kernel without CONFIG_PROC_PAGE_MONITOR)") from None
                except PermissionError:
                    raise ExactUnavailable(f"{self.source.description}: /proc/{name} is not "
                                           "readable (exact accounting needs root)") from None
                values = parse(data[:len(data) - len(data) % 8])
                want = (pfns[a:stop] - np.uint64(lo)).astype(np.intp)
                ok = want < len(values)  # a short read past the end of RAM reads as 0
                out[a:stop][ok] = values[want[ok]]
                a = stop
        return out


class CaptureReader:
    """Frames from a capture's ``N/frames`` and ``kpages.sparse`` members.

    Works on any source holding them (an archive, an extracted directory).
    It answers exactly what :class:`PagemapReader` answered when the members
    were written, so accounting offline gives the live figures.
    """

    def __init__(self, source, kpages=None):
        self.source = source
        if kpages is None:
            kpages = source.read_optional(KPAGES_MEMBER)
            if kpages is None:
                raise ExactUnavailable(f"{source.description}: the capture holds no page frame "
                                       f"data ({KPAGES_MEMBER}); capture it with exact data, as root")
        self.page_size, self._table = decode_kpages(kpages)
        self.flags_available = self._table.flags is not None

    def check(self):
        pass

    def process_frames(self, pid, mappings):
        data = self.source.read_optional(f"{pid}/{FRAMES_MEMBER}")
        if data is None:
            raise ProcessUnreadable(pid, "no page frame data in capture")
        frames = decode_frames(pid, data)
        return frames.select(m.start for m in mappings)

    def frame_table(self, pfns):
        table = self._table
        at = np.searchsorted(table.pfns, pfns)
        at[at == len(table.pfns)] = 0
        found = table.pfns[at] == pfns if len(table.pfns) else np.zeros(len(pfns), bool)
        counts = np.where(found, table.counts[at] if len(table.pfns) else 0, 0).astype(np.uint64)
        flags = None
        if table.flags is not None:
            flags = np.where(found, table.flags[at], 0).astype(np.uint64)
        return FrameTable(pfns, counts, flags)


def frame_reader(source, page_size=None):
    """The frame reader for ``source``: a capture's members if it has them, else its /proc files."""
    if source.is_live:
        return PagemapReader(source, page_size)
    kpages = source.read_optional(KPAGES_MEMBER)
    if kpages is None:
        try:
            source.read_at("kpagecount", 0, 8)
        except OSError:
            pass
        else:
            return PagemapReader(source, page_size)  # a proc-like tree with the raw files
    return CaptureReader(source, kpages)


# ---------------------------------------------------------------- capture members

def _delta(values):
    return np.diff(values, prepend=np.uint64(0)) if len(values) else values


def _undelta(values):
    return np.cumsum(values, dtype=np.uint64) if len(values) else values


def _le(values):
    return np.ascontiguousarray(values, dtype="<u8").tobytes()


def encode_frames(frames, page_size):
    """The ``N/frames`` member for one process (format in the module's capture notes)."""
    head = np.array([len(frames.segments), len(frames.pfns), len(frames.swap)], dtype="<u8")
    return b"".join((_FRAMES_MAGIC, _le([page_size]), head.tobytes(),
                     _le(frames.segments.reshape(-1)), _le(_delta(frames.pfns)),
                     _le(_delta(frames.swap))))


def _words(data, name):
    if len(data) % 8 or len(data) < 8:
        raise CaptureError(f"capture member {name} is truncated")
    return np.frombuffer(data, dtype="<u8").astype(np.uint64)


def decode_frames(pid, data):
    """A :class:`ProcessFrames` from an ``N/frames`` member; CaptureError if malformed."""
    name = f"{pid}/{FRAMES_MEMBER}"
    if data[:8] != _FRAMES_MAGIC:
        raise CaptureError(f"capture member {name} is not page frame data")
    words = _words(data[8:], name)
    if len(words) < 4:
        raise CaptureError(f"capture member {name} is truncated")
    nseg, npresent, nswap = (int(w) for w in words[1:4])
    body = words[4:]
    if len(body) != nseg * 3 + npresent + nswap:
        raise CaptureError(f"capture member {name} is truncated or corrupt")
    segments = body[:nseg * 3].reshape(nseg, 3)
    if int(segments[:, 1].sum()) != npresent or int(segments[:, 2].sum()) != nswap:
        raise CaptureError(f"capture member {name} is inconsistent")
    pfns = _undelta(body[nseg * 3:nseg * 3 + npresent])
    swap = _undelta(body[nseg * 3 + npresent:])
    return ProcessFrames(pid, pfns, swap, segments)


def encode_kpages(table, page_size):
    """The ``kpages.sparse`` member: kpagecount and kpageflags of the frames used."""
    has_flags = table.flags is not None
    head = np.array([page_size, len(table.pfns), int(has_flags)], dtype="<u8")
    parts = [_KPAGES_MAGIC, head.tobytes(), _le(_delta(table.pfns)), _le(table.counts)]
    if has_flags:
        parts.append(_le(table.flags))
    return b"".join(parts)


def decode_kpages(data):
    """(page size, :class:`FrameTable`) from a ``kpages.sparse`` member."""
    if data[:8] != _KPAGES_MAGIC:
        raise CaptureError(f"capture member {KPAGES_MEMBER} is not page frame data")
    words = _words(data[8:], KPAGES_MEMBER)
    if len(words) < 3:
        raise CaptureError(f"capture member {KPAGES_MEMBER} is truncated")
    page_size, n, has_flags = (int(w) for w in words[:3])
    body = words[3:]
    if has_flags not in (0, 1) or len(body) != n * (2 + has_flags) or page_size < 1024:
        raise CaptureError(f"capture member {KPAGES_MEMBER} is truncated or corrupt")
    pfns = _undelta(body[:n])
    if n > 1 and not (np.diff(pfns.astype(np.int64)) > 0).all():
        raise CaptureError(f"capture member {KPAGES_MEMBER} is corrupt (frames out of order)")
    flags = body[2 * n:3 * n] if has_flags else None
    return page_size, FrameTable(pfns, body[n:2 * n], flags)


def exact_capture_members(source, pids, mappings_by_pid, page_size=None):
    """Members to add to a capture of ``source`` so it can be accounted exactly offline.

    Returns {member name: bytes}: ``N/frames`` for each process of ``pids``
    that could be read and ``kpages.sparse`` for the frames they map.
    Raises :class:`ExactUnavailable` as :func:`account` does.
    """
    acc = account(source, {pid: mappings_by_pid[pid] for pid in pids if pid in mappings_by_pid},
                  page_size=page_size, keep_frames=True)
    return acc.capture_members()


# ---------------------------------------------------------------- accounting

def _concat(parts):
    if not parts:
        return np.zeros(0, dtype=np.uint64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _unique_counts(values, in_place=False):
    """Sorted distinct values and how often each occurs (None when all occur once)."""
    if not len(values):
        return values, None
    if in_place:
        values.sort()
        s = values
    else:
        s = np.sort(values)
    first = np.empty(len(s), dtype=bool)
    first[0] = True
    np.not_equal(s[1:], s[:-1], out=first[1:])
    if first.all():
        return s, None
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, len(s))).astype(np.uint32)
    return s[starts], counts


def _blocks_of(u):
    """The distinct blocks (PFN >> _BLOCK_SHIFT) of the sorted PFNs ``u``."""
    shift = np.uint64(_BLOCK_SHIFT)
    lo, hi = int(u[0] >> shift), int(u[-1] >> shift)
    if hi - lo < _DIRECT_BLOCKS:  # bisect for each candidate block: no array as big as u
        candidates = np.arange(lo, hi + 1, dtype=np.uint64)
        starts = np.searchsorted(u, candidates << shift)
        return candidates[np.diff(np.append(starts, len(u))) > 0]
    b = u >> shift
    return b[_runs(b)[0]]


def _runs(sorted_values):
    """Start index of each run of equal values in a sorted array, and the run lengths."""
    first = np.empty(len(sorted_values), dtype=bool)
    if len(sorted_values):
        first[0] = True
        np.not_equal(sorted_values[1:], sorted_values[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return starts, np.diff(np.append(starts, len(sorted_values)))


def account(source, mappings_by_pid, *, page_size=None, keep_frames=False):
    """Exact accounting of the processes in ``mappings_by_pid`` ({pid: [Mapping]}).

    Only the pagemap ranges of the mappings given are read (so a -M filter
    restricts the accounting to those mappings), then kpagecount/kpageflags
    for the frames found.  Processes that exit meanwhile, or whose pagemap
    cannot be read, are left out and listed in ``skipped``.  Raises
    :class:`ExactUnavailable` without root, or without kernel support.
    """
    reader = frame_reader(source, page_size)
    reader.check()
    frames, skipped = {}, {}
    for pid, mappings in mappings_by_pid.items():
        try:
            frames[pid] = reader.process_frames(pid, mappings)
        except ProcessGone:
            skipped[pid] = "gone"
        except ProcessUnreadable as e:
            skipped[pid] = e.reason
    if isinstance(reader, PagemapReader):
        present = [f.pfns for f in frames.values() if len(f.pfns)]
        if present and not any(p.any() for p in present):
            raise ExactUnavailable(
                f"{source.description}: pagemap shows no physical frame numbers: since Linux "
                "4.0 only CAP_SYS_ADMIN sees them (run as root)")
    acc = ExactAccounting(frames, reader.frame_table, reader.page_size, keep_frames=keep_frames)
    acc.skipped = skipped
    return acc


class ExactAccounting:
    """Exact figures for processes and any grouping of them.

    Build it with :func:`account`; or directly from ``frames``
    ({pid: ProcessFrames}) and ``table``, a :class:`FrameTable` covering
    their frames or a function from a sorted array of distinct PFNs to one
    (a reader's ``frame_table``).  Unless ``keep_frames`` (needed for
    :meth:`capture_members`), the frames' PFN arrays are sorted in place and
    not kept: memory peaks near 12 bytes per present page.

    Internally every frame gets a dense index (PFNs grouped in blocks of
    4096, only blocks in use), so per-frame arrays are indexed directly and
    a grouping costs time proportional to its processes' pages.
    """

    def __init__(self, frames, table, page_size, *, keep_frames=False):
        self.page_size = page_size
        self.page_kib = page_size // 1024
        self.skipped = {}
        self.flags_available = None
        self._frames = dict(frames) if keep_frames else None
        # Fresh memory is costly (page faults): sort in place where we may, and never
        # make whole-array temporaries we can avoid.
        uniques, blocks = {}, []
        for pid, f in frames.items():
            u, c = _unique_counts(f.pfns, in_place=not keep_frames)
            uniques[pid] = (u, c)
            if len(u):
                blocks.append(_blocks_of(u))
        self._blocks = np.unique(np.concatenate(blocks)) if blocks else np.zeros(0, np.uint64)
        size = len(self._blocks) << _BLOCK_SHIFT
        self._itype = np.uint32 if size < 1 << 32 else np.int64
        self._proc = {}
        mark = np.zeros(size, dtype=bool)
        for pid in list(uniques):
            u, c = uniques.pop(pid)
            d = self._dense(u)
            del u
            mark[d] = True
            swap = np.unique(frames[pid].swap)
            self._proc[pid] = (d, c, swap)
        used = np.flatnonzero(mark)
        del mark
        pfns = self._pfn_of(used)
        if not isinstance(table, FrameTable):
            table = table(pfns)
        self.table = table if keep_frames else None
        self.flags_available = table.flags is not None
        self._count = np.zeros(size, dtype=np.uint32)
        self._fill_counts(table)
        self._acc = np.zeros(size, dtype=np.uint32)

    # dense frame index
    def _dense(self, pfns_sorted):
        """Dense indices of sorted PFNs whose blocks are in use (all of ours are)."""
        u = pfns_sorted
        if not len(u):
            return np.zeros(0, dtype=self._itype)
        shift = np.uint64(_BLOCK_SHIFT)
        first = int(np.searchsorted(self._blocks, u[0] >> shift))
        last = int(np.searchsorted(self._blocks, u[-1] >> shift, side="right"))
        blocks = self._blocks[first:last]
        starts = np.searchsorted(u, blocks << shift)
        lengths = np.diff(np.append(starts, len(u)))
        out = np.empty(len(u), dtype=self._itype)
        np.bitwise_and(u, np.uint64(_BLOCK_MASK), out=out, casting="unsafe")
        bases = (np.arange(first, last, dtype=np.int64) << _BLOCK_SHIFT).astype(self._itype)
        if len(bases) == 1:
            out += bases[0]
        else:
            out += np.repeat(bases, lengths)
        return out

    def _pfn_of(self, dense):
        dense = dense.astype(np.int64)
        return ((self._blocks[dense >> _BLOCK_SHIFT] << np.uint64(_BLOCK_SHIFT))
                | (dense & _BLOCK_MASK).astype(np.uint64))

    def _fill_counts(self, table):
        pfns, counts = table.pfns, table.counts
        if not len(pfns) or not len(self._blocks):
            return
        b = pfns >> np.uint64(_BLOCK_SHIFT)
        at = np.searchsorted(self._blocks, b)
        at[at == len(self._blocks)] = 0
        inside = self._blocks[at] == b  # a capture's table may hold frames we do not use
        counts = np.minimum(counts, np.uint64(np.iinfo(np.uint32).max)).astype(np.uint32)
        if table.flags is not None:
            counts[(table.flags & np.uint64(_UNOWNED)) != 0] = 0
        d = self._dense(pfns[inside])
        self._count[d] = counts[inside]

    # per group
    @property
    def pids(self):
        """The pids accounted, ascending."""
        return sorted(self._proc)

    def _group_frames(self, pids):
        """(distinct dense frames, mappings of each inside the group) for ``pids``."""
        members = [self._proc[p] for p in dict.fromkeys(pids) if p in self._proc]
        if len(members) == 1:
            d, c, _ = members[0]
            return d, (c if c is not None else np.ones(len(d), dtype=np.uint32)), members
        acc = self._acc
        fresh = []
        for d, c, _ in members:
            fresh.append(d[acc[d] == 0])
            acc[d] += c if c is not None else np.uint32(1)
        frames = np.concatenate(fresh) if fresh else np.zeros(0, dtype=self._itype)
        inside = acc[frames]
        acc[frames] = 0
        return frames, inside, members

    def _figures(self, pids):
        members = [self._proc[p] for p in dict.fromkeys(pids) if p in self._proc]
        if len(members) == 1 and members[0][1] is None:
            # one process, every frame mapped once in it: the common case, made cheap
            k = self._count[members[0][0]]
            k = k[k > 0]
            pages = len(k)
            uss = int(np.count_nonzero(k == 1))
            pss = float(np.reciprocal(k, dtype=np.float64).sum()) if pages else 0.0
        else:
            frames, inside, members = self._group_frames(pids)
            k = self._count[frames]
            owned = k > 0
            inside = inside[owned]
            k = np.maximum(k[owned], inside)  # mapped since kpagecount was read
            pages = len(k)
            uss = int(np.count_nonzero(inside >= k))
            pss = float(np.sum(inside / k)) if pages else 0.0
        swaps = [s for _, _, s in members if len(s)]
        nswap = len(swaps[0]) if len(swaps) == 1 else (len(np.unique(np.concatenate(swaps)))
                                                      if swaps else 0)
        pk = self.page_kib
        return ExactFigures(pages * pk, pss * pk, uss * pk, (pages - uss) * pk, nswap * pk)

    def process(self, pid):
        """:class:`ExactFigures` of one process (KeyError if it was not accounted)."""
        if pid not in self._proc:
            raise KeyError(pid)
        return self._figures([pid])

    def processes(self):
        """{pid: ExactFigures} for every process accounted."""
        return {pid: self._figures([pid]) for pid in self.pids}

    def groups(self, grouping):
        """{key: ExactFigures} for ``grouping`` ({key: iterable of pids}).

        Groups may overlap; each is accounted on its own.  Pids not
        accounted (gone, unreadable, unknown) are ignored.
        """
        return {key: self._figures(list(pids)) for key, pids in grouping.items()}

    def total(self):
        """The figures of all processes accounted as one group (distinct frames system-wide)."""
        return self._figures(self.pids)

    def shared_with(self, selection_pids, all_pids=None, *, grouping=None):
        """Who maps the frames the selection shares: a :class:`SharedWith`.

        Holders are the processes of ``all_pids`` (default: all accounted)
        outside the selection, by pid; or, with ``grouping`` ({key: pids}),
        those groups (their members outside the selection).
        """
        selection = set(selection_pids)
        frames, inside, _ = self._group_frames(list(selection))
        k = self._count[frames]
        shared = (k > 0) & (inside < np.maximum(k, inside))
        frames = frames[shared]
        missing = (k[shared] - inside[shared]).astype(np.int64)
        pk = self.page_kib
        others = [p for p in dict.fromkeys(self.pids if all_pids is None else all_pids)
                  if p in self._proc and p not in selection]
        if grouping is None:
            holder_groups = {p: [p] for p in others}
        else:
            holder_groups = {key: [p for p in pids if p in self._proc and p not in selection]
                             for key, pids in grouping.items()}
        mark = np.zeros(len(self._count), dtype=bool)
        mark[frames] = True
        acc = self._acc
        for p in others:
            d, c, _ = self._proc[p]
            hit = mark[d]
            acc[d[hit]] += c[hit] if c is not None else np.uint32(1)
        seen = np.zeros(len(self._count), dtype=np.int32)
        holders = {}
        for n, (key, pids) in enumerate(holder_groups.items(), 1):
            held = 0
            for p in dict.fromkeys(pids):
                d = self._proc[p][0]
                h = d[mark[d]]
                new = h[seen[h] != n]
                seen[new] = n
                held += len(new)
            if held:
                holders[key] = held * pk
        elsewhere = int(np.count_nonzero(acc[frames].astype(np.int64) < missing))
        acc[frames] = 0
        holders = dict(sorted(holders.items(), key=lambda kv: -kv[1]))
        return SharedWith(len(frames) * pk, holders, elsewhere * pk)

    # capture
    def capture_members(self):
        """Capture members holding exactly the data this accounting used.

        Needs ``keep_frames=True`` at construction.
        """
        if self._frames is None:
            raise ValueError("capture_members needs ExactAccounting(..., keep_frames=True)")
        members = {f"{pid}/{FRAMES_MEMBER}": encode_frames(f, self.page_size)
                   for pid, f in sorted(self._frames.items())}
        members[KPAGES_MEMBER] = encode_kpages(self.table, self.page_size)
        return members


def account_snapshot(snapshot):
    """Exact accounting of a snapshot's processes (their mappings after -M), or ExactUnavailable."""
    mappings = {p.pid: p.mappings for p in snapshot.processes if p.mappings}
    return account(snapshot.source, mappings)


def sharing_of_selection(snapshot, selection, exclude=None):
    """(selected pids, SharedWith): what the processes ``selection`` picks share, and with whom.

    ``exclude``: a pid never selected (smem's own, whose command line holds the pattern).
    """
    selected = [p.pid for p in snapshot.processes
                if p.mappings and p.pid != exclude and selection.wants(p.name, p.cmdline, p.user)]
    if not selected:
        raise SmemError("--shared-with: no process matches the selection")
    return selected, snapshot.exact.shared_with(selected)
