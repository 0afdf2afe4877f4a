"""kernel_image_size() against GNU `size` and the real compressors.

Every expected number comes from binutils' `size` run on the same ELF file;
every compressed stream is made by the real command-line tool with the flags
the kernel's build uses (scripts/Makefile.lib), and the real-kernel test
extracts the vmlinux the way scripts/extract-vmlinux does.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from smem.errors import KernelImageError
from smem.parsers.kernel_image import KernelImageSize, kernel_image_size

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"

needs_size = pytest.mark.skipif(shutil.which("size") is None, reason="binutils `size` not installed")
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("ld") is None,
                               reason="gcc/ld not installed")


def berkeley_size(path: Path) -> tuple[int, int, int, int]:
    """(text, data, bss, dec) as GNU `size` (Berkeley format) prints them."""
    out = subprocess.run(["size", "--format=berkeley", str(path)], check=True,
                         capture_output=True, text=True).stdout
    return tuple(int(v) for v in out.splitlines()[1].split()[:4])


def ours(data: bytes) -> tuple[int, int, int, int]:
    r = kernel_image_size(data)
    return r.text, r.data, r.bss, r.total


# ---------------------------------------------------------------------------
# ELF files to size: compiled with gcc, and written by hand for the byte
# orders and classes this machine's compiler cannot produce.
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# Compressed kernels.
# ---------------------------------------------------------------------------

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


#: (kind, data) -> what compress() gave: the same 17 MiB vmlinux is compressed by several tests
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
    """A kernel-like ELF with > 8 MiB of data, so lz4's legacy format needs several blocks."""
    sections = KERNEL_LIKE_SECTIONS + ((".data.big", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, 17 * 1024 * 1024),)
    return hand_elf(64, "little", sections)


@pytest.fixture(scope="module")
def vmlinux_size(vmlinux, tmp_path_factory) -> tuple[int, int, int, int]:
    if shutil.which("size") is None:
        pytest.skip("binutils `size` not installed")
    path = tmp_path_factory.mktemp("vmlinux") / "vmlinux"
    path.write_bytes(vmlinux)
    return berkeley_size(path)


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_bzimage_payload(kind, vmlinux, vmlinux_size):
    image = fake_bzimage(compress(kind, vmlinux))
    r = kernel_image_size(image)
    assert (r.text, r.data, r.bss, r.total) == vmlinux_size
    assert r.format == f"bzImage (boot protocol 2.15), {kind}-compressed ELF64 little-endian vmlinux"


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_raw_stream_after_junk(kind, vmlinux, vmlinux_size):
    # As in a vmlinuz that is no bzImage (or an old one): found by its magic,
    # behind junk holding false magics.
    junk = b"\x1f\x8b\x08\x00junk BZh91AY&SY \xfd7zXZ\x00 \x28\xb5\x2f\xfd \x02\x21\x4c\x18" + os.urandom(999)
    stream = compress(kind, vmlinux)
    r = kernel_image_size(junk + stream + b"trailing junk")
    assert (r.text, r.data, r.bss, r.total) == vmlinux_size
    assert r.format == f"{kind}-compressed ELF64 little-endian vmlinux at offset {len(junk):#x}"


def test_old_boot_protocol_falls_back_to_scanning(vmlinux, vmlinux_size):
    # Boot protocol < 2.08 has no payload fields: the magic scan finds it.
    image = fake_bzimage(compress("gzip", vmlinux), version=0x0207)
    r = kernel_image_size(image)
    assert (r.text, r.data, r.bss, r.total) == vmlinux_size
    assert r.format.startswith("gzip-compressed ELF64 little-endian vmlinux at offset ")


def test_setup_sects_zero_means_four(vmlinux, vmlinux_size):
    image = fake_bzimage(compress("gzip", vmlinux), setup_sects=0)
    r = kernel_image_size(image)
    assert (r.text, r.data, r.bss, r.total) == vmlinux_size
    assert r.format.startswith("bzImage")


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
    with pytest.raises(KernelImageError, match="not an ELF vmlinux or a compressed kernel image"):
        kernel_image_size(data)


