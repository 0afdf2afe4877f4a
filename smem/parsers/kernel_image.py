"""Size of a kernel image (``smem -K FILE``), as GNU ``size`` reports it.

smem 1.5 ran ``size FILE`` and took the ``dec`` column as the memory the
kernel image occupies (its "kernel image" row of ``-w``).  That only works for
an uncompressed ``vmlinux``; distributions ship a compressed ``vmlinuz``.  This
module gives the same text/data/bss/total numbers without binutils, for either:

* an ELF ``vmlinux`` (32- or 64-bit, either byte order), classified the way
  binutils' Berkeley ``size`` does it (elf.py); or
* an arm64 or RISC-V ``Image``, sized by its header's image_size (boot_images.py); or
* a compressed kernel: an x86 ``bzImage`` (payload located through its boot
  header, Documentation/arch/x86/boot.rst) or any image in which a gzip,
  bzip2, xz, lzma, zstd or lz4 stream decompresses to an ELF ``vmlinux`` or an
  arm64/RISC-V ``Image`` (the approach of the kernel's own ``scripts/extract-vmlinux``).

An ARM ``zImage`` or a U-Boot ``uImage`` that holds neither is named, with what to give instead.

Everything here is a pure function of the image's bytes.
"""

from __future__ import annotations

import bz2
import lzma
import re
import struct
import zlib
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

from ..compression import COMPRESSIONS
from ..errors import KernelImageError
from ..extras import missing
from .boot_images import HEADER_BYTES, image_header, wrapper_refusal
from .elf import ELF_MAGIC, elf_extent, elf_size

# Optional: only kernels compressed with these formats need them.
try:
    import lz4.block as _lz4_block
except ImportError:  # pragma: no cover - depends on the installation
    _lz4_block = None
try:
    import zstandard as _zstandard
except ImportError:  # pragma: no cover - depends on the installation
    _zstandard = None

__all__ = ["KernelImageSize", "kernel_image_size", "banner_release", "MAX_DECOMPRESSED"]

#: Refuse to decompress a kernel larger than this (decompression bombs).
#: Real x86-64 vmlinux payloads are 30-100 MiB.
MAX_DECOMPRESSED = 256 * 1024 * 1024

# Decompress in chunks of this size, so a bomb is caught before it is built.
_CHUNK = 4 * 1024 * 1024

# Try at most this many candidate streams when scanning for magics.
_MAX_CANDIDATES = 64

#: what every Linux kernel holds (init/version.c's linux_banner)
_BANNER = b"Linux version "

_EXPECTED = ("not an ELF vmlinux, an arm64 or RISC-V Image or a compressed kernel image "
             "(bzImage/vmlinuz/Image.gz with gzip, bzip2, xz, lzma, zstd or lz4)")


@dataclass(frozen=True)
class KernelImageSize:
    """Berkeley ``size`` figures of a kernel image, in bytes.

    ``total`` is ``size``'s ``dec`` column (text + data + bss); ``format`` says
    what was found, e.g. ``"ELF64 little-endian vmlinux"`` or
    ``"bzImage (boot protocol 2.15), zstd-compressed ELF64 little-endian vmlinux"``;
    ``banner`` whether that ELF holds the kernel's ``Linux version`` banner (one
    without it is some other program, compressed or not: sized, with a doubt).
    """

    text: int
    data: int
    bss: int
    format: str
    banner: bool = True
    release: Optional[str] = None   # the banner's release (uname -r of that kernel), where it has one
    total: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "total", self.text + self.data + self.bss)


def kernel_image_size(data: bytes, *, limit: int = MAX_DECOMPRESSED) -> KernelImageSize:
    """Size the kernel image *data* (an ELF vmlinux or a compressed kernel).

    Raises :class:`~smem.errors.KernelImageError` for anything else, for a
    corrupt ELF, or for a payload that would decompress past *limit* bytes.
    """
    view = memoryview(data)
    if bytes(view[:4]) == ELF_MAGIC:
        text, dat, bss, fmt = elf_size(view)
        return KernelImageSize(text, dat, bss, fmt, _BANNER in data, banner_release(data))
    if image_header(view) is not None:
        return _sized(view, "", limit)

    problems: list[str] = []
    bz = _bzimage_payload(view)
    if bz is not None:
        version, start, length = bz
        payload = view[start:start + length]
        kind = _stream_kind(payload)
        if kind is None:
            lzo = bytes(payload[:4]) == b"\x89LZO"
            problems.append("bzImage payload is %s" % (
                "LZO-compressed, which smem cannot decompress" if lzo
                else "in an unknown compression format"))
        else:
            found = _try_stream(kind, payload, problems, limit)
            if found is not None:
                return _sized(found, "bzImage (boot protocol %d.%02d), %s-compressed "
                              % (version >> 8, version & 0xFF, kind), limit)

    for offset, kind in _candidates(view):
        found = _try_stream(kind, view[offset:], problems, limit)
        if found is not None:
            return _sized(found, "%s-compressed " % kind, limit, " at offset %#x" % offset)

    missing = [p for p in problems if isinstance(p, _MissingDecompressor)]
    if missing:  # none it could read held the kernel: say which package would read the rest
        raise missing[0]
    wrapper = wrapper_refusal(view)
    if wrapper is not None:
        raise KernelImageError(wrapper)
    detail = "; ".join(dict.fromkeys(problems))  # unique, in order
    raise KernelImageError(_EXPECTED + (" (%s)" % detail if detail else ""))


