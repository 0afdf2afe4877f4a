"""Parser for /proc/iomem: the physical address map (Documentation/filesystems/proc.rst).

Each line is ``start-end : name`` (hex, both ends inclusive), indented two
spaces per level of nesting::

    00100000-bfffffff : System RAM
      01000000-02276987 : Kernel code
      02400000-02e0afff : Kernel rodata
      03000000-0327c0bf : Kernel data
      03b36000-03c66fff : Kernel bss

Top-level "System RAM" ranges add up to the RAM the kernel manages (what
``smem -w`` can show as installed memory, more than MemTotal, which excludes
memory reserved at boot); the "Kernel ..." ranges nested in them are where the
kernel image sits.  Since Linux 4.15, /proc/iomem shows every address as 0 to
readers without CAP_SYS_ADMIN: the helpers then return None, because absent
is not zero.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Optional, Sequence

__all__ = ["IomemResource", "parse_iomem", "addresses_hidden", "system_ram_bytes",
           "kernel_image_parts", "kernel_image_bytes", "KERNEL_IMAGE_RESOURCES"]

#: The resources the kernel registers for its own image (kernel/resource.c and
#: arch setup code); "Kernel rodata" since Linux 4.x on x86, "Kernel bss"
#: since 2.6.x.  Older kernels and some architectures have only code and data.
KERNEL_IMAGE_RESOURCES = ("Kernel code", "Kernel rodata", "Kernel data", "Kernel bss")

_LINE = re.compile(rb"( *)([0-9a-fA-F]{1,16})-([0-9a-fA-F]{1,16}) :(?: (.*))?")


class IomemResource(NamedTuple):
    """One /proc/iomem line: an inclusive physical range, its name and nesting depth (0 = top)."""

    start: int
    end: int
    name: str
    depth: int

    @property
    def size(self) -> int:
        return self.end - self.start + 1


def parse_iomem(data: bytes) -> list[IomemResource]:
    """Parse /proc/iomem; lines that are not ``start-end : name`` are skipped."""
    resources = []
    for line in data.splitlines():
        m = _LINE.fullmatch(line.rstrip(b"\r"))
        if m is None:
            continue
        indent, start, end, name = m.groups()
        if int(start, 16) > int(end, 16):
            continue  # (64-bit addresses by the pattern; a range backwards is damage)
        resources.append(IomemResource(int(start, 16), int(end, 16),
                                       (name or b"").decode("utf-8", "replace"),
                                       len(indent) // 2))
    return resources


def addresses_hidden(resources: Sequence[IomemResource]) -> bool:
    """True if the file was read without privilege, so every range reads 00000000-00000000."""
    return bool(resources) and all(r.start == 0 and r.end == 0 for r in resources)


def system_ram_bytes(resources: Sequence[IomemResource]) -> Optional[int]:
    """Bytes in top-level "System RAM" ranges; None if there are none or addresses are hidden."""
    if addresses_hidden(resources):
        return None
    ram = [r.size for r in resources if r.depth == 0 and r.name == "System RAM"]
    return sum(ram) if ram else None


def kernel_image_parts(resources: Sequence[IomemResource]) -> Optional[dict[str, int]]:
    """Bytes per kernel-image resource ("Kernel code" etc.) that the file lists, or None.

    A part the kernel does not register is missing from the dict, not 0.
    """
    if addresses_hidden(resources):
        return None
    parts: dict[str, int] = {}
    for r in resources:
        if r.name in KERNEL_IMAGE_RESOURCES:
            parts[r.name] = parts.get(r.name, 0) + r.size
    return parts or None


def kernel_image_bytes(resources: Sequence[IomemResource]) -> Optional[int]:
    """Bytes of the kernel image (code, rodata, data, bss) in RAM; None if not listed or hidden."""
    parts = kernel_image_parts(resources)
    return None if parts is None else sum(parts.values())
