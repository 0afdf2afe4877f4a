"""Size of an ELF file (an uncompressed ``vmlinux``), as GNU ``size`` reports it.

The ELF format: the System V gABI (elf(5)); the classification: binutils' Berkeley
``size`` (``size.c``, via BFD's ELF reader), the ``dec`` column smem 1.5 took for the
kernel image's memory.  32- or 64-bit, either byte order.  kernel_image.py finds the ELF
file in a compressed kernel and calls this; a pure function of the bytes.
"""

from __future__ import annotations

import struct
from typing import Optional

from ..errors import KernelImageError

__all__ = ["ELF_MAGIC", "elf_size", "elf_extent"]

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

ELF_MAGIC = b"\x7fELF"

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


def elf_size(view: memoryview) -> tuple[int, int, int, str]:
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



def elf_extent(head: bytearray) -> Optional[int]:
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

