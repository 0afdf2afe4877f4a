"""Parser for /proc/kpageflags (Documentation/admin-guide/mm/pagemap.rst).

One 64-bit little-endian set of flags per page frame, at offset ``PFN * 8``.
The stable bits (include/uapi/linux/kernel-page-flags.h) are in
:data:`FLAGS`; bits 32 and above are kernel-hacking aids the documentation
says never to rely on, so they have no names here.
"""

import numpy as np

__all__ = ["ENTRY_SIZE", "FLAGS", "parse_kpageflags"]

ENTRY_SIZE = 8

#: Flag name -> bit number, as the kernel documents them (with the version that added them).
FLAGS = {
    "LOCKED": 0,
    "ERROR": 1,          # unused since 6.12
    "REFERENCED": 2,
    "UPTODATE": 3,
    "DIRTY": 4,
    "LRU": 5,
    "ACTIVE": 6,
    "SLAB": 7,
    "WRITEBACK": 8,
    "RECLAIM": 9,
    "BUDDY": 10,
    "MMAP": 11,          # 2.6.31
    "ANON": 12,
    "SWAPCACHE": 13,
    "SWAPBACKED": 14,
    "COMPOUND_HEAD": 15,
    "COMPOUND_TAIL": 16,
    "HUGE": 17,          # a hugetlbfs page
    "UNEVICTABLE": 18,
    "HWPOISON": 19,
    "NOPAGE": 20,
    "KSM": 21,           # 2.6.32
    "THP": 22,           # 3.4
    "OFFLINE": 23,       # BALLOON in 3.18 - 4.19
    "ZERO_PAGE": 24,     # 4.0
    "IDLE": 25,          # 4.3
    "PGTABLE": 26,       # 4.18
}


def parse_kpageflags(data):
    """The flag words in ``data`` as a native ``uint64`` array (one per PFN read)."""
    if len(data) % ENTRY_SIZE:
        raise ValueError(f"kpageflags data of {len(data)} bytes is not a whole number of entries")
    return np.frombuffer(data, dtype="<u8").astype(np.uint64, copy=False)

