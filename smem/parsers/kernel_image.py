"""Size of a kernel image (``smem -K FILE``), as GNU ``size`` reports it.

smem 1.5 ran ``size FILE`` and took the ``dec`` column as the memory the
kernel image occupies (its "kernel image" row of ``-w``).  That only works for
an uncompressed ``vmlinux``; distributions ship a compressed ``vmlinuz``.  This
module gives the same text/data/bss/total numbers without binutils, for either:

* an ELF ``vmlinux`` (32- or 64-bit, either byte order), classified the way
  binutils' Berkeley ``size`` does it (``size.c``, via BFD's ELF reader); or
* a compressed kernel: an x86 ``bzImage`` (payload located through its boot
  header, Documentation/arch/x86/boot.rst) or any image in which a gzip,
  bzip2, xz, lzma, zstd or lz4 stream decompresses to an ELF ``vmlinux`` (the
  approach of the kernel's own ``scripts/extract-vmlinux``).

Everything here is a pure function of the image's bytes.
"""

from __future__ import annotations

import bz2
import lzma
import struct
import zlib
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

from ..compression import COMPRESSIONS
from ..errors import KernelImageError

# Optional: only kernels compressed with these formats need them.
try:
    import lz4.block as _lz4_block
except ImportError:  # pragma: no cover - depends on the installation
    _lz4_block = None
try:
    import zstandard as _zstandard
except ImportError:  # pragma: no cover - depends on the installation
    _zstandard = None

__all__ = ["KernelImageSize", "kernel_image_size", "MAX_DECOMPRESSED"]

#: Refuse to decompress a kernel larger than this (decompression bombs).
#: Real x86-64 vmlinux payloads are 30-100 MiB.
MAX_DECOMPRESSED = 256 * 1024 * 1024

# Decompress in chunks of this size, so a bomb is caught before it is built.
_CHUNK = 4 * 1024 * 1024

# Try at most this many candidate streams when scanning for magics.
_MAX_CANDIDATES = 64

_EXPECTED = ("not an ELF vmlinux or a compressed kernel image "
             "(bzImage/vmlinuz with gzip, bzip2, xz, lzma, zstd or lz4)")


@dataclass(frozen=True)
class KernelImageSize:
    """Berkeley ``size`` figures of a kernel image, in bytes.

    ``total`` is ``size``'s ``dec`` column (text + data + bss); ``format`` says
    what was found, e.g. ``"ELF64 little-endian vmlinux"`` or
    ``"bzImage (boot protocol 2.15), zstd-compressed ELF64 little-endian vmlinux"``.
    """

    text: int
    data: int
    bss: int
    format: str
    total: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "total", self.text + self.data + self.bss)


def kernel_image_size(data: bytes, *, limit: int = MAX_DECOMPRESSED) -> KernelImageSize:
    """Size the kernel image *data* (an ELF vmlinux or a compressed kernel).

    Raises :class:`~smem.errors.KernelImageError` for anything else, for a
    corrupt ELF, or for a payload that would decompress past *limit* bytes.
    """
    view = memoryview(data)
    if bytes(view[:4]) == _ELF_MAGIC:
        text, dat, bss, fmt = _elf_size(view)
        return KernelImageSize(text, dat, bss, fmt)

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
                text, dat, bss, fmt = _elf_size(memoryview(found))
                return KernelImageSize(text, dat, bss, "bzImage (boot protocol %d.%02d), %s-compressed %s"
                                       % (version >> 8, version & 0xFF, kind, fmt))

    for offset, kind in _candidates(view):
        found = _try_stream(kind, view[offset:], problems, limit)
        if found is not None:
            text, dat, bss, fmt = _elf_size(memoryview(found))
            return KernelImageSize(text, dat, bss, "%s-compressed %s at offset %#x" % (kind, fmt, offset))

    missing = [p for p in problems if isinstance(p, _MissingDecompressor)]
    if missing:  # none it could read held the kernel: say which package would read the rest
        raise missing[0]
    detail = "; ".join(dict.fromkeys(problems))  # unique, in order
    raise KernelImageError(_EXPECTED + (" (%s)" % detail if detail else ""))


