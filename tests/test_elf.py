"""ELF files (a vmlinux, objects, executables, core files) sized as GNU `size` does (smem.parsers.elf,
through kernel_image_size()).

Every expected number comes from binutils' `size` run on the same ELF file:
files compiled with gcc, written by hand (elf_files.py) for the byte orders and
classes this machine's compiler cannot produce, and this machine's own binaries.
Compressed kernels are test_kernel_image.py's.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from elf_files import (ET_CORE, KERNEL_LIKE_SECTIONS, PF_R, PF_W, PF_X, PT_LOAD, PT_NOTE,
                       berkeley_size, hand_elf, needs_size, ours)
from smem.errors import KernelImageError
from smem.parsers.kernel_image import kernel_image_size

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("ld") is None,
                               reason="gcc/ld not installed")


C_SOURCE = r"""
char big_data[%(data)d] = {1};
char big_bss[%(bss)d];
const char big_rodata[%(rodata)d] = {2};
__thread int tls_data = 3;
__thread int tls_bss;
int entry(void) { return big_data[0] + big_bss[1] + big_rodata[2] + tls_data + tls_bss; }
"""

SIZES = {"data": 12345, "bss": 67890, "rodata": 4321}


@pytest.fixture(scope="module")
def gcc_elves(tmp_path_factory) -> dict[str, Path]:
    """Objects, executables and shared objects, 64- and 32-bit, built by gcc."""
    if shutil.which("gcc") is None or shutil.which("ld") is None:
        pytest.skip("gcc/ld not installed")
    d = tmp_path_factory.mktemp("elves")
    src = d / "k.c"
    src.write_text(C_SOURCE % SIZES)
    built = {}

    def run(*cmd):
        return subprocess.run(cmd, capture_output=True).returncode == 0

    if run("gcc", "-O1", "-fno-pic", "-c", str(src), "-o", str(d / "k64.o")):
        built["elf64 relocatable"] = d / "k64.o"
        if run("ld", "-static", "-e", "entry", str(d / "k64.o"), "-o", str(d / "k64")):
            built["elf64 executable"] = d / "k64"
    if run("gcc", "-O1", "-fpic", "-c", str(src), "-o", str(d / "k64pic.o")) and \
            run("ld", "-shared", str(d / "k64pic.o"), "-o", str(d / "k64.so")):
        built["elf64 shared object"] = d / "k64.so"
    if run("gcc", "-m32", "-O1", "-fno-pic", "-c", str(src), "-o", str(d / "k32.o")):
        built["elf32 relocatable"] = d / "k32.o"
        if run("ld", "-m", "elf_i386", "-static", "-e", "entry", str(d / "k32.o"), "-o", str(d / "k32")):
            built["elf32 executable"] = d / "k32"
    if not built:
        pytest.skip("gcc could not build any test ELF")
    return built


HAND_CASES = [(bits, endian) for bits in (32, 64) for endian in ("little", "big")]


@needs_size
@pytest.mark.parametrize("bits,endian", HAND_CASES, ids=lambda v: str(v))
def test_hand_written_elf_matches_size(tmp_path, bits, endian):
    data = hand_elf(bits, endian, KERNEL_LIKE_SECTIONS)
    path = tmp_path / "vmlinux"
    path.write_bytes(data)
    assert ours(data) == berkeley_size(path)
    r = kernel_image_size(data)
    assert r.format == "ELF%d %s-endian vmlinux" % (bits, endian)


@needs_size
@pytest.mark.parametrize("bits,endian", HAND_CASES, ids=lambda v: str(v))
def test_core_file_sized_from_program_headers_like_size(tmp_path, bits, endian):
    # `size` reads a core file through its program headers: a PT_LOAD's file
    # part is text or data, its memsz tail text (read-only) or bss (writable).
    segments = ((PT_LOAD, PF_R | PF_X, 4096, 8192), (PT_LOAD, PF_R | PF_W, 2048, 6144),
                (PT_LOAD, PF_R, 1024, 1024), (PT_LOAD, PF_R | PF_W, 512, 512))
    data = hand_elf(bits, endian, segments=segments, e_type=ET_CORE, section_headers=False)
    path = tmp_path / "core"
    path.write_bytes(data)
    assert ours(data) == berkeley_size(path)


@needs_size
def test_real_core_dump_matches_size(tmp_path):
    """A core file the kernel writes for a crashing shell (skips where core_pattern pipes them away)."""
    subprocess.run(["sh", "-c", "ulimit -c unlimited && kill -SEGV $$"], cwd=tmp_path, capture_output=True)
    cores = [p for p in tmp_path.iterdir() if p.name.startswith("core")]
    if not cores:
        pytest.skip("no core file written here (see /proc/sys/kernel/core_pattern)")
    r = kernel_image_size(cores[0].read_bytes())
    assert (r.text, r.data, r.bss, r.total) == berkeley_size(cores[0])
    assert r.format.endswith("core file")


@needs_size
def test_gcc_built_elves_match_size(gcc_elves):
    for kind, path in gcc_elves.items():
        r = kernel_image_size(path.read_bytes())
        assert (r.text, r.data, r.bss, r.total) == berkeley_size(path), kind
        assert r.format.startswith(kind.split()[0].upper()), (kind, r.format)
        assert r.data >= SIZES["data"] and r.bss >= SIZES["bss"], kind


@needs_size
def test_system_binaries_match_size():
    """A sample of this machine's own ELF files (executables, libraries)."""
    candidates = [Path(p) for p in ("/bin/ls", "/bin/sh", "/usr/bin/python3", "/usr/bin/size",
                                    "/lib/x86_64-linux-gnu/libc.so.6", "/lib/ld-linux.so.2",
                                    "/usr/lib/x86_64-linux-gnu/libz.so.1")]
    seen = 0
    for path in candidates:
        path = path.resolve()
        if not path.is_file() or path.read_bytes()[:4] != b"\x7fELF":
            continue
        assert ours(path.read_bytes()) == berkeley_size(path), path
        seen += 1
    if not seen:
        pytest.skip("no system ELF files found")


