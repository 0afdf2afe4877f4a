"""kernel_image_size() on kernel images: an x86 bzImage, a compressed stream behind junk, and a
real distribution kernel, each against GNU `size` on the uncompressed vmlinux; and what is no
kernel at all.

Every compressed stream is made by the real command-line tool with the flags
the kernel's build uses (scripts/Makefile.lib), and the real-kernel test
extracts the vmlinux the way scripts/extract-vmlinux does (real_kernel.py).
The 9 MiB vmlinux and its compressed forms are made once for this file.
How the ELF file inside is sized is test_elf.py's.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from elf_files import (KERNEL_LIKE_SECTIONS, SHF_ALLOC, SHF_WRITE, SHT_PROGBITS, berkeley_size,
                       hand_elf, needs_size, ours)
from real_kernel import extract_vmlinux, real_vmlinuz
from smem.errors import KernelImageError
from smem.parsers.kernel_image import KernelImageSize, kernel_image_size


# The kernel's own compressor invocations (arch/x86/boot/compressed/Makefile,
# scripts/Makefile.lib, scripts/xz_wrap.sh); all but gzip get the 4-byte
# uncompressed size appended ("size_append").
COMPRESSORS = {
    "gzip": (["gzip", "-n", "-f", "-9"], False),
    "bzip2": (["bzip2", "-9"], True),
    "lzma": (["lzma", "-9"], True),
    "xz": (["xz", "--check=crc32", "--x86", "--lzma2=dict=1MiB"], True),
    "zstd": (["zstd", "-19", "-q", "-c"], True),
    "lz4": (["lz4", "-l", "-9", "-q", "stdin", "stdout"], True),
}


#: (kind, data) -> what compress() gave: the same 9 MiB vmlinux is compressed by several tests
#: (gzip by five), and the tool gives the same bytes each time
_COMPRESSED: dict[tuple[str, bytes], bytes] = {}


def compress(kind: str, data: bytes) -> bytes:
    cmd, size_append = COMPRESSORS[kind]
    if shutil.which(cmd[0]) is None:
        pytest.skip(f"{cmd[0]} not installed")
    module = {"zstd": "zstandard", "lz4": "lz4"}.get(kind)
    if module is not None:
        pytest.importorskip(module, reason=f"smem reads {kind} kernels with smem[compression]")
    if (kind, data) not in _COMPRESSED:
        out = subprocess.run(cmd, input=data, capture_output=True, check=True).stdout
        _COMPRESSED[kind, data] = out + (struct.pack("<I", len(data)) if size_append else b"")
    return _COMPRESSED[kind, data]


def fake_bzimage(payload: bytes, setup_sects: int = 3, version: int = 0x020F) -> bytes:
    """An x86 bzImage: real-mode setup sectors with the boot header, then the
    protected-mode part with the compressed payload somewhere inside it."""
    pm_offset = ((setup_sects or 4) + 1) * 512
    setup = bytearray(os.urandom(pm_offset))
    setup[0x1F1] = setup_sects
    setup[0x1FE:0x200] = b"\x55\xaa"
    setup[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", setup, 0x206, version)
    head = b"decompressor code \x1f\x8b\x08 BZh9 not a stream" + os.urandom(300)
    struct.pack_into("<II", setup, 0x248, len(head), len(payload))
    return bytes(setup) + head + payload + os.urandom(777)


@pytest.fixture(scope="module")
def vmlinux() -> bytes:
    """A kernel-like ELF with > 8 MiB of data, so lz4's legacy format needs several blocks (a
    whole one of 8 MiB, then the last, shorter)."""
    sections = KERNEL_LIKE_SECTIONS + ((".data.big", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, 9 * 1024 * 1024),)
    return hand_elf(64, "little", sections)


@pytest.fixture(scope="module")
def vmlinux_size(vmlinux, tmp_path_factory) -> tuple[int, int, int, int]:
    if shutil.which("size") is None:
        pytest.skip("binutils `size` not installed")
    path = tmp_path_factory.mktemp("vmlinux") / "vmlinux"
    path.write_bytes(vmlinux)
    return berkeley_size(path)


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_bzimage_payload(kind, vmlinux, vmlinux_size):
    image = fake_bzimage(compress(kind, vmlinux))
    r = kernel_image_size(image)
    assert (r.text, r.data, r.bss, r.total) == vmlinux_size
    assert r.format == f"bzImage (boot protocol 2.15), {kind}-compressed ELF64 little-endian vmlinux"


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_raw_stream_after_junk(kind, vmlinux, vmlinux_size):
    # As in a vmlinuz that is no bzImage (or an old one): found by its magic,
    # behind junk holding false magics.
    junk = b"\x1f\x8b\x08\x00junk BZh91AY&SY \xfd7zXZ\x00 \x28\xb5\x2f\xfd \x02\x21\x4c\x18" + os.urandom(999)
    stream = compress(kind, vmlinux)
    r = kernel_image_size(junk + stream + b"trailing junk")
    assert (r.text, r.data, r.bss, r.total) == vmlinux_size
    assert r.format == f"{kind}-compressed ELF64 little-endian vmlinux at offset {len(junk):#x}"


@pytest.mark.uses("cpu")
def test_old_boot_protocol_falls_back_to_scanning(vmlinux, vmlinux_size):
    # Boot protocol < 2.08 has no payload fields: the magic scan finds it.
    image = fake_bzimage(compress("gzip", vmlinux), version=0x0207)
    r = kernel_image_size(image)
    assert (r.text, r.data, r.bss, r.total) == vmlinux_size
    assert r.format.startswith("gzip-compressed ELF64 little-endian vmlinux at offset ")


@pytest.mark.uses("cpu")
def test_setup_sects_zero_means_four(vmlinux, vmlinux_size):
    image = fake_bzimage(compress("gzip", vmlinux), setup_sects=0)
    r = kernel_image_size(image)
    assert (r.text, r.data, r.bss, r.total) == vmlinux_size
    assert r.format.startswith("bzImage")


@pytest.mark.uses("cpu")
def test_decompression_limit(vmlinux):
    image = fake_bzimage(compress("gzip", vmlinux))
    with pytest.raises(KernelImageError, match="more than 1 MiB"):
        kernel_image_size(image, limit=1024 * 1024)


@pytest.mark.parametrize("data", [
    b"",
    b"hello world\n" * 100,
    bytes(range(256)) * 64,
    b"MZ\x90\x00" + b"\0" * 4000,            # a PE file's start
], ids=["empty", "text", "bytes", "pe"])
def test_garbage_is_rejected(data):
    with pytest.raises(KernelImageError, match="not an ELF vmlinux, an arm64 or RISC-V Image or a compressed kernel image"):
        kernel_image_size(data)


def test_compressed_non_elf_is_rejected():
    # e.g. an arm64 Image.gz: gzip, but the payload is a raw image, not ELF.
    with pytest.raises(KernelImageError, match="not an ELF vmlinux"):
        kernel_image_size(compress("gzip", b"ARMd raw kernel image" * 1000))


def test_lzo_bzimage_is_named():
    image = fake_bzimage(b"\x89LZO\x00\r\n\x1a\n" + os.urandom(2000))
    with pytest.raises(KernelImageError, match="LZO"):
        kernel_image_size(image)


@pytest.mark.uses("cpu")
def test_truncated_stream_is_reported(vmlinux):
    stream = compress("xz", vmlinux)
    with pytest.raises(KernelImageError, match="xz stream is corrupt"):
        kernel_image_size(fake_bzimage(stream[: len(stream) // 2]))


def test_result_is_frozen():
    r = kernel_image_size(hand_elf(32, "big", KERNEL_LIKE_SECTIONS))
    assert isinstance(r, KernelImageSize)
    assert r.total == r.text + r.data + r.bss
    with pytest.raises(AttributeError):
        r.text = 0


# ---------------------------------------------------------------------------
# A real distribution kernel (tests/fetch_kernel.sh, or SMEM_TEST_KERNEL_DEB).
# ---------------------------------------------------------------------------

@pytest.mark.uses("cpu")
@needs_size
def test_real_distribution_vmlinuz(tmp_path):
    vmlinuz = real_vmlinuz(tmp_path)
    if vmlinuz is None:
        pytest.skip("no distribution kernel: run tests/fetch_kernel.sh or set SMEM_TEST_KERNEL_DEB")
    image = vmlinuz.read_bytes()
    extracted = extract_vmlinux(image, tmp_path)
    assert extracted is not None, "extract-vmlinux approach found no ELF in %s" % vmlinuz
    expected = berkeley_size(extracted)
    r = kernel_image_size(image)
    assert (r.text, r.data, r.bss, r.total) == expected
    assert r.format.startswith("bzImage (boot protocol 2.")
    assert ours(extracted.read_bytes()) == expected


@pytest.mark.uses("cpu")
def test_a_false_zstd_magic_does_not_stop_the_search_without_zstandard(vmlinux, vmlinux_size, tmp_path):
    """Without the zstandard package (smem[compression] not installed), junk that happens to hold
    a zstd magic is passed over and the gzip stream behind it still found; a kernel that is zstd
    (or lz4) alone says how to install its package, as every other missing extra does."""
    gzip_image = tmp_path / "gzip.img"
    gzip_image.write_bytes(b"junk \x28\xb5\x2f\xfd\x00\x58 junk" + compress("gzip", vmlinux))
    code = ("import sys; sys.modules['zstandard'] = sys.modules['lz4'] = None\n"  # as if not installed
            "from smem.parsers.kernel_image import kernel_image_size\n"
            "from smem.errors import KernelImageError\n"
            "r = kernel_image_size(open(sys.argv[1], 'rb').read()); print(r.text, r.data, r.bss, r.total)\n"
            "try:\n    kernel_image_size(b'\\x28\\xb5\\x2f\\xfd' + bytes(64))\n"
            "except KernelImageError as e:\n    print(e)\n"
            "try:\n    kernel_image_size(b'\\x02\\x21\\x4c\\x18' + bytes(64))\n"
            "except KernelImageError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code, str(gzip_image)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], check=True).stdout.splitlines()
    assert tuple(map(int, out[0].split())) == vmlinux_size
    assert out[1] == ("this kernel is zstd-compressed: the Python package 'zstandard' is not installed: "
                      "pip install zstandard (smem's 'compression' extra; or apt install python3-zstandard)")
    assert out[2] == ("this kernel is lz4-compressed: the Python package 'lz4' is not installed: "
                      "pip install lz4 (smem's 'compression' extra; or apt install python3-lz4)")