class _MissingDecompressor(KernelImageError):
    """A stream whose decompressor is an optional package that is not installed: said only when
    no other stream of the image held the kernel (a false magic in junk must not stop the search)."""


# --------------------------------------------------------------------------
# ELF, sized like binutils' Berkeley `size`.
#
# `size` sums every BFD section that has SEC_ALLOC: into text if it has
# SEC_CODE or SEC_READONLY, else into data if it has SEC_HAS_CONTENTS, else
# into bss.  BFD derives those flags from the ELF section header: SEC_ALLOC
# from SHF_ALLOC, SEC_CODE from SHF_EXECINSTR, SEC_READONLY from !SHF_WRITE,
# SEC_HAS_CONTENTS from sh_type != SHT_NOBITS.
#
# Core files (ET_CORE) are read from their program headers instead: each
# PT_LOAD's file part is an allocated section with contents (code if PF_X,
# read-only unless PF_W) and its memsz - filesz tail one without (so bss when
# writable, text when not).
#
# A non-core ELF whose section headers are missing (stripped with sstrip, or
# e_shstrndx == 0) makes `size` print 0 0 0.  That would claim a kernel of no
# size, so we size such a file from its PT_LOAD segments the same way and say
# so in `format`.
# --------------------------------------------------------------------------

_ELF_MAGIC = b"\x7fELF"

_ET_NAMES = {1: "relocatable object", 2: "vmlinux", 3: "shared object", 4: "core file"}
_ET_CORE = 4

_SHT_NULL = 0
_SHT_NOBITS = 8
_SHF_WRITE = 0x1
_SHF_ALLOC = 0x2
_SHF_EXECINSTR = 0x4

_PT_LOAD = 1
_PF_X = 0x1
_PF_W = 0x2

_SHN_XINDEX = 0xFFFF
_PN_XNUM = 0xFFFF

# (ehdr after e_ident, shdr, phdr) layouts; e_ident is 16 bytes.
_LAYOUT = {
    1: ("HHIIIIIHHHHHH", "IIIIIIIIII", "IIIIIIII"),
    2: ("HHIQQQIHHHHHH", "IIQQQQIIQQ", "IIQQQQQQ"),
}


def _elf_size(view: memoryview) -> tuple[int, int, int, str]:
    if len(view) < 16:
        raise KernelImageError("truncated ELF file: %d bytes" % len(view))
    ei_class, ei_data = view[4], view[5]
    if ei_class not in _LAYOUT or ei_data not in (1, 2):
        raise KernelImageError("unsupported ELF file (class %d, data encoding %d)" % (ei_class, ei_data))
    bo = "<" if ei_data == 1 else ">"
    eh_fmt, sh_fmt, ph_fmt = (struct.Struct(bo + f) for f in _LAYOUT[ei_class])
    if len(view) < 16 + eh_fmt.size:
        raise KernelImageError("truncated ELF file: header needs %d bytes, have %d"
                               % (16 + eh_fmt.size, len(view)))
    (e_type, _machine, _version, _entry, e_phoff, e_shoff, _flags, e_ehsize,
     e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx) = eh_fmt.unpack_from(view, 16)

    bits = 32 if ei_class == 1 else 64
    fmt = "ELF%d %s-endian %s" % (bits, "little" if ei_data == 1 else "big",
                                  _ET_NAMES.get(e_type, "file of type %#x" % e_type))

    # Extended numbering (gABI): the real counts live in section header 0.
    sh0 = None
    if e_shoff:
        if e_shentsize != sh_fmt.size:
            raise KernelImageError("corrupt ELF file: section header size %d, expected %d"
                                   % (e_shentsize, sh_fmt.size))
        sh0 = _unpack(sh_fmt, view, e_shoff, "section header table")
        if e_shnum == 0:
            e_shnum = sh0[5]
        if e_shstrndx == _SHN_XINDEX:
            e_shstrndx = sh0[6]
        if e_phnum == _PN_XNUM:
            e_phnum = sh0[7]

    if e_type != _ET_CORE and e_shoff >= 16 + eh_fmt.size and 0 < e_shstrndx < e_shnum:
        if e_shoff + e_shnum * sh_fmt.size > len(view):
            raise KernelImageError("truncated ELF file: %d section headers at %#x run past its end (%d bytes)"
                                   % (e_shnum, e_shoff, len(view)))
        text = dat = bss = 0
        for i in range(1, e_shnum):
            _name, sh_type, sh_flags, _a, _o, sh_size = sh_fmt.unpack_from(view, e_shoff + i * sh_fmt.size)[:6]
            if sh_type == _SHT_NULL or not sh_flags & _SHF_ALLOC:
                continue
            if sh_flags & _SHF_EXECINSTR or not sh_flags & _SHF_WRITE:
                text += sh_size
            elif sh_type != _SHT_NOBITS:
                dat += sh_size
            else:
                bss += sh_size
        return text, dat, bss, fmt

    # Program headers: a core file's only description, or our fallback.
    if not e_phoff or not e_phnum:
        raise KernelImageError("corrupt ELF file: it has neither section headers nor program headers")
    if e_phentsize != ph_fmt.size:
        raise KernelImageError("corrupt ELF file: program header size %d, expected %d"
                               % (e_phentsize, ph_fmt.size))
    if e_phoff + e_phnum * ph_fmt.size > len(view):
        raise KernelImageError("truncated ELF file: %d program headers at %#x run past its end (%d bytes)"
                               % (e_phnum, e_phoff, len(view)))
    text = dat = bss = 0
    for i in range(e_phnum):
        ph = ph_fmt.unpack_from(view, e_phoff + i * ph_fmt.size)
        if bits == 32:
            p_type, _off, _va, _pa, p_filesz, p_memsz, p_flags, _al = ph
        else:
            p_type, p_flags, _off, _va, _pa, p_filesz, p_memsz, _al = ph
        if p_type != _PT_LOAD:
            continue
        tail = max(p_memsz - p_filesz, 0)
        if p_flags & _PF_X or not p_flags & _PF_W:
            text += p_filesz + tail
        else:
            dat += p_filesz
            bss += tail
    if e_type != _ET_CORE:
        fmt += " (no section headers: sized from program headers)"
    return text, dat, bss, fmt


