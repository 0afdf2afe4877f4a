"""Parser for /sys/firmware/memmap: the firmware's raw memory map.

Documentation/ABI/testing/sysfs-firmware-memmap: one directory per entry,
``/sys/firmware/memmap/N/{start,end,type}``, where start and end are hex with
a ``0x`` prefix and end is inclusive, and type is the firmware's name for the
range ("System RAM", "Reserved", "ACPI Tables", ...).  Unlike /proc/iomem it is
readable without privilege and is the map as the firmware (e820 on x86)
handed it over, before the kernel reserves anything: its "System RAM" entries
add up to the installed RAM the kernel was given.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

__all__ = ["MemmapEntry", "parse_memmap_entries", "parse_memmap"]


class MemmapEntry(NamedTuple):
    """One firmware memory map entry: an inclusive physical range and its type."""

    start: int
    end: int
    type: str

    @property
    def size(self) -> int:
        return self.end - self.start + 1


def parse_memmap_entries(entries: Sequence[tuple[bytes, bytes, bytes]]) -> list[MemmapEntry]:
    """Parse (start, end, type) file contents, one tuple per /sys/firmware/memmap/N.

    Raises ValueError for a start or end that is not a hex number.
    """
    parsed = []
    for start, end, type_ in entries:
        start, end = start.strip(), end.strip()
        if len(start) > 18 or len(end) > 18:
            raise ValueError("memmap address longer than 64 bits")
        entry = MemmapEntry(int(start, 16), int(end, 16), type_.strip().decode("utf-8", "replace"))
        if not 0 <= entry.start <= entry.end < 1 << 64:
            raise ValueError("memmap range outside 64-bit addresses, or backwards")
        parsed.append(entry)
    return parsed


def parse_memmap(entries: Sequence[tuple[bytes, bytes, bytes]]) -> Optional[int]:
    """Installed RAM in bytes: the sum of the "System RAM" entries; None if there are none."""
    ram = [e.size for e in parse_memmap_entries(entries) if e.type == "System RAM"]
    return sum(ram) if ram else None
