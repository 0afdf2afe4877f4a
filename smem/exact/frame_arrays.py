"""Array steps of the exact accounting, each over numpy arrays of page frame numbers: distinct
frames and their counts, runs, the blocks frames fall in, a group's shares, and ranking every
process's frames in place (so no array of every PFN's rank is ever made)."""

import numpy as np

from .frames import _BLOCK_SHIFT, _DIRECT_BLOCKS

__all__ = ["unique_counts", "blocks_of", "runs", "SHARES_AT_ONCE", "shares", "freed_arrays_returned",
           "RANK_WINDOW", "rank_in_place"]


def unique_counts(values, in_place=False):
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


def blocks_of(u):
    """The distinct blocks (PFN >> _BLOCK_SHIFT) of the sorted PFNs ``u``."""
    shift = np.uint64(_BLOCK_SHIFT)
    lo, hi = int(u[0] >> shift), int(u[-1] >> shift)
    if hi - lo < _DIRECT_BLOCKS:  # bisect for each candidate block: no array as big as u
        candidates = np.arange(lo, hi + 1, dtype=np.uint64)
        starts = np.searchsorted(u, candidates << shift)
        return candidates[np.diff(np.append(starts, len(u))) > 0]
    b = u >> shift
    return b[runs(b)[0]]


def runs(sorted_values):
    """Start index of each run of equal values in a sorted array, and the run lengths."""
    first = np.empty(len(sorted_values), dtype=bool)
    if len(sorted_values):
        first[0] = True
        np.not_equal(sorted_values[1:], sorted_values[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return starts, np.diff(np.append(starts, len(sorted_values)))


#: Frames of a group summed at a time: the temporaries take about 24 bytes a frame.
SHARES_AT_ONCE = 1 << 18


def shares(k, inside):
    """(frames owned, of them mapped only inside the group, the group's share of them in
    pages) of frames with map counts ``k`` and mappings ``inside`` the group."""
    owned = k > 0
    inside = inside[owned]
    k = np.maximum(k[owned], inside)  # mapped since kpagecount was read
    return len(k), int(np.count_nonzero(inside >= k)), (float(np.sum(inside / k)) if len(k) else 0.0)


def raise_to_listed(count, procs, scratch):
    """Each mapped frame's ``count`` raised to the mappings ``procs`` ((dense frames, their
    mappings or None for one each, swap) a process) list of it, ``scratch`` zeros of its size
    (left so).  kpagecount, read after every pagemap, misses a mapping gone since (an exit, a
    page migrated: Documentation/admin-guide/mm/pagemap.rst); counted as listed, a group's share
    of a frame is the sum of its processes' shares, however they are grouped."""
    for d, c, _ in procs:
        scratch[d] += c if c is not None else np.uint32(1)
    np.maximum(count, scratch, out=count, where=count > 0)
    scratch[:] = 0


def freed_arrays_returned():
    """Have glibc's malloc give every array of 64 KiB or more its own mapping, returned to the
    system when freed.  By default the threshold rises to the largest block freed (up to 32
    MiB), and the accounting's temporaries (a few MiB each) then stay in the heap, fragmenting it
    between the per-process arrays: the peak grows by what they leave behind (mallopt(3))."""
    import ctypes
    try:
        ctypes.CDLL(None).mallopt(-3, 64 << 10)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):  # not glibc: its own policy
        pass


#: PFNs ranked at a time (rank_in_place): a window's ranks take 4 bytes a PFN.
RANK_WINDOW = 1 << 21


def rank_in_place(procs, top):
    """Replace each process's sorted distinct PFNs (``procs``: [(pid, DistinctFrames)], every PFN
    at most ``top``) by their ranks among all of them, in place; return all of them, ascending.
    A map of PFNs in use, then the ranks a window of PFNs at a time (no array of every PFN's
    rank), each process's PFNs consumed in order."""
    mark = np.zeros(top + 1, dtype=bool)
    for _, f in procs:
        mark[f.pfns] = True
    dtype = np.uint32 if top < 1 << 32 else np.uint64
    cursor = [0] * len(procs)
    parts, base = [], 0
    for lo in range(0, top + 1, RANK_WINDOW):
        window = mark[lo:lo + RANK_WINDOW]
        ranks = np.cumsum(window, dtype=np.uint32)
        ranks += np.uint32(base)
        ranks -= np.uint32(1)  # (wraps round before the first frame in use: never read)
        parts.append(np.flatnonzero(window).astype(dtype))
        parts[-1] += dtype(lo)
        base += len(parts[-1])
        hi = lo + RANK_WINDOW
        for i, (_, f) in enumerate(procs):
            pfns, at = f.pfns, cursor[i]
            if at == len(pfns) or int(pfns[at]) >= hi:
                continue
            stop = at + int(np.searchsorted(pfns[at:], hi))
            pfns[at:stop] = ranks[(pfns[at:stop] - dtype(lo)).astype(np.intp)]
            cursor[i] = stop
    return np.concatenate(parts) if parts else np.zeros(0, dtype)