def _unpack(st: struct.Struct, view: memoryview, offset: int, what: str) -> tuple:
    if offset + st.size > len(view):
        raise KernelImageError("truncated ELF file: %s at %#x runs past its end (%d bytes)"
                               % (what, offset, len(view)))
    return st.unpack_from(view, offset)


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
    """Decompress a *kind* stream at the start of *view*; its output if that is an ELF file, else None.

    Decompression stops where the ELF header says its headers end (``size`` reads
    nothing past them), and a header placing them past *limit* is refused at once.
    """
    out = bytearray()
    needed = None
    try:
        for chunk in _DECOMPRESSORS[kind](view):
            out += chunk
            if len(out) >= 4 and out[:4] != _ELF_MAGIC:
                return None
            if needed is None:
                needed = _elf_extent(out)
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
        if len(out) >= 4:   # a vmlinux that breaks off: worth reporting
            problems.append("%s stream is corrupt after %d bytes (%s)" % (kind, len(out), e))
        return None
    if out[:4] != _ELF_MAGIC:
        return None
    return out


def _elf_extent(head: bytearray) -> Optional[int]:
    """Where the section and program headers of the ELF file starting ``head`` end; None
    until ``head`` holds the ELF header, or where the counts are extended (in section 0)."""
    if len(head) < 64 or head[4] not in _LAYOUT or head[5] not in (1, 2):
        return None if len(head) < 64 else 64
    bo = "<" if head[5] == 1 else ">"
    eh_fmt = struct.Struct(bo + _LAYOUT[head[4]][0])
    (_t, _m, _v, _e, e_phoff, e_shoff, _f, _eh, e_phentsize, e_phnum, e_shentsize, e_shnum,
     _x) = eh_fmt.unpack_from(head, 16)
    if (e_shoff and e_shnum == 0) or e_phnum == _PN_XNUM:
        return None
    return max(16 + eh_fmt.size, e_shoff + e_shnum * e_shentsize, e_phoff + e_phnum * e_phentsize)


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
        raise _MissingDecompressor("this kernel is zstd-compressed: install the Python package 'zstandard'")
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
        raise _MissingDecompressor("this kernel is lz4-compressed: install the Python package 'lz4'")
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