def test_without_section_headers_uses_load_segments():
    # `size` prints 0 0 0 for a stripped-of-section-headers executable; we size
    # it from PT_LOAD instead (absent is not zero) and say so.
    segments = ((PT_LOAD, PF_R | PF_X, 4096, 4096), (PT_LOAD, PF_R | PF_W, 2000, 9000),
                (PT_LOAD, PF_R, 700, 700), (PT_NOTE, PF_R, 50, 50))
    data = hand_elf(64, "little", segments=segments, section_headers=False)
    r = kernel_image_size(data)
    assert (r.text, r.data, r.bss) == (4096 + 700, 2000, 7000)
    assert "program headers" in r.format


@needs_gcc
def test_without_section_headers_total_is_load_memsz(gcc_elves, tmp_path):
    """On a linked executable, the fallback total equals the PT_LOAD memsz that readelf lists."""
    if shutil.which("readelf") is None:
        pytest.skip("readelf not installed")
    path = gcc_elves.get("elf64 executable")
    if path is None:
        pytest.skip("no 64-bit executable built")
    data = bytearray(path.read_bytes())
    struct.pack_into("<Q", data, 0x28, 0)          # e_shoff
    struct.pack_into("<HHH", data, 0x3A, 64, 0, 0)  # e_shentsize, e_shnum, e_shstrndx
    stripped = tmp_path / "sstripped"
    stripped.write_bytes(data)
    out = subprocess.run(["readelf", "-lW", str(stripped)], capture_output=True, text=True).stdout
    memsz = sum(int(line.split()[5], 16) for line in out.splitlines() if line.split()[:1] == ["LOAD"])
    assert memsz > 0
    assert kernel_image_size(bytes(data)).total == memsz


@pytest.mark.parametrize("cut", [10, 40, 200], ids=lambda c: f"{c}bytes")
def test_truncated_elf_is_rejected(cut):
    data = hand_elf(64, "little", KERNEL_LIKE_SECTIONS)
    with pytest.raises(KernelImageError, match="truncated ELF"):
        kernel_image_size(data[:cut])


def test_bad_elf_class_is_rejected():
    data = bytearray(hand_elf(64, "little", KERNEL_LIKE_SECTIONS))
    data[4] = 7
    with pytest.raises(KernelImageError, match="unsupported ELF"):
        kernel_image_size(bytes(data))
