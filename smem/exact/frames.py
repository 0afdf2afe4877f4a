"""What exact accounting works on: each process's frames, the frames' map counts, and limits.

Documentation/admin-guide/mm/pagemap.rst for the bits; smem/exact/__init__.py for the method.
"""

import numpy as np

from ..errors import CaptureError, SmemError
from ..parsers.kpageflags import FLAGS
from ..parsers.pagemap import SWAPPED

__all__ = ["ExactUnavailable", "ProcessFrames", "DistinctFrames", "FrameTable", "page_size_of"]

#: The capture member holding kpagecount/kpageflags of the frames the processes map.
KPAGES_MEMBER = "kpages.sparse"
FRAMES_MEMBER = "frames"   # per process: N/frames

_FRAMES_MAGIC = b"SMEMFRM1"
_KPAGES_MAGIC = b"SMEMKPG1"

_PAGEMAP_CHUNK = 1 << 18   # pagemap entries per read (2 MiB)
_PAGEMAP_GAP = 64          # read across holes up to this many pages between mappings
_KPAGE_CHUNK = 1 << 18     # kpagecount entries per read
_KPAGE_GAP = 32            # read across this many unneeded PFNs rather than make another read
_BLOCK_SHIFT = 12          # the dense frame index maps PFNs in blocks of 4096 frames
_BLOCK_MASK = (1 << _BLOCK_SHIFT) - 1
_UNOWNED = (1 << FLAGS["ZERO_PAGE"]) | (1 << FLAGS["HUGE"])
_SWAPPED_ONLY = np.int64(SWAPPED)  # an entry as int64 at least this: swapped, not present (bit 63 clear)
_DIRECT_BLOCKS = 1 << 16   # find a process's blocks by bisection when its PFNs span fewer


#: The page sizes Linux has: a power of two from 1 KiB (some old ARM) to 1 MiB (a
#: generous bound: 4, 16 and 64 KiB are today's).
MIN_PAGE_SIZE, MAX_PAGE_SIZE = 1 << 10, 1 << 20


def page_size_of(value, where):
    """``value`` (int or text) as a page size; CaptureError naming ``where`` if it is none."""
    try:
        size = int(value) if len(str(value)) <= 20 else 0
    except (TypeError, ValueError):
        size = 0
    if not (MIN_PAGE_SIZE <= size <= MAX_PAGE_SIZE and size & (size - 1) == 0):
        raise CaptureError(f"{where}: page size {str(value)[:20]!r} is not one (a power of two from "
                           "1 KiB to 1 MiB): a damaged capture")
    return size


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


class DistinctFrames:
    """A process's frames as the accounting takes them: ``pfns`` each distinct frame once,
    ascending (uint32 where every PFN fits, else uint64); ``counts`` how many times the process
    maps each (uint32), or None where it maps every one once; ``swap`` its distinct swap slots;
    ``own`` the frames it maps that no other process mapped when it was read (pagemap's
    "exclusively mapped" bit), distinct and ascending, left out of ``pfns``: each is the
    process's USS in every group it is in, so neither its map count nor its rank is needed
    (:func:`settle_own` lists again those another process maps by the time it is read).

    What a worker sends back (smem.exact.scanned): a few bytes a frame, no mapping boundaries.
    """

    __slots__ = ("pid", "pfns", "counts", "swap", "scanned", "own")

    def __init__(self, pid, pfns, counts, swap, scanned=False, own=None):
        self.pid = pid
        self.pfns = pfns
        self.counts = counts
        self.swap = swap
        self.scanned = scanned  # found by PAGEMAP_SCAN, which leaves the zero page out
        self.own = np.zeros(0, np.uint32) if own is None else own

    def __reduce__(self):
        """Pickled as raw bytes: a worker sends one for each process, and numpy's own pickling of
        its three arrays costs several times as much (unpickled, they are writable: ranked in place)."""
        return _distinct_frames, (self.pid, _raw(self.pfns), _raw(self.counts), _raw(self.swap), self.scanned,
                                  _raw(self.own))

    @classmethod
    def of(cls, pid, pfns, swap, scanned=False, own=None):
        """From pagemap's frames (``pfns``, any order, repeated where mapped twice; sorted in
        place) and swap slots."""
        if len(pfns) and int(pfns.max()) < 1 << 32:
            pfns = pfns.astype(np.uint32)  # (half the bytes to sort and to send)
        pfns.sort()
        counts = None
        if len(pfns) > 1:
            first = np.empty(len(pfns), dtype=bool)
            first[0] = True
            np.not_equal(pfns[1:], pfns[:-1], out=first[1:])
            if not first.all():
                starts = np.flatnonzero(first)
                counts = np.diff(np.append(starts, len(pfns))).astype(np.uint32)
                pfns = pfns[starts]
        return cls(pid, pfns, counts, np.unique(swap) if len(swap) else swap, scanned, own)

    def distinct(self, in_place=False):
        return self.pfns, self.counts

    def __repr__(self):
        return f"DistinctFrames({self.pid}, {len(self.pfns)} frames, {len(self.own)} its own, {len(self.swap)} swapped)"


