"""Parser for /proc/PID/pagemap (Documentation/admin-guide/mm/pagemap.rst).

pagemap holds one 64-bit little-endian entry per virtual page of the process,
at offset ``vaddr // PAGE_SIZE * 8``::

    bits 0-54   page frame number (PFN) if present
    bits 0-4    swap type if swapped
    bits 5-54   swap offset if swapped
    bit  55     pte is soft-dirty
    bit  56     page exclusively mapped (since 4.2)
    bit  57     pte is uffd-wp write-protected (since 5.13)
    bit  58     pte is a guard region (since 6.15)
    bits 59-60  zero
    bit  61     page is file-page or shared-anon (since 3.5)
    bit  62     page swapped
    bit  63     page present

Since Linux 4.0 only CAP_SYS_ADMIN sees PFNs: 4.0 and 4.1 refuse the open,
4.2 and later return the entry with bits 0-54 zeroed.  The functions below
are vectorised over the numpy array :func:`parse_pagemap` returns; a field
is only meaningful where its condition holds (``pfn`` where ``present``,
``swap_type``/``swap_offset`` where ``swapped``).
"""

import numpy as np

__all__ = ["ENTRY_SIZE", "PFN_MASK", "PRESENT", "SWAPPED", "parse_pagemap"]

ENTRY_SIZE = 8

#: bits 0-54: the PFN where present, the swap type and offset where swapped
PFN_MASK = np.uint64((1 << 55) - 1)
#: bit 62 (bit 63, present, is the sign bit of the entry read as int64: smem/exact/readers.py)
SWAPPED = np.uint64(1 << 62)
#: bit 63: the page is present in RAM
PRESENT = np.uint64(1 << 63)


def parse_pagemap(data):
    """The entries in ``data`` (bytes of pagemap) as a native ``uint64`` array.

    ``data`` must be whole entries (a multiple of 8 bytes); anything else is
    a truncated read and raises ``ValueError``.
    """
    if len(data) % ENTRY_SIZE:
        raise ValueError(f"pagemap data of {len(data)} bytes is not a whole number of entries")
    return np.frombuffer(data, dtype="<u8").astype(np.uint64, copy=False)