def test_compressed_non_elf_is_rejected():
    # e.g. an arm64 Image.gz: gzip, but the payload is a raw image, not ELF.
    with pytest.raises(KernelImageError, match="not an ELF vmlinux"):
        kernel_image_size(compress("gzip", b"ARMd raw kernel image" * 1000))


def test_lzo_bzimage_is_named():
    image = fake_bzimage(b"\x89LZO\x00\r\n\x1a\n" + os.urandom(2000))
    with pytest.raises(KernelImageError, match="LZO"):
        kernel_image_size(image)


def test_truncated_stream_is_reported(vmlinux):
    stream = compress("xz", vmlinux)
    with pytest.raises(KernelImageError, match="xz stream is corrupt"):
        kernel_image_size(fake_bzimage(stream[: len(stream) // 2]))


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


def test_result_is_frozen():
    r = kernel_image_size(hand_elf(32, "big", KERNEL_LIKE_SECTIONS))
    assert isinstance(r, KernelImageSize)
    assert r.total == r.text + r.data + r.bss
    with pytest.raises(AttributeError):
        r.text = 0


# ---------------------------------------------------------------------------
# A real distribution kernel (tests/fetch_kernel.sh, or SMEM_TEST_KERNEL_DEB).
# ---------------------------------------------------------------------------

# scripts/extract-vmlinux: magic, then the command that decompresses from it.
EXTRACTORS = [
    (b"\x1f\x8b\x08", ["gunzip", "-c"]),
    (b"\xfd7zXZ\x00", ["unxz", "-c"]),
    (b"BZh", ["bunzip2", "-c"]),
    (b"\x5d\x00\x00\x00", ["unlzma", "-c"]),
    (b"\x28\xb5\x2f\xfd", ["zstd", "-d", "-c"]),
    (b"\x02\x21\x4c\x18", ["lz4", "-d", "-c"]),
]


def real_vmlinuz(tmp_path: Path) -> Path | None:
    deb = os.environ.get("SMEM_TEST_KERNEL_DEB")
    if deb:
        subprocess.run(["dpkg-deb", "-x", deb, str(tmp_path / "deb")], check=True)
        found = sorted((tmp_path / "deb" / "boot").glob("vmlinuz-*"))
        return found[0] if found else None
    found = sorted(CACHE.glob("root/boot/vmlinuz-*"))
    return found[0] if found else None


def extract_vmlinux(image: bytes, tmp_path: Path) -> Path | None:
    """The kernel's extract-vmlinux approach: try each magic's first offset with the CLI tool."""
    for magic, cmd in EXTRACTORS:
        pos = image.find(magic)
        if pos < 0 or shutil.which(cmd[0]) is None:
            continue
        # The tools exit non-zero on the trailing bytes after the stream, but
        # have written the stream's whole output by then.
        out = subprocess.run(cmd, input=image[pos:], capture_output=True).stdout
        if out[:4] == b"\x7fELF":
            path = tmp_path / "vmlinux"
            path.write_bytes(out)
            return path
    return None


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


def test_a_false_zstd_magic_does_not_stop_the_search_without_zstandard(vmlinux, vmlinux_size, tmp_path):
    """Without the zstandard package (smem[compression] not installed), junk that happens to hold
    a zstd magic is passed over and the gzip stream behind it still found; a kernel that is zstd
    alone names the package to install."""
    gzip_image = tmp_path / "gzip.img"
    gzip_image.write_bytes(b"junk \x28\xb5\x2f\xfd\x00\x58 junk" + compress("gzip", vmlinux))
    code = ("import sys; sys.modules['zstandard'] = None\n"  # as if not installed
            "from smem.parsers.kernel_image import kernel_image_size\n"
            "from smem.errors import KernelImageError\n"
            "r = kernel_image_size(open(sys.argv[1], 'rb').read()); print(r.text, r.data, r.bss, r.total)\n"
            "try:\n    kernel_image_size(b'\\x28\\xb5\\x2f\\xfd' + bytes(64))\n"
            "except KernelImageError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code, str(gzip_image)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], check=True).stdout.splitlines()
    assert tuple(map(int, out[0].split())) == vmlinux_size
    assert out[1] == "this kernel is zstd-compressed: install the Python package 'zstandard'"