def _raw(array):
    return None if array is None else (array.dtype.str, bytearray(np.ascontiguousarray(array).data))


def _distinct_frames(pid, pfns, counts, swap, scanned, own):
    """The DistinctFrames that __reduce__ took apart."""
    arrays = [None if raw is None else np.frombuffer(raw[1], raw[0]) for raw in (pfns, counts, swap, own)]
    return DistinctFrames(pid, *arrays[:3], scanned, arrays[3])


def settle_own(frames):
    """{pid: how many frames it alone maps} for ``frames`` (pid: DistinctFrames or
    ProcessFrames), having moved back into a process's listed frames (each mapped once) every
    frame it counted as its own that another process lists or also counts: the processes are
    read one after another, and a frame one maps alone when it is read can be mapped by another
    by the time that one is read.  Listed, the frame's map count (read at the end) splits it."""
    owners = [f for f in frames.values() if isinstance(f, DistinctFrames) and len(f.own)]
    if not owners:
        return {}
    listed = [f.pfns for f in frames.values() if f is not None and f.pfns is not None and len(f.pfns)]
    owned = [f.own for f in owners]
    top = max(int(p.max()) for p in listed + owned)
    if top + 1 <= 8 * sum(map(len, listed + owned)) + (1 << 24):
        # one byte a PFN up to the largest (a few MiB: RAM / page size), cheaper than sorting
        seen = np.zeros(top + 1, dtype=np.uint8)
        for pfns in listed:
            seen[pfns] = 2
        for own in owned:
            seen[own] += 1  # (distinct within a process: each frame once)
        contested = lambda own: seen[own] >= 2
    else:  # frames too spread (RAM at high physical addresses): sorted
        own = np.sort(np.concatenate([o.astype(np.uint64) for o in owned]))
        twice = own[1:][own[1:] == own[:-1]]
        if listed:
            listed = np.unique(np.concatenate([p.astype(np.uint64) for p in listed]))
            at = np.minimum(np.searchsorted(listed, own), len(listed) - 1)
            twice = np.union1d(twice, own[listed[at] == own])
        contested = lambda own: np.isin(own, twice, assume_unique=True)
    for f in owners:
        back = contested(f.own)
        if back.any():
            moved, f.own = f.own[back].astype(np.uint64), f.own[~back]
            merged = DistinctFrames.of(f.pid, np.concatenate([_repeated(f.pfns, f.counts), moved]),
                                       np.zeros(0, np.uint64))
            f.pfns, f.counts = merged.pfns, merged.counts
    return {f.pid: len(f.own) for f in owners if len(f.own)}


def _repeated(pfns, counts):
    """Each frame as many times as the process maps it (what DistinctFrames.of counts again)."""
    pfns = pfns.astype(np.uint64)
    return pfns if counts is None else np.repeat(pfns, counts)


class FrameTable:
    """kpagecount (and kpageflags, or None) for ``pfns``, a sorted array of distinct PFNs."""

    __slots__ = ("pfns", "counts", "flags")

    def __init__(self, pfns, counts, flags):
        self.pfns = pfns
        self.counts = counts
        self.flags = flags


def _concat(parts):
    if not parts:
        return np.zeros(0, dtype=np.uint64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
