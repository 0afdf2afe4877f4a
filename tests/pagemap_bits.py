"""Reading pagemap entries bit by bit (Documentation/admin-guide/mm/pagemap.rst): what the tests
use to check that the kernel's entries mean what smem.exact takes them to mean.  smem itself
masks the whole arrays in smem/exact/readers.py."""

import numpy as np

from smem.parsers.pagemap import PFN_MASK, PRESENT, SWAPPED

SOFT_DIRTY = np.uint64(1 << 55)
EXCLUSIVE = np.uint64(1 << 56)
FILE_SHARED = np.uint64(1 << 61)
_SWAP_TYPE_MASK = np.uint64(0x1F)
_SWAP_OFFSET_SHIFT = np.uint64(5)
_SWAP_OFFSET_MASK = np.uint64((1 << 50) - 1)


def _bit(entries, bit):
    return (entries & bit) != 0


def present(entries):
    """Bool array: the page is in RAM (bit 63)."""
    return _bit(entries, PRESENT)


def swapped(entries):
    """Bool array: the page is swapped out (bit 62)."""
    return _bit(entries, SWAPPED)


def file_shared(entries):
    """Bool array: a file page or shared anonymous page (bit 61)."""
    return _bit(entries, FILE_SHARED)


def exclusive(entries):
    """Bool array: the page is mapped exclusively by this process (bit 56, Linux 4.2+)."""
    return _bit(entries, EXCLUSIVE)


def soft_dirty(entries):
    """Bool array: the pte is soft-dirty (bit 55, Documentation/admin-guide/mm/soft-dirty.rst)."""
    return _bit(entries, SOFT_DIRTY)


def pfn(entries):
    """Bits 0-54: the page frame number where ``present`` (zero without CAP_SYS_ADMIN)."""
    return entries & PFN_MASK


def swap_entry(entries):
    """Bits 0-54 as one key (type | offset << 5) identifying a swap slot, where ``swapped``."""
    return entries & PFN_MASK


def swap_type(entries):
    """Bits 0-4: the swap area (index in /proc/swaps order), where ``swapped``."""
    return entries & _SWAP_TYPE_MASK


def swap_offset(entries):
    """Bits 5-54: the page slot within the swap area, where ``swapped``."""
    return (entries >> _SWAP_OFFSET_SHIFT) & _SWAP_OFFSET_MASK
