"""--wss SECONDS: the working set, what each process referenced during SECONDS.

RSS says what a process has; the working set what it uses, which is what sizing a device or a
container needs.  Two ways to measure it, the first the kernel has:

* idle page tracking (/sys/kernel/mm/page_idle/bitmap, Linux 4.3+, CONFIG_IDLE_PAGE_TRACKING;
  smem.idle_pages): the processes' pages are marked idle frame by frame and read back after
  SECONDS.  It leaves reclaim's ageing as it was; it needs numpy.
* clear_refs (Documentation/filesystems/proc.rst, "3.4 /proc/<pid>/clear_refs"): writing ``1``
  clears the referenced bits of all the process's pages; after SECONDS smaps' ``Referenced`` is
  what was touched since (``wss``), and each mapping's referenced pages times its Pss/Rss
  split shared pages as PSS does (``wsspss``).  A page's referenced flag is the page's, not the
  process's: a page it shares that another process touched meanwhile (the interpreter's, libc's)
  is in its ``wss``, and in ``wsspss`` only by its share.  Clearing the bits also clears what reclaim
  reads to tell recently used pages from old ones, so the pages look idle to it for a while:
  said on stderr once.

``SMEM_WSS_METHOD`` (``page_idle`` or ``clear_refs``) chooses one; by default idle page tracking
where the bitmap can be written, else clear_refs (saying why where the bitmap is there but
cannot be written).  The method used is in the JSON document (``working_set``).
"""

import mmap
import os
import time
from dataclasses import dataclass
from types import MappingProxyType
from typing import Optional

from .errors import SmemError, UsageError
from .sources.proc_files import address_space_dir

__all__ = ["WorkingSet", "measure", "working_set_of", "summed_working_sets", "referenced_pss",
           "CLEAR_REFS_NOTE", "asked_method", "METHODS", "METHOD_VARIABLE"]

CLEAR_REFS_NOTE = ("--wss clears the processes' referenced bits (/proc/PID/clear_refs): the kernel's reclaim "
                   "ages their pages by those bits, so it sees them as idle for a while")

#: how each method is named (SMEM_WSS_METHOD, the JSON document)
PAGE_IDLE, CLEAR_REFS = "page_idle", "clear_refs"
METHODS = (PAGE_IDLE, CLEAR_REFS)
METHOD_VARIABLE = "SMEM_WSS_METHOD"
#: the bitmap, under /sys (Documentation/admin-guide/mm/idle_page_tracking.rst)
BITMAP = "kernel/mm/page_idle/bitmap"


@dataclass(frozen=True)
class WorkingSet:
    """How --wss measured: ``method`` (page_idle or clear_refs), over ``seconds``, and under
    page_idle the figures it measured, {pid: (wss, wsspss) KiB} (clear_refs's are in smaps)."""

    method: str
    seconds: float
    measured: Optional[MappingProxyType] = None


def asked_method():
    """SMEM_WSS_METHOD's method, or None to choose; a UsageError for a value that is none."""
    value = os.environ.get(METHOD_VARIABLE, "").strip()
    if value and value not in METHODS:
        raise UsageError(f"{METHOD_VARIABLE} is {' or '.join(METHODS)} (not {value[:40]!r})")
    return value or None


def measure(source, pids, seconds):
    """Measure the working set of ``pids`` (processes of the live ``source``) over ``seconds``:
    (WorkingSet, the notes to say once)."""
    asked = asked_method()
    notes = []
    tracker = None
    if asked != CLEAR_REFS:
        tracker, why = _idle_tracker(source, asked == PAGE_IDLE)
        if why is not None:
            notes.append(why)
    if tracker is not None:
        try:
            tracker.mark(pids)
        except OSError as e:
            why = f"marking pages idle failed ({e.strerror or e})"
            if asked == PAGE_IDLE:
                raise SmemError(f"{METHOD_VARIABLE}={PAGE_IDLE}: {why}") from None
            tracker = None
            notes.append(f"--wss: {why}, so:")
    if tracker is not None:
        time.sleep(seconds)
        try:
            figures = tracker.measure(pids)
        except OSError as e:
            raise SmemError(f"--wss: reading back idle page tracking: {e.strerror or e}") from None
        return WorkingSet(PAGE_IDLE, seconds, MappingProxyType(figures)), notes
    clear_referenced(source.proc, pids)
    time.sleep(seconds)
    return WorkingSet(CLEAR_REFS, seconds), [" ".join(notes + [CLEAR_REFS_NOTE])]


def _idle_tracker(source, required):
    """(IdleTracker, None) where idle page tracking can be used on ``source``, else (None, why
    not: a note, or None where the kernel has no bitmap); ``required``: a SmemError instead."""
    sys_root = getattr(source, "sys", "/sys")
    path = os.path.join(sys_root, BITMAP)

    def unusable(why, note=True):
        if required:
            raise SmemError(f"{METHOD_VARIABLE}={PAGE_IDLE}: {why}")
        return None, (f"--wss: {why}, so:" if note else None)

    try:
        os.close(os.open(path, os.O_RDWR))
    except FileNotFoundError:
        return unusable(f"no {path} (a kernel without CONFIG_IDLE_PAGE_TRACKING)", note=False)
    except OSError as e:
        return unusable(f"{path} cannot be written ({e.strerror or e})")
    try:
        with open(os.path.join(source.proc, "kpageflags"), "rb") as f:
            f.read(8)
    except OSError as e:
        return unusable(f"idle page tracking needs /proc/kpageflags ({e.strerror or e})")
    try:
        from .idle_pages import IdleTracker  # numpy: only here
    except ImportError:
        return unusable("idle page tracking needs numpy (pip install 'smem[exact]')")
    return IdleTracker(source.proc, path, mmap.PAGESIZE), None


def clear_referenced(proc, pids):
    """Clear the referenced bits of every page of each of ``pids`` (under the /proc ``proc``);
    the pids whose bits were cleared (a process gone meanwhile, or a kernel thread, is not).  A
    process whose first thread exited (Zl) is cleared through a live thread (address_space_dir)."""
    cleared = []
    for pid in pids:
        try:
            fd = os.open(f"{address_space_dir(proc, pid)}/clear_refs", os.O_WRONLY)
        except OSError:
            continue
        try:
            os.write(fd, b"1")
            cleared.append(pid)
        except OSError:
            pass
        finally:
            os.close(fd)
    return cleared


def working_set_of(process, working_set):
    """(wss, wsspss) KiB of ``process``: what idle page tracking measured of it, else its smaps
    figures once its referenced bits were cleared (None where unknown)."""
    if working_set is not None and working_set.measured is not None:
        return working_set.measured.get(process.pid, (None, None))
    return process.totals.get("Referenced"), referenced_pss(process.mappings)


def summed_working_sets(pairs):
    """The (wss, wsspss) of a group: each summed over the members that have it (None if none)."""
    sums = [None, None]
    for pair in pairs:
        for i, value in enumerate(pair):
            if value is not None:
                sums[i] = value if sums[i] is None else sums[i] + value
    return tuple(sums)


def referenced_pss(mappings):
    """KiB of the mappings' referenced pages with sharing split (each mapping's Referenced x
    Pss / Rss), or None without per-mapping figures."""
    if mappings is None:
        return None
    total = 0.0
    for mapping in mappings:
        counters = mapping.counters
        referenced, pss, rss = counters.get("Referenced"), counters.get("Pss"), counters.get("Rss")
        if referenced is None or pss is None:
            return None
        if rss:
            total += referenced * pss / rss
    return int(round(total))
