"""--wss SECONDS: the working set, what each process referenced during SECONDS.

RSS says what a process has; the working set what it uses, which is what sizing a device or a
container needs.  The kernel marks a page referenced when it is touched (the accessed bit of
its page table entry, or the page's referenced flag); writing ``1`` to /proc/PID/clear_refs
clears them for all of the process's pages (Documentation/filesystems/proc.rst, "3.4
/proc/<pid>/clear_refs").  So: clear, wait SECONDS, read smaps: its ``Referenced`` is what was
touched since (``wss``); each mapping's referenced pages times its Pss/Rss split shared pages
as PSS does (``wsspss``).

Clearing the bits also clears what reclaim reads to tell recently used pages from old ones, so
the processes' pages look idle to it for a while: said on stderr once.  Idle page tracking
(/sys/kernel/mm/page_idle/bitmap, 4.3+) would measure without that, page frame by page frame;
it is not used yet.
"""

import os
import time

__all__ = ["clear_referenced", "referenced_pss", "CLEAR_REFS_NOTE"]

CLEAR_REFS_NOTE = ("--wss clears the processes' referenced bits (/proc/PID/clear_refs): the kernel's reclaim "
                   "ages their pages by those bits, so it sees them as idle for a while")


def clear_referenced(proc, pids):
    """Clear the referenced bits of every page of each of ``pids`` (under the /proc ``proc``);
    the pids whose bits were cleared (a process gone meanwhile, or a kernel thread, is not)."""
    cleared = []
    for pid in pids:
        try:
            fd = os.open(f"{proc}/{pid}/clear_refs", os.O_WRONLY)
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


def measure_interval(proc, pids, seconds):
    """Clear the bits of ``pids`` and wait ``seconds``."""
    clear_referenced(proc, pids)
    time.sleep(seconds)


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
