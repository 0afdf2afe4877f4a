"""Kernel images that are no ELF file: what ``-K`` can size from a boot header, and what it can
only name.

* An arm64 or RISC-V ``Image`` (also inside ``Image.gz`` and the like) starts with a 64-byte
  header (Documentation/arch/arm64/booting.rst, Documentation/arch/riscv/boot-image-header.rst):
  ``image_size``, a little-endian u64 at offset 16, is the "effective Image size", the bytes from
  the start of the image the kernel needs free, its bss included: the RAM the kernel image takes,
  which is what ``-K`` is for.  The magic is at offset 56: ``ARM\\x64`` or ``RSC\\x05``.  An arm64
  Image from before Linux 3.17 has image_size 0: it does not say its size.
* An ARM ``zImage`` (magic 0x016F2818 at 0x24, arch/arm/boot/compressed/head.S) and a U-Boot
  ``uImage`` (magic 0x27051956, big-endian, at 0) wrap a kernel whose size they do not record:
  ``-K`` names them and asks for the ELF vmlinux.
"""

from __future__ import annotations

import struct
from typing import Optional

from ..errors import KernelImageError

__all__ = ["HEADER_BYTES", "image_header", "wrapper_refusal"]

#: the arm64 / RISC-V Image header's length: what a compressed stream is decompressed to
HEADER_BYTES = 64

_MAGICS = {b"ARM\x64": "arm64", b"RSC\x05": "RISC-V"}
_IMAGE_SIZE = 16
_MAGIC = 56

_ZIMAGE_MAGIC_AT = 0x24
_ZIMAGE_MAGIC = 0x016F2818
_UIMAGE_MAGIC = 0x27051956
_UIMAGE_NAME = slice(32, 64)  # ih_name, after seven u32 fields and four bytes


def image_header(data) -> Optional[tuple[str, int]]:
    """(architecture, image_size) of an arm64 or RISC-V Image header at the start of ``data``,
    or None if there is none.  An image_size of 0 (arm64 before 3.17) is refused: it says nothing
    of the size."""
    if len(data) < HEADER_BYTES:
        return None
    arch = _MAGICS.get(bytes(data[_MAGIC:_MAGIC + 4]))
    if arch is None:
        return None
    size = struct.unpack_from("<Q", data, _IMAGE_SIZE)[0]
    if size == 0:
        raise KernelImageError(f"an {arch} Image whose header gives no image_size (a kernel before 3.17): "
                               "its size is not recorded; give the build tree's ELF vmlinux")
    return arch, size


def wrapper_refusal(data) -> Optional[str]:
    """What an ARM zImage or a U-Boot uImage is, and what to give instead; None for anything else."""
    hint = "the size of the kernel it holds is not recorded; give the build tree's ELF vmlinux (or an Image)"
    if len(data) >= 64 and struct.unpack_from(">I", data, 0)[0] == _UIMAGE_MAGIC:
        name = bytes(data[_UIMAGE_NAME]).split(b"\0")[0].decode("ascii", "replace")
        named = f" ({name!r})" if name and name.isprintable() else ""
        return f"a U-Boot uImage{named}: {hint}"
    if len(data) >= _ZIMAGE_MAGIC_AT + 4 and _ZIMAGE_MAGIC in (
            struct.unpack_from("<I", data, _ZIMAGE_MAGIC_AT)[0], struct.unpack_from(">I", data, _ZIMAGE_MAGIC_AT)[0]):
        return f"an ARM zImage (a self-decompressing kernel): {hint}"
    return None
