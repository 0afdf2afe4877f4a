"""Parser for /proc/kpagecount (Documentation/admin-guide/mm/pagemap.rst).

One 64-bit little-endian entry per page frame, at offset ``PFN * 8``: the
number of times the page is mapped (page-table mappings, so a page mapped at
two addresses of one process counts 2).  Root only; absent when the kernel
lacks CONFIG_PROC_PAGE_MONITOR.  Pages the kernel does not map-count (the
zero page, PFN-mapped special pages) read as 0.
"""

import numpy as np

__all__ = ["ENTRY_SIZE", "parse_kpagecount"]

ENTRY_SIZE = 8


def parse_kpagecount(data):
    """The map counts in ``data`` as a native ``uint64`` array (one per PFN read)."""
    if len(data) % ENTRY_SIZE:
        raise ValueError(f"kpagecount data of {len(data)} bytes is not a whole number of entries")
    return np.frombuffer(data, dtype="<u8").astype(np.uint64, copy=False)
