"""Parser for /proc/PID/statm (Documentation/filesystems/proc.rst, Table 1-3).

Seven counts of pages from the kernel's per-process counters, read without a walk of the
page tables (unlike smaps): size, resident, shared (the resident pages of files and shmem),
text, lib (0 since Linux 2.6), data and dt (0 since 2.6).
"""

from typing import NamedTuple, Optional

from . import MAX_BYTES, plausible

__all__ = ["Statm", "parse_statm"]

#: no machine has this many pages (the smallest page is 4 KiB): a larger count is damage
_MAX_PAGES = MAX_BYTES >> 12


class Statm(NamedTuple):
    size: Optional[int]      # pages of its address space
    resident: Optional[int]  # pages resident (anonymous, file and shmem)
    shared: Optional[int]    # of those, pages of files and shmem
    text: Optional[int]
    data: Optional[int]

    @property
    def anonymous(self):
        """Resident anonymous pages (resident less shared), or None where either is unknown or
        they do not add up."""
        if self.resident is None or self.shared is None or self.shared > self.resident:
            return None
        return self.resident - self.shared


def _pages(field):
    try:
        return plausible(int(field), _MAX_PAGES) if len(field) <= 20 else None
    except ValueError:
        return None


def parse_statm(data):
    """Parse statm bytes; raises ValueError where there are not seven fields.  A count no machine
    could have is None (absent is not zero)."""
    fields = data.split()
    if len(fields) != 7:
        raise ValueError(f"malformed statm: {len(fields)} fields, not 7")
    try:
        pages = [int(field) for field in fields]  # (as the kernel writes them: one quick pass)
        if not all(0 <= page < _MAX_PAGES for page in pages):
            raise ValueError
    except ValueError:
        pages = [_pages(field) for field in fields]
    size, resident, shared, text, _lib, data_pages, _dt = pages
    return Statm(size, resident, shared, text, data_pages)
