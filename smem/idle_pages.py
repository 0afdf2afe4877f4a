"""--wss through idle page tracking: which of the processes' pages were used, frame by frame.

Documentation/admin-guide/mm/idle_page_tracking.rst: find each process's present pages' frames
(/proc/PID/pagemap, ranges from /proc/PID/maps), mark them idle in
/sys/kernel/mm/page_idle/bitmap, wait, and read the bitmap back: a frame still idle was not
used.  Unlike clear_refs, marking pages idle leaves reclaim's view of them as it was (the kernel
keeps their accessed state in a Young flag it reads as an accessed bit).

Only user pages on an LRU list can be marked (/proc/kpageflags LRU); a large folio is tracked by
its head page alone (kpageflags COMPOUND_HEAD / COMPOUND_TAIL), so each page counts as used when
its folio's head was.  After the wait the pagemap is read again: a page swapped out meanwhile is
not in the working set (as smaps' Referenced would not count it), one faulted in meanwhile was
never marked and counts as used.  A page that cannot be tracked (not on an LRU list; a tail page
whose head is mapped by none of the processes measured) is counted in neither figure.

``wss`` is the pages used, one per mapped address as smaps counts them; ``wsspss`` each used
page divided by its map count (/proc/kpagecount), so a page two processes map is half in each,
as PSS splits it.  Needs numpy (the ``exact`` extra) and root.
"""

import os

import numpy as np

from .parsers.kpagecount import parse_kpagecount
from .parsers.kpageflags import FLAGS, parse_kpageflags
from .parsers.maps import parse_maps_ranges
from .parsers.page_idle_bitmap import PAGES_PER_WORD, WORD_SIZE, idle_among, idle_bitmap_words
from .parsers import pagemap as pm
from .sources.proc_files import address_space_dir

__all__ = ["IdleTracker", "folio_heads", "working_set_figures"]

_PAGEMAP_CHUNK = 1 << 16   # pagemap entries per read (512 KiB)
_RUN_GAP = 512             # read across this many unneeded PFNs rather than seek
_RUN_MAX = 1 << 16         # entries per read of kpageflags, kpagecount or the bitmap
_ADDRESSES = 1 << 64

_LRU = np.uint64(1 << FLAGS["LRU"])
_HEAD = np.uint64(1 << FLAGS["COMPOUND_HEAD"])
_TAIL = np.uint64(1 << FLAGS["COMPOUND_TAIL"])


def folio_heads(pfns, flags):
    """The head PFN of each of ``pfns`` (sorted, distinct) given their kpageflags ``flags``: a
    tail page's head is the nearest head page below it with every frame between them among
    ``pfns`` (a folio's frames are consecutive); a page that is no tail is its own head.  A tail
    whose head is not among ``pfns`` has none: -1 (as int64)."""
    pfns = np.asarray(pfns, dtype=np.uint64)
    heads = pfns.astype(np.int64)
    tail = (flags & _TAIL) != 0
    if not tail.any():
        return heads
    index = np.arange(len(pfns))
    # the last page at or before each that starts a folio (a head, or a page that is no tail)
    starts = np.where(~tail, index, -1)
    last_start = np.maximum.accumulate(starts)
    # ... reached through consecutive frames: no gap in the PFNs between it and the page
    gap = np.concatenate(([True], np.diff(pfns) != 1))
    last_gap = np.maximum.accumulate(np.where(gap, index, -1))
    found = tail & (last_start >= 0) & (last_start >= last_gap)
    found &= (flags[np.maximum(last_start, 0)] & _HEAD) != 0
    heads[tail] = -1
    heads[found] = pfns[last_start[found]].astype(np.int64)
    return heads


def working_set_figures(pfns, used, map_counts, page_kib):
    """(wss, wsspss) in KiB of one process: ``pfns`` its present pages (one per address, a frame
    mapped twice appears twice), ``used`` which were used (bool array), ``map_counts`` their
    kpagecount.  A used page's wsspss is 1 / its map count (a count of 0, a page the kernel does
    not count, is the process's alone)."""
    used = np.asarray(used, dtype=bool)
    counts = np.asarray(map_counts, dtype=np.float64)[used]
    shares = 1.0 / np.maximum(counts, 1.0)
    return int(used.sum()) * page_kib, int(round(float(shares.sum()) * page_kib))