def _sized(found, before: str, limit: int, after: str = "") -> KernelImageSize:
    """The size of ``found``, an ELF vmlinux or an arm64/RISC-V Image (whose header's image_size is
    its text: it says no more), its format named between ``before`` and ``after``."""
    if bytes(found[:4]) == ELF_MAGIC:
        text, dat, bss, fmt = elf_size(memoryview(found))
        return KernelImageSize(text, dat, bss, before + fmt + after, _BANNER in found, banner_release(found))
    arch, size = image_header(found)
    if size > limit:
        raise KernelImageError("%s Image header gives an image_size of %d bytes, more than %g MiB: "
                               "not a kernel's" % (arch, size, limit / 2**20))
    return KernelImageSize(size, 0, 0, "%s%s Image%s, image_size from its header" % (before, arch, after))


_RELEASE = re.compile(rb"Linux version ([0-9][0-9A-Za-z._+~-]{0,63}) ")


def banner_release(data) -> Optional[str]:
    """The release in the kernel's ``Linux version RELEASE (...`` banner (init/version.c), as
    ``uname -r`` and /proc/version name it; None where ``data`` has no such banner."""
    match = _RELEASE.search(bytes(data) if isinstance(data, memoryview) else data)
    return match.group(1).decode("ascii") if match else None


class _MissingDecompressor(KernelImageError):
    """A stream whose decompressor is an optional package that is not installed: said only when
    no other stream of the image held the kernel (a false magic in junk must not stop the search)."""


# --------------------------------------------------------------------------
# Compressed kernels.
# --------------------------------------------------------------------------

# x86 boot protocol (Documentation/arch/x86/boot.rst): offsets in the setup
# header of a bzImage.
_BOOT_SETUP_SECTS = 0x1F1
_BOOT_HEADER = 0x202          # "HdrS"
_BOOT_VERSION = 0x206
_BOOT_PAYLOAD_OFFSET = 0x248  # protocol 2.08+, relative to the protected-mode code
_BOOT_PAYLOAD_LENGTH = 0x24C


def _bzimage_payload(view: memoryview) -> Optional[tuple[int, int, int]]:
    """(protocol version, payload start, payload length), or None if *view* is no bzImage with one."""
    if len(view) < _BOOT_PAYLOAD_LENGTH + 4 or bytes(view[_BOOT_HEADER:_BOOT_HEADER + 4]) != b"HdrS":
        return None
    version = struct.unpack_from("<H", view, _BOOT_VERSION)[0]
    if version < 0x208:
        return None
    setup_sects = view[_BOOT_SETUP_SECTS] or 4   # 0 means 4, for old boot loaders
    offset, length = struct.unpack_from("<II", view, _BOOT_PAYLOAD_OFFSET)
    start = (setup_sects + 1) * 512 + offset
    if length == 0 or start + length > len(view):
        return None
    return version, start, length


def _stream_kind(view: memoryview) -> Optional[str]:
    head = bytes(view[:6])
    for compression in COMPRESSIONS:
        if compression.starts(head):
            return compression.name
    return None


def _candidates(view: memoryview) -> list[tuple[int, str]]:
    data = view.obj if isinstance(view.obj, bytes) else bytes(view)
    found = []
    for kind, magic in ((c.name, c.magic) for c in COMPRESSIONS):
        pos, n = data.find(magic), 0
        while pos >= 0 and n < _MAX_CANDIDATES:
            if _stream_kind(view[pos:pos + 6]) == kind:
                found.append((pos, kind))
                n += 1
            pos = data.find(magic, pos + 1)
    found.sort()
    return found[:_MAX_CANDIDATES]


