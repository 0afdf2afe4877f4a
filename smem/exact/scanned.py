"""Each process's frames read whole, where it is read: PAGEMAP_SCAN, then pagemap a range at a time.

Documentation/admin-guide/mm/pagemap.rst ("PAGEMAP_SCAN", Linux 6.7+): the ioctl on an open
/proc/PID/pagemap walks the process's page tables and returns ``struct page_region`` records
(start, end, categories) of the pages whose categories match: here those present or swapped
and not the zero page (``category_anyof_mask`` PAGE_IS_PRESENT | PAGE_IS_SWAPPED, PAGE_IS_PFNZERO
inverted and required).  It skips VM_PFNMAP areas, whose frames belong to no one.  So the
reading needs neither smaps (for which mappings hold anything) nor a pagemap read of a page that
holds nothing: one ioctl finds the ranges, one ``pread`` reads each.  ``struct pm_scan_arg`` is
twelve ``__u64``: size, flags, start, end, walk_end, vec, vec_len, max_pages,
category_inverted, category_mask, category_anyof_mask, return_mask.

Where the ioctl is missing (before 6.7: ENOTTY; or ``SMEM_PAGEMAP_SCAN=0`` in the environment,
which the tests use to force it), the ranges are the mappings smaps says hold something, read as
the reference reader (:class:`~smem.exact.readers.PagemapReader`) reads them.  Either way the
worker sends back each distinct frame once with how often the process maps it
(:class:`~smem.exact.frames.DistinctFrames`), never a page's Python object.
"""

import errno
import os
import struct

import numpy as np

from ..errors import ProcessGone, ProcessUnreadable, translated
from ..parsers import pagemap as pm
from .frames import DistinctFrames, _SWAPPED_ONLY

__all__ = ["read_distinct_frames", "collect_distinct_frames", "scan_enabled", "FramesPass", "distinct_python",
           "distinct_c"]

#: _IOWR('f', 16, struct pm_scan_arg): include/uapi/linux/fs.h
_ARG = struct.Struct("12Q")
PAGEMAP_SCAN = (3 << 30) | (_ARG.size << 16) | (ord("f") << 8) | 16
PAGE_IS_PRESENT = 1 << 3
PAGE_IS_SWAPPED = 1 << 4
PAGE_IS_PFNZERO = 1 << 5

_REGIONS = 1024   # page_region records per ioctl
_READ_ACROSS = 256  # read across up to this many pages between regions rather than make another read
#: pagemap's bit 56: the page is mapped exclusively (Documentation/admin-guide/mm/pagemap.rst)
_EXCLUSIVE = np.uint64(1 << 56)

#: The end of the user address space is the kernel's TASK_SIZE; a scan asked past it fails with
#: EFAULT, so the first of these that works is taken: 5-level and 4-level x86-64, arm64's
#: 52, 48, 42 and 39 bits, 32-bit.
_ADDRESS_BITS = (56, 52, 48, 47, 42, 39, 32)
_scan_end = {}        # page size -> the end found
_unsupported = []     # [reason] once the ioctl is known missing in this process


def scan_enabled():
    """False where ``SMEM_PAGEMAP_SCAN=0`` asks for the ranges from smaps (the fallback)."""
    return os.environ.get("SMEM_PAGEMAP_SCAN", "1").strip() != "0" and not _unsupported


def _scan(fd, start, end, vec):
    """The regions of [start, end) holding present or swapped pages: (n, 3) uint64 rows."""
    parts = []
    while start < end:
        arg = bytearray(_ARG.pack(_ARG.size, 0, start, end, 0, vec.ctypes.data, len(vec), 0,
                                  PAGE_IS_PFNZERO, PAGE_IS_PFNZERO, PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
                                  PAGE_IS_PRESENT | PAGE_IS_SWAPPED))
        import fcntl
        n = fcntl.ioctl(fd, PAGEMAP_SCAN, arg, True)
        parts.append(vec[:n].copy())
        if n < len(vec):
            break
        start = _ARG.unpack(arg)[4]  # walk_end: where a full buffer stopped the walk
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _regions(fd, page_size, vec):
    """The process's regions, or None where this kernel has no PAGEMAP_SCAN."""
    end = _scan_end.get(page_size)
    if end is not None:
        return _scan(fd, 0, end, vec)
    for bits in _ADDRESS_BITS:
        end = (1 << bits) - page_size
        try:
            regions = _scan(fd, 0, end, vec)
        except OSError as e:
            if e.errno == errno.EFAULT:
                continue  # past TASK_SIZE: a smaller address space
            if e.errno in (errno.ENOTTY, errno.EINVAL, errno.EOPNOTSUPP):
                _unsupported.append(e.strerror)
                return None
            raise
        _scan_end[page_size] = end
        return regions
    _unsupported.append("no address space end accepted")
    return None


