"""This machine's counts of anonymous large folios made, one pair for each folio size, under /sys.

Since Linux 6.10 the kernel may fault in an anonymous folio of several pages that is smaller
than a PMD's huge page (multi-size THP); /proc/vmstat's thp_* counters count only the PMD size,
and each size's own counts are in
/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/stats/ (anon_fault_alloc, swpin:
Documentation/admin-guide/mm/transhuge.rst).  smem.private_growth sums them with vmstat's to
know whether any large folio was made between two collections.
"""

import functools
import glob

__all__ = ["mthp_counts", "MTHP_STATS"]

#: each size's directory of counters
MTHP_STATS = "/sys/kernel/mm/transparent_hugepage/hugepages-*/stats/"


@functools.lru_cache(maxsize=8)
def _paths(stats):
    """The counters' files: the sizes a kernel offers are fixed while it runs (looked for once)."""
    return tuple(sorted(glob.glob(stats + "anon_fault_alloc") + glob.glob(stats + "swpin")))


def mthp_counts(stats=MTHP_STATS):
    """Every size's anon_fault_alloc and swpin, in a fixed order ([] where the kernel has no
    sizes), or None where one of them cannot be read."""
    counts = []
    for path in _paths(stats):
        try:
            with open(path, "rb") as f:
                counts.append(int(f.read()))
        except (OSError, ValueError):
            return None
    return counts