def _try_stream(kind: str, view: memoryview, problems: list[str], limit: int) -> Optional[bytearray]:
    """Decompress a *kind* stream at the start of *view*; its output if that is an ELF file (or
    the header of an arm64/RISC-V Image), else None.

    Decompression stops where the ELF header says its headers end (``size`` reads
    nothing past them), and a header placing them past *limit* is refused at once.
    """
    out = bytearray()
    needed = None
    try:
        for chunk in _DECOMPRESSORS[kind](view):
            out += chunk
            if len(out) >= 4 and out[:4] != ELF_MAGIC:
                if len(out) < HEADER_BYTES:
                    continue
                return out[:HEADER_BYTES] if image_header(out) is not None else None
            if needed is None:
                needed = elf_extent(out)
                if needed is not None and needed > limit:
                    raise KernelImageError("%s stream holds an ELF file of more than %g MiB (its headers end "
                                           "at %d bytes); refusing it" % (kind, limit / 2**20, needed))
            if needed is not None and len(out) >= needed:
                break
            if len(out) > limit:
                raise KernelImageError("%s stream decompresses to more than %g MiB; refusing it"
                                       % (kind, limit / 2**20))
    except _MissingDecompressor as e:
        problems.append(e)
        return None
    except _STREAM_ERRORS as e:
        if out[:4] == ELF_MAGIC:   # a vmlinux that breaks off: worth reporting
            problems.append("%s stream is corrupt after %d bytes (%s)" % (kind, len(out), e))
        return None
    if out[:4] != ELF_MAGIC:
        return out[:HEADER_BYTES] if image_header(out) is not None else None
    return out



def _zlib_chunks(view: memoryview) -> Iterator[bytes]:
    d = zlib.decompressobj(wbits=31)   # gzip wrapper; stops at the member's end
    buf = view
    while not d.eof:
        chunk = d.decompress(buf, _CHUNK)
        buf = d.unconsumed_tail
        if not chunk and not buf:
            raise EOFError("gzip stream ends early")
        yield chunk


def _maxlen_chunks(make: Callable[[], object]) -> Callable[[memoryview], Iterator[bytes]]:
    """Chunks from a bz2/lzma-style decompressor (``decompress(data, max_length)``, ``eof``, ``needs_input``)."""
    def chunks(view: memoryview) -> Iterator[bytes]:
        d = make()
        chunk = d.decompress(view, _CHUNK)
        yield chunk
        while not d.eof:
            if d.needs_input:
                raise EOFError("stream ends early")
            yield d.decompress(b"", _CHUNK)
    return chunks


def _zstd_chunks(view: memoryview) -> Iterator[bytes]:
    # Kernel zstd frames are written from a pipe, so carry no content size,
    # and are followed by the image's tail: decompress one frame, streaming.
    # The stream reader gives at most _CHUNK bytes a call, however few bytes of
    # input they come from (a 4-byte block can expand to 128 KiB).
    if _zstandard is None:
        raise _MissingDecompressor(missing("zstandard", "this kernel is zstd-compressed"))
    reader = _zstandard.ZstdDecompressor().stream_reader(view, read_across_frames=False)
    while True:
        chunk = reader.read(_CHUNK)
        if not chunk:
            return
        yield chunk



_LZ4_LEGACY_MAGIC = 0x184C2102
_LZ4_LEGACY_BLOCK = 8 * 1024 * 1024


def _lz4_legacy_chunks(view: memoryview) -> Iterator[bytes]:
    # `lz4 -l` legacy frame (lib/decompress_unlz4.c): the magic, then blocks of
    # [u32 LE compressed size][data], each of which decompresses to 8 MiB
    # except the last.  The kernel appends the uncompressed size after it.
    if _lz4_block is None:
        raise _MissingDecompressor(missing("lz4", "this kernel is lz4-compressed"))
    pos = 4
    while pos + 4 <= len(view):
        size = struct.unpack_from("<I", view, pos)[0]
        if size == _LZ4_LEGACY_MAGIC:     # a concatenated legacy frame
            pos += 4
            continue
        if size == 0 or pos + 4 + size > len(view):
            return
        chunk = _lz4_block.decompress(view[pos + 4:pos + 4 + size], uncompressed_size=_LZ4_LEGACY_BLOCK)
        yield chunk
        pos += 4 + size
        if len(chunk) < _LZ4_LEGACY_BLOCK:
            return


_STREAM_ERRORS: tuple[type[BaseException], ...] = (zlib.error, OSError, EOFError, lzma.LZMAError) + tuple(
    e for e in (getattr(_zstandard, "ZstdError", None), getattr(_lz4_block, "LZ4BlockError", None)) if e)

_DECOMPRESSORS: dict[str, Callable[[memoryview], Iterator[bytes]]] = {
    "gzip": _zlib_chunks,
    "bzip2": _maxlen_chunks(bz2.BZ2Decompressor),
    "xz": _maxlen_chunks(lambda: lzma.LZMADecompressor(lzma.FORMAT_XZ, memlimit=MAX_DECOMPRESSED)),
    "lzma": _maxlen_chunks(lambda: lzma.LZMADecompressor(lzma.FORMAT_ALONE, memlimit=MAX_DECOMPRESSED)),
    "zstd": _zstd_chunks,
    "lz4": _lz4_legacy_chunks,
}