def _read_regions(fd, regions, page_size):
    """The pagemap entries of ``regions``, in address order: one pread for each run of regions
    less than _READ_ACROSS pages apart, the entries between them then dropped; None where the
    process exited."""
    first = regions[:, 0] // np.uint64(page_size)
    end = regions[:, 1] // np.uint64(page_size)
    if not len(first):
        return np.zeros(0, dtype=np.uint64)
    starts = np.concatenate(([0], np.flatnonzero(first[1:] - end[:-1] > _READ_ACROSS) + 1))
    run_first, run_end = first[starts], end[np.append(starts[1:], len(first)) - 1]
    lengths = (run_end - run_first).astype(np.int64)
    entries = np.empty(int(lengths.sum()), dtype=np.uint64)
    view = memoryview(entries).cast("B")
    at = 0
    for page, n in zip(run_first.tolist(), lengths.tolist()):
        size = n * pm.ENTRY_SIZE
        if os.preadv(fd, [view[at:at + size]], page * pm.ENTRY_SIZE) != size:
            return None  # the mm is gone: the process exited
        at += size
    pages = end - first
    if int(pages.sum()) == len(entries):
        return entries
    # the buffer holds each region, then the pages up to the next where they share a read
    gaps = np.zeros(len(first), dtype=np.uint64)
    gaps[:-1] = first[1:] - end[:-1]
    gaps[starts[1:] - 1] = 0  # (the last region of a read)
    lengths = np.empty(2 * len(first), dtype=np.int64)
    lengths[0::2], lengths[1::2] = pages, gaps
    keep = np.zeros(2 * len(first), dtype=bool)
    keep[0::2] = True
    return entries[np.repeat(keep, lengths)]


def read_distinct_frames(source, reader, pid, vec=None, exclusive=False):
    """:class:`DistinctFrames` of every mapping of ``pid`` (ProcessGone, ProcessUnreadable).

    ``exclusive``: the frames pagemap says the process maps exclusively (bit 56: no other
    process maps them; the kernel's folio_maybe_mapped_shared is false, or before Linux 6.15 its
    map count is 1) are counted, not listed (DistinctFrames.own).  Only where no hugetlb page
    exists (no_hugetlb): the accounting leaves those out by their kpageflags."""
    got = None
    if scan_enabled():
        with translated(pid):
            fd = source.open_process(pid, "pagemap")
        if fd is not None:
            try:
                with translated(pid):
                    regions = _regions(fd, reader.page_size, vec if vec is not None else
                                       np.zeros((_REGIONS, 3), dtype=np.uint64))
                    if regions is not None:
                        got = (distinct_c if distinct_c is not None else distinct_python)(
                            fd, regions, reader.page_size, exclusive)
                        if got is None:
                            raise ProcessGone(pid)  # the mm is gone: the process exited
            finally:
                os.close(fd)
    if got is None:
        frames = reader.process_frames(pid, None)  # the mappings smaps says hold something
        return DistinctFrames.of(pid, frames.pfns, frames.swap)
    pfns, counts, swap, own, entries = got
    if len(own) and int(own[-1]) < 1 << 32:
        own = own.astype(np.uint32)  # (half the bytes to send)
    if not entries:  # nothing mapped, or the process exited since the open
        source.read_process(pid, "stat")  # ProcessGone if it did
    return DistinctFrames(pid, pfns, counts, swap, True, own)


