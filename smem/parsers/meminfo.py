"""Parser for /proc/meminfo (Documentation/filesystems/proc.rst, "meminfo").

Lines are ``Key:   value kB`` or, for page counts such as HugePages_Total,
``Key:   value``.  Keys are kept exactly as the kernel spells them; a field a
kernel does not print (SReclaimable before 2.6.19, MemAvailable before 3.14)
is absent from the result, never 0.
"""

import io
from typing import Dict, NamedTuple

from ..errors import CaptureError
from . import MAX_BYTES, MAX_KEYS, MAX_KIB

__all__ = ["Meminfo", "parse_meminfo"]


class Meminfo(NamedTuple):
    kib: Dict[str, int]     # fields given in kB
    counts: Dict[str, int]  # unitless fields (page counts)


def parse_meminfo(data):
    """Raises CaptureError for a figure no machine has (2**64 bytes or more): a damaged file."""
    kib = {}
    counts = {}
    for line in io.BytesIO(data):  # (line by line: a list of millions of short lines took gigabytes)
        key, sep, rest = line.partition(b":")
        if not sep:
            continue
        fields = rest.split()
        if not fields:
            continue
        try:
            value = int(fields[0])
        except ValueError:
            continue
        name = key.strip().decode("ascii", "replace")
        in_kib = len(fields) > 1 and fields[1].lower() == b"kb"
        if abs(value) >= (MAX_KIB if in_kib else MAX_BYTES):
            raise CaptureError(f"meminfo: {name[:40]!r} is {str(value)[:20]}{'...' if len(str(value)) > 20 else ''}"
                               f"{' kB' if in_kib else ''}, past 2**64 bytes: not a real meminfo (damaged capture?)")
        if len(kib) + len(counts) < MAX_KEYS or name in kib or name in counts:
            (kib if in_kib else counts)[name] = value
    return Meminfo(kib, counts)


def swap_in_use_kib(kib):
    """SwapTotal - SwapFree of a meminfo's ``kib`` mapping: the swap in use, or None where a
    field is absent."""
    total, free = kib.get("SwapTotal"), kib.get("SwapFree")
    return total - free if total is not None and free is not None else None