class IdleTracker:
    """Idle page tracking of processes under ``proc`` (a /proc) through ``bitmap`` (its
    /sys/kernel/mm/page_idle/bitmap)."""

    def __init__(self, proc, bitmap, page_size):
        self.proc, self.bitmap = proc, bitmap
        self.page_size = page_size

    def open_bitmap(self):
        """The bitmap opened for reading and writing: OSError where it cannot be (absent, read
        only, not permitted)."""
        return os.open(self.bitmap, os.O_RDWR)

    def mark(self, pids):
        """Mark every trackable page of ``pids`` idle."""
        pages = [self._present(pid) for pid in pids]
        pfns = _distinct(np.concatenate([p for p in pages if p is not None] or [np.zeros(0, np.uint64)]))
        heads, trackable = self._heads(pfns)
        fd = self.open_bitmap()
        try:
            for word, data in idle_bitmap_words(heads[trackable].astype(np.uint64)):
                os.pwrite(fd, data, word * WORD_SIZE)
        finally:
            os.close(fd)

    def measure(self, pids):
        """{pid: (wss, wsspss) KiB} of ``pids`` now that they were marked (a process gone is left
        out)."""
        pages = {pid: self._present(pid) for pid in pids}
        pages = {pid: p for pid, p in pages.items() if p is not None}
        pfns = _distinct(np.concatenate(list(pages.values()) or [np.zeros(0, np.uint64)]))
        heads, trackable = self._heads(pfns)
        tracked_heads = _distinct(heads[trackable].astype(np.uint64))
        idle_heads = tracked_heads[self._idle(tracked_heads)]
        used = trackable & ~_among(heads.astype(np.uint64), idle_heads)
        counts = self._read_kpages("kpagecount", parse_kpagecount, pfns)
        page_kib = self.page_size // 1024
        figures = {}
        for pid, present in pages.items():
            at = np.searchsorted(pfns, present)
            figures[pid] = working_set_figures(present, used[at], counts[at], page_kib)
        return figures

    def _present(self, pid):
        """The PFNs of ``pid``'s present pages, one per address; None if it is gone or unreadable."""
        where = address_space_dir(self.proc, pid)  # (a Zl's leader maps nothing)
        try:
            with open(f"{where}/maps", "rb") as f:
                ranges = parse_maps_ranges(f.read())
            fd = os.open(f"{where}/pagemap", os.O_RDONLY)
        except OSError:
            return None
        parts = []
        try:
            for start, end in ranges:
                if end > _ADDRESSES:
                    continue
                first, stop = start // self.page_size, -(-end // self.page_size)
                for at in range(first, stop, _PAGEMAP_CHUNK):
                    count = min(_PAGEMAP_CHUNK, stop - at)
                    data = os.pread(fd, count * pm.ENTRY_SIZE, at * pm.ENTRY_SIZE)
                    entries = pm.parse_pagemap(data[:len(data) - len(data) % pm.ENTRY_SIZE])
                    parts.append(entries[(entries & pm.PRESENT) != 0] & pm.PFN_MASK)
        except OSError:
            return None
        finally:
            os.close(fd)
        return np.concatenate(parts) if parts else np.zeros(0, np.uint64)

    def _heads(self, pfns):
        """(head PFN of each, whether it can be tracked: its folio's head found and on an LRU list)."""
        flags = self._read_kpages("kpageflags", parse_kpageflags, pfns)
        heads = folio_heads(pfns, flags)
        trackable = heads >= 0
        head_flags = flags[np.searchsorted(pfns, np.maximum(heads, 0).astype(np.uint64))]
        return heads, trackable & ((head_flags & _LRU) != 0)

    def _idle(self, pfns):
        """Which of ``pfns`` (sorted, distinct) the bitmap says are idle."""
        idle = np.zeros(len(pfns), dtype=bool)
        if not len(pfns):
            return idle
        fd = self.open_bitmap()
        try:
            words = pfns // np.uint64(PAGES_PER_WORD)
            for lo, hi in _runs(words):
                first, last = int(words[lo]), int(words[hi - 1])
                data = os.pread(fd, (last - first + 1) * WORD_SIZE, first * WORD_SIZE)
                idle[lo:hi] = idle_among(pfns[lo:hi], data[:len(data) - len(data) % WORD_SIZE], first)
        finally:
            os.close(fd)
        return idle

    def _read_kpages(self, name, parse, pfns):
        """/proc/kpageflags or /proc/kpagecount of ``pfns`` (sorted, distinct), read in runs; a
        frame past the end of the file reads as 0."""
        out = np.zeros(len(pfns), dtype=np.uint64)
        if not len(pfns):
            return out
        fd = os.open(f"{self.proc}/{name}", os.O_RDONLY)
        try:
            for lo, hi in _runs(pfns):
                first, last = int(pfns[lo]), int(pfns[hi - 1])
                data = os.pread(fd, (last - first + 1) * 8, first * 8)
                values = parse(data[:len(data) - len(data) % 8])
                want = (pfns[lo:hi] - np.uint64(first)).astype(np.intp)
                ok = want < len(values)
                out[lo:hi][ok] = values[want[ok]]
        finally:
            os.close(fd)
        return out


def _distinct(values):
    """``values`` sorted, each once (np.unique, without its slower hashing path)."""
    values = np.sort(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if len(values) else values


def _among(values, sorted_set):
    """Bool array: which of ``values`` are in ``sorted_set`` (sorted, distinct)."""
    if not len(sorted_set):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values


def _runs(values):
    """[(lo, hi)] index ranges of sorted ``values`` to read in one go each: no gap above
    _RUN_GAP inside a run, none spanning _RUN_MAX or more."""
    values = np.asarray(values).astype(np.int64)
    breaks = (np.flatnonzero(np.diff(values) > _RUN_GAP) + 1).tolist()
    runs = []
    for lo, hi in zip([0, *breaks], [*breaks, len(values)]):
        while lo < hi:
            stop = lo + int(np.searchsorted(values[lo:hi], values[lo] + _RUN_MAX))
            runs.append((lo, stop))
            lo = stop
    return runs
