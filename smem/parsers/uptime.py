"""Parser for ``/proc/uptime`` (Documentation/filesystems/proc.rst, "1.7 Miscellaneous kernel
statistics"; fs/proc/uptime.c): the seconds since boot and the seconds CPUs spent idle, each
with two decimals.  What a process's ``starttime`` (/proc/PID/stat, clock ticks after boot) is
measured against.
"""

from typing import Optional

__all__ = ["parse_uptime"]


def parse_uptime(data) -> Optional[float]:
    """Seconds since boot, or None where the file holds no such number."""
    fields = data.split()
    if not fields:
        return None
    head, dot, tail = fields[0].partition(b".")
    if not head.isdigit() or len(head) > 12 or (dot and not tail.isdigit()) or len(tail) > 9:
        return None
    return float(fields[0])
