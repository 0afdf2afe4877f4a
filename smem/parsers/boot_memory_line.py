"""Parser for the kernel's boot-time "Memory:" line (dmesg, /dev/kmsg, syslog).

mm_init.c (mem_init_print_info(), Linux 3.15+) prints, in KiB::

    Memory: 3217664K/25165432K available (18906K kernel code, 2544K rwdata,
    10284K rodata, 3752K init, 1220K bss, 497048K reserved, 0K cma-reserved)

optionally followed by ``, NK highmem`` and a free-form note.  Older kernels
printed per-architecture variants with a lowercase ``k``, e.g. 2.4/2.6 x86::

    Memory: 252884k/262128k available (1347k kernel code, 6812k reserved, 999k data, 132k init, 0k highmem)

and 2.6 ARM: ``Memory: 513476k/524288k available, 10812k reserved, 0K highmem``.

The first number is what the buddy allocator got, the second the memory the
kernel knows of (its "total"); the rest are sizes of kernel image sections
and reservations.  The line tells how large the running kernel's image is
without root (where /proc/iomem hides addresses) or a kernel file.
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["parse_boot_memory_line"]

# (at most 16 digits: every figure stays below 2**54 KiB, and int() never sees 4,300 digits)
_HEAD = re.compile(rb"Memory: ([0-9]{1,16})[kK]/([0-9]{1,16})[kK] available(.*)")
_FIELD = re.compile(rb"(?<![0-9])([0-9]{1,16})[kK] ([a-z][a-z -]*[a-z])")


def parse_boot_memory_line(data: bytes) -> Optional[dict[str, int]]:
    """The fields of the first "Memory: A/B available ..." line in *data*, in KiB.

    *data* may be a whole kernel log (any prefix: timestamps, syslog, kmsg
    records).  Keys: "available", "total", then each field under the name the
    kernel printed ("kernel code", "rwdata", "rodata", "init", "bss",
    "reserved", "cma-reserved", "highmem", "data", "absent", ...).  A field
    the kernel did not print is missing, not 0.  None if no such line.
    """
    for line in data.splitlines():
        m = _HEAD.search(line)
        if m is None:
            continue
        fields = {"available": int(m.group(1)), "total": int(m.group(2))}
        for value, name in _FIELD.findall(m.group(3)):
            fields.setdefault(name.decode("ascii"), int(value))
        return fields
    return None
