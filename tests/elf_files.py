"""ELF files written by hand, and what GNU `size` says of a file: the common ground of
test_elf.py (ELF files sized) and test_kernel_image.py (the same kind of vmlinux compressed).
By hand for the byte orders and classes this machine's compiler cannot produce; every
expected number still comes from binutils' `size`.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from smem.parsers.kernel_image import kernel_image_size

needs_size = pytest.mark.skipif(shutil.which("size") is None, reason="binutils `size` not installed")


def berkeley_size(path: Path) -> tuple[int, int, int, int]:
    """(text, data, bss, dec) as GNU `size` (Berkeley format) prints them."""
    out = subprocess.run(["size", "--format=berkeley", str(path)], check=True,
                         capture_output=True, text=True).stdout
    return tuple(int(v) for v in out.splitlines()[1].split()[:4])


def ours(data: bytes) -> tuple[int, int, int, int]:
    r = kernel_image_size(data)
    return r.text, r.data, r.bss, r.total


ET_REL, ET_EXEC, ET_CORE = 1, 2, 4
SHT_PROGBITS, SHT_NOBITS, SHT_STRTAB = 1, 8, 3
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR, SHF_TLS = 0x1, 0x2, 0x4, 0x400
PT_LOAD, PT_NOTE = 1, 4
PF_X, PF_W, PF_R = 1, 2, 4


def hand_elf(bits: int, endian: str, sections=(), segments=(), e_type=ET_EXEC,
             section_headers=True) -> bytes:
    """A minimal but well-formed ELF file.

    sections: (name, sh_type, sh_flags, size); PROGBITS sections get `size`
    zero bytes of content, NOBITS none.  segments: (p_type, p_flags, filesz,
    memsz), each given filesz bytes of content.
    """
    bo = "<" if endian == "little" else ">"
    eh = struct.Struct(bo + ("16sHHIIIIIHHHHHH" if bits == 32 else "16sHHIQQQIHHHHHH"))
    sh = struct.Struct(bo + ("IIIIIIIIII" if bits == 32 else "IIQQQQIIQQ"))
    ph = struct.Struct(bo + ("IIIIIIII" if bits == 32 else "IIQQQQQQ"))
    machine = 0   # EM_NONE: `size` reads it through its generic elfNN-little/big targets

    body = bytearray()
    base = eh.size + ph.size * len(segments)

    def place(n: int) -> int:
        off = base + len(body)
        body.extend(b"\0" * n)
        return off

    phdrs = []
    for i, (p_type, p_flags, filesz, memsz) in enumerate(segments):
        off = place(filesz)
        vaddr = 0x100000 * (i + 1)
        if bits == 32:
            phdrs.append(ph.pack(p_type, off, vaddr, vaddr, filesz, memsz, p_flags, 0x1000))
        else:
            phdrs.append(ph.pack(p_type, p_flags, off, vaddr, vaddr, filesz, memsz, 0x1000))

    shstr = bytearray(b"\0")
    entries = [sh.pack(*([0] * 10))]
    for name, sh_type, sh_flags, size in sections:
        name_off = len(shstr)
        shstr += name.encode() + b"\0"
        off = place(size if sh_type != SHT_NOBITS else 0)
        addr = 0x400000 + off if sh_flags & SHF_ALLOC else 0
        entries.append(sh.pack(name_off, sh_type, sh_flags, addr, off, size, 0, 0, 1, 0))
    name_off = len(shstr)
    shstr += b".shstrtab\0"
    off = place(len(shstr))
    body[off - base:off - base + len(shstr)] = shstr
    entries.append(sh.pack(name_off, SHT_STRTAB, 0, 0, off, len(shstr), 0, 0, 1, 0))
    while (base + len(body)) % 8:
        body.append(0)
    shoff = base + len(body)

    ident = b"\x7fELF" + bytes([1 if bits == 32 else 2, 1 if endian == "little" else 2, 1]) + b"\0" * 9
    if section_headers:
        header = eh.pack(ident, e_type, machine, 1, 0, eh.size if segments else 0, shoff, 0, eh.size,
                         ph.size, len(segments), sh.size, len(entries), len(entries) - 1)
        tail = b"".join(entries)
    else:
        header = eh.pack(ident, e_type, machine, 1, 0, eh.size if segments else 0, 0, 0, eh.size,
                         ph.size, len(segments), sh.size, 0, 0)
        tail = b""
    return header + b"".join(phdrs) + bytes(body) + tail


KERNEL_LIKE_SECTIONS = (
    # A vmlinux's kinds of allocated sections (names as in x86/arm64 vmlinux.lds).
    (".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 7001),
    (".rodata", SHT_PROGBITS, SHF_ALLOC, 3002),
    ("__ksymtab", SHT_PROGBITS, SHF_ALLOC, 503),
    (".data", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, 2004),
    (".data..percpu", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, 1005),
    (".init.text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR | SHF_WRITE, 906),   # code even if writable
    (".tbss", SHT_NOBITS, SHF_ALLOC | SHF_WRITE | SHF_TLS, 64),
    (".bss", SHT_NOBITS, SHF_ALLOC | SHF_WRITE, 9007),
    (".brk", SHT_NOBITS, SHF_ALLOC | SHF_WRITE, 808),
    (".ro_nobits", SHT_NOBITS, SHF_ALLOC, 111),                                  # read-only NOBITS: text
    (".comment", SHT_PROGBITS, 0, 77),                                           # not allocated: ignored
    (".debug_info", SHT_PROGBITS, 0, 5000),
)
