"""Frame readers: each process's frames and the map counts of the frames needed.

:class:`PagemapReader` reads a source's own pagemap/kpagecount/kpageflags (the live
/proc); :class:`CaptureReader` reads the compact members a capture holds.
"""

import mmap

import numpy as np

from ..errors import ProcessGone, ProcessUnreadable
from ..sources.base import PAGEMAP
from ..parsers import pagemap as pm
from ..parsers.kpagecount import parse_kpagecount
from ..parsers.kpageflags import parse_kpageflags
from ..parsers.smaps import parse_smaps_kept
from .frames import (FRAMES_MEMBER, KPAGES_MEMBER, _KPAGE_CHUNK, _KPAGE_GAP, _PAGEMAP_CHUNK,
                     _PAGEMAP_GAP, _SWAPPED_ONLY, _UNOWNED, ExactUnavailable, FrameTable, ProcessFrames, _concat,
                     page_size_of)
from .members import decode_frames, decode_kpages

__all__ = ["PagemapReader", "CaptureReader", "frame_reader", "COUNTERS_READ"]


#: Addresses are 64-bit: a mapping past them (a damaged smaps) is not read.
_ADDRESSES = 1 << 64

#: The smaps counters _is_empty reads of each mapping.
COUNTERS_READ = frozenset({"Rss", "Swap"})


def _is_empty(mapping):
    """True if smaps says the mapping has nothing in RAM or swap (no pagemap read needed)."""
    counters = getattr(mapping, "counters", None)
    if not counters or "Rss" not in counters:
        return False
    return counters["Rss"] == 0 and not counters.get("Swap")