def distinct_python(fd, regions, page_size, exclusive):
    """(distinct PFNs, their counts or None, distinct swap entries, frames of its own, entries
    read) of the pagemap entries of ``regions``, or None where the process exited: numpy."""
    entries = _read_regions(fd, regions, page_size)
    if entries is None:
        return None
    signed = entries.view(np.int64)  # bit 63 (present) is the sign bit
    present = entries[signed < 0]
    swap = entries[signed >= _SWAPPED_ONLY]  # bit 62 (swapped) set, bit 63 clear
    swap &= pm.PFN_MASK
    own = np.zeros(0, np.uint64)
    if exclusive:
        alone = (present & _EXCLUSIVE).astype(bool)
        if alone.any():
            mine = present[alone]
            mine &= pm.PFN_MASK
            own = np.unique(mine)  # (a page of a large folio may be mapped at two addresses of one process)
            present = present[~alone]
    present &= pm.PFN_MASK
    f = DistinctFrames.of(0, present, swap)
    return f.pfns, f.counts, f.swap, own, len(entries)


def _distinct_c(fd, regions, page_size, exclusive):
    """What distinct_python gives, from the C helper (smem/exact/_frames.c): one call."""
    got = _frames(fd, regions, page_size, _READ_ACROSS, exclusive)
    if got is None:
        return None
    pfns, counts, swap, own, entries, wide = got
    return (np.frombuffer(pfns, np.uint64 if wide else np.uint32),
            None if counts is None else np.frombuffer(counts, np.uint32),
            np.frombuffer(swap, np.uint64), np.frombuffer(own, np.uint64), entries)


_frames = None
if not os.environ.get("SMEM_PURE_PYTHON"):
    try:
        from ._frames import frames as _frames
    except ImportError:  # not built (no compiler where it was installed)
        pass
#: The C helper's form of distinct_python, or None where it is not built (or SMEM_PURE_PYTHON)
distinct_c = _distinct_c if _frames is not None else None


def no_hugetlb(source):
    """True where meminfo says no hugetlb page exists (``Hugetlb: 0 kB``, every page size)."""
    from ..parsers.meminfo import parse_meminfo
    raw = source.read_optional("meminfo")
    return raw is not None and parse_meminfo(raw).kib.get("Hugetlb") == 0


class FramesPass:
    """Each process's frames read where its rollup is read: the loader's worker hook (``beside``
    of smem.loading.load_reading), so one fork and one walk of the processes serve the report and
    the accounting.  :meth:`read` runs in the worker right after the process is read, :meth:`take`
    in this process as its result arrives; ``frames`` and ``skipped`` then hold what
    :func:`collect_distinct_frames` gives (:func:`smem.exact.account` takes them as ``read``)."""

    def __init__(self, source, reader, exclusive=None):
        self.source, self.reader = source, reader
        self.vec = np.zeros((_REGIONS, 3), dtype=np.uint64)  # (a worker's own copy once written)
        # (read_distinct_frames; None: wherever it may be, PAGEMAP_SCAN found and no hugetlb page)
        self.exclusive = scan_enabled() and no_hugetlb(source) if exclusive is None else exclusive
        self.frames, self.skipped = {}, {}

    def read(self, pid):
        """DistinctFrames of ``pid``, or (pid, why it was skipped)."""
        try:
            return read_distinct_frames(self.source, self.reader, pid, self.vec, self.exclusive)
        except ProcessGone:
            return pid, "gone"
        except ProcessUnreadable as e:
            return pid, e.reason

    def take(self, result):
        if isinstance(result, DistinctFrames):
            self.frames[result.pid] = result
        else:
            self.skipped[result[0]] = result[1]


def collect_distinct_frames(source, reader, pids, jobs=None, exclusive=None):
    """({pid: DistinctFrames}, {pid: why it was skipped}), read by worker processes (smem.collect);
    ``exclusive`` as FramesPass takes it."""
    from ..collect import each_result, workers_for
    frames = FramesPass(source, reader, exclusive)
    for result in each_result(list(pids), frames.read, workers_for(jobs, len(pids))):
        frames.take(result)
    return frames.frames, frames.skipped