def _mappings_of(source, pid):
    """Every mapping of ``pid`` with the counters _is_empty reads, from its smaps."""
    raw = source.read_process(pid, "smaps")
    try:
        return parse_smaps_kept(raw, COUNTERS_READ)[0]
    except ValueError:
        raise ProcessUnreadable(pid, "malformed smaps") from None


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
        # the data's machine's page size; this machine's only for this machine's data
        known = source.machine().page_size or (mmap.PAGESIZE if source.local else None)
        self.page_size = page_size or page_size_of(known, f"{source.description}: capture-info")
        self.flags_available = None
        self.skip_flags = False  # (owned_counts: nothing kpageflags would zero can be among the frames)

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

        ``mappings`` None: every mapping its smaps lists.  Raises ProcessGone if
        the process exited, ProcessUnreadable if its pagemap may not be read.
        """
        if mappings is None:
            mappings = _mappings_of(self.source, pid)
        ps = self.page_size
        spans = sorted((m.start // ps, -(-m.end // ps), m.start)
                       for m in mappings if _ADDRESSES > m.end > m.start and not _is_empty(m))
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
        data = self.source.read_process_at(pid, "pagemap", first * pm.ENTRY_SIZE, count * pm.ENTRY_SIZE)
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

    def owned_counts(self, pfns):
        """kpagecount of ``pfns`` (sorted, distinct) as uint32, 0 where kpageflags says no one
        owns the frame (the zero page, hugetlb; unless ``skip_flags`` says none can be among
        them): read in runs straight into the one array."""
        counts = np.zeros(len(pfns), dtype=np.uint32)
        top = np.uint64(np.iinfo(np.uint32).max)
        for a, stop, values in self._kpage_runs("kpagecount", parse_kpagecount, pfns):
            counts[a:stop] = np.minimum(values, top)
        if self.skip_flags:
            return counts
        try:
            for a, stop, values in self._kpage_runs("kpageflags", parse_kpageflags, pfns):
                counts[a:stop][(values & np.uint64(_UNOWNED)) != 0] = 0
            self.flags_available = True
        except ExactUnavailable:
            self.flags_available = False
        return counts

    def _read_kpages(self, name, parse, pfns):
        out = np.zeros(len(pfns), dtype=np.uint64)
        for a, stop, values in self._kpage_runs(name, parse, pfns):
            out[a:stop] = values
        return out

    def _kpage_runs(self, name, parse, pfns):
        """(first, stop, values of pfns[first:stop]) of ``name`` (kpagecount, kpageflags): one read
        for each run of PFNs less than _KPAGE_GAP apart (the kernel's time goes by the entry read,
        a read's by the call), the values of up to _KPAGE_CHUNK entries read picked out at once;
        a value past the end of RAM reads as 0."""
        if not len(pfns):
            return
        bounds = np.flatnonzero(np.diff(pfns) > _KPAGE_GAP) + 1
        firsts, stops = np.append(0, bounds), np.append(bounds, len(pfns))
        los, his = pfns[firsts].tolist(), pfns[stops - 1].tolist()
        batch, entries = [], 0  # batch: (first, stop, first PFN read, data read) of each read
        for a, b, lo, hi in zip(firsts.tolist(), stops.tolist(), los, his):
            while a < b:  # (a run longer than a read is read in pieces)
                stop = b if hi - lo < _KPAGE_CHUNK else a + int(np.searchsorted(pfns[a:b], lo + _KPAGE_CHUNK))
                last = hi if stop == b else int(pfns[stop - 1])
                batch.append((a, stop, lo, self._read_kpages_at(name, lo, last - lo + 1)))
                entries += last - lo + 1
                if entries >= _KPAGE_CHUNK:
                    yield _picked(batch, pfns, parse)
                    batch, entries = [], 0
                a, lo = stop, (int(pfns[stop]) if stop < b else lo)
        if batch:
            yield _picked(batch, pfns, parse)

    def _read_kpages_at(self, name, first, count):
        try:
            data = self.source.read_at(name, first * 8, count * 8)
        except FileNotFoundError:
            raise ExactUnavailable(f"{self.source.description}: no /proc/{name} "
                                   "(kernel without CONFIG_PROC_PAGE_MONITOR)") from None
        except PermissionError:
            raise ExactUnavailable(f"{self.source.description}: /proc/{name} is not "
                                   "readable (exact accounting needs root)") from None
        return data[:len(data) - len(data) % 8]


def _picked(batch, pfns, parse):
    """(first, stop, values of pfns[first:stop]) from the reads of ``batch`` (first, stop, first
    PFN read, data), which cover pfns[first:stop] in order; 0 where a read came back short."""
    first, stop = batch[0][0], batch[-1][1]
    values = parse(b"".join(data for _, _, _, data in batch))
    counts = [b - a for a, b, _, _ in batch]
    sizes = np.array([len(data) // 8 for _, _, _, data in batch], dtype=np.int64)
    at = (pfns[first:stop] - np.repeat(np.array([lo for _, _, lo, _ in batch], dtype=pfns.dtype), counts)).astype(np.int64)
    ok = at < np.repeat(sizes, counts)
    at += np.repeat(np.cumsum(sizes) - sizes, counts)
    got = np.zeros(stop - first, dtype=np.uint64)
    got[ok] = values[at[ok]]
    return first, stop, got


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
                                       f"data ({KPAGES_MEMBER}): smem capture --exact records it, as root "
                                       "(smemcap.sh and C smemcap do not)")
        self.page_size, self._table = decode_kpages(kpages)
        self.flags_available = self._table.flags is not None

    def check(self):
        pass

    def process_frames(self, pid, mappings):
        data = self.source.read_optional(f"{pid}/{FRAMES_MEMBER}")
        if data is None:
            raise ProcessUnreadable(pid, "no page frame data in capture")
        frames = decode_frames(pid, data)
        if mappings is None:  # every mapping the capture holds frames of
            return frames
        return frames.select(m.start for m in mappings if m.start < _ADDRESSES)

    def owned_counts(self, pfns):
        """What :meth:`PagemapReader.owned_counts` read live: the counts the capture holds."""
        table = self.frame_table(pfns)
        counts = np.minimum(table.counts, np.uint64(np.iinfo(np.uint32).max)).astype(np.uint32)
        if table.flags is not None:
            counts[(table.flags & np.uint64(_UNOWNED)) != 0] = 0
        return counts

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
    if source.has(PAGEMAP):
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
