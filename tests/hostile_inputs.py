"""Hostile inputs for smem, made at test time (nothing large is kept in git): the building blocks.

A small valid capture and its files, its compressions, crafted tar headers, compressed bombs,
kernel image headers and exact-accounting members: what the hostile tests (tests/test_hostile*.py), the TCP and page
tests, and the corpus (hostile_corpus.py) make their damaged and absurd inputs from.
"""

import bz2
import gzip
import io
import lzma
import struct
import tarfile
import zlib

import pytest

MEMINFO = (b"MemTotal:        2048000 kB\nMemFree:          512000 kB\nMemAvailable:    1024000 kB\n"
           b"Buffers:           10000 kB\nCached:           300000 kB\nSwapTotal:       1000000 kB\n"
           b"SwapFree:         900000 kB\nShmem:             20000 kB\nSReclaimable:      30000 kB\n")
SMAPS = (b"00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n"
         b"Size:                328 kB\nRss:                 300 kB\nPss:                 150 kB\n"
         b"Shared_Clean:        300 kB\nShared_Dirty:          0 kB\nPrivate_Clean:         0 kB\n"
         b"Private_Dirty:         0 kB\nReferenced:          300 kB\nAnonymous:             0 kB\n"
         b"Swap:                  0 kB\nVmFlags: rd ex mr mw me dw\n"
         b"00651000-00652000 rw-p 00051000 08:02 173521      /usr/bin/dbus-daemon\n"
         b"Size:                  4 kB\nRss:                   4 kB\nPss:                   4 kB\n"
         b"Shared_Clean:          0 kB\nShared_Dirty:          0 kB\nPrivate_Clean:         0 kB\n"
         b"Private_Dirty:         4 kB\nReferenced:            4 kB\nAnonymous:             4 kB\n"
         b"Swap:                  0 kB\n")
STAT = b"1234 (dbus-daemon) S 1 1234 1234 0 -1 4202816 0 0 0 0 0 0 0 0 20 0 1 0 100 3362816 76 18446744073709551615\n"
STATUS = b"Name:\tdbus-daemon\nState:\tS (sleeping)\nPid:\t1234\nPPid:\t1\nUid:\t1000\t1000\t1000\t1000\n"
CMDLINE = b"dbus-daemon\0--system\0"


def process_files(pid=1234, **override):
    """The /proc files of one process, as {leaf: bytes}; ``override`` replaces some."""
    files = {"smaps": SMAPS, "cmdline": CMDLINE, "stat": STAT.replace(b"1234", str(pid).encode(), 1),
             "status": STATUS}
    files.update(override)
    return {k: v for k, v in files.items() if v is not None}


def tar_of(members):
    """An uncompressed tar from [(name, bytes or None for a directory, extra TarInfo fields)]."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for entry in members:
            name, data = entry[0], entry[1]
            extra = entry[2] if len(entry) > 2 else {}
            info = tarfile.TarInfo(name)
            info.mtime = 1700000000
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o555
            else:
                info.size, info.mode = len(data), 0o444
            for key, value in extra.items():
                setattr(info, key, value)
            tar.addfile(info, io.BytesIO(data) if data is not None and info.isreg() else None)
    return out.getvalue()


def capture_members(meminfo=MEMINFO, processes=None, extra=()):
    """Members of a small capture: meminfo, version and the processes ({pid: files})."""
    processes = {1234: process_files()} if processes is None else processes
    members = [("meminfo", meminfo), ("version", b"Linux version 6.1.0-13-amd64 (gcc) #1 SMP\n")]
    for pid, files in processes.items():
        members.append((str(pid), None, {"uid": 1000, "uname": "alice"}))
        members.extend((f"{pid}/{leaf}", data) for leaf, data in files.items())
    members.extend(extra)
    return members


def capture_tar(**kwargs):
    return tar_of(capture_members(**kwargs))


def without_end(tar):
    """The archive without its end blocks and padding, so that more members may follow."""
    body = tar.rstrip(b"\0")
    return body + bytes(-len(body) % 512)


def compress(kind, data):
    if kind == "gzip":
        return gzip.compress(data, 6, mtime=0)
    if kind == "bzip2":
        return bz2.compress(data)
    if kind == "xz":
        return lzma.compress(data)
    if kind == "zstd":
        return _zstandard().ZstdCompressor(write_checksum=True).compress(data)
    return data


def _zstandard():
    """zstandard, or this test skipped: only what makes zstd input needs smem[compression], not
    every test that builds a capture here."""
    return pytest.importorskip("zstandard", reason="zstd input needs smem[compression] (zstandard)")


KINDS = ("none", "gzip", "bzip2", "xz", "zstd")


def header(name=b"1234/smaps", size=0, kind=b"0", uid=0):
    """One ustar header, checksum computed: a member whose data need not follow."""
    h = bytearray(512)
    h[0:len(name)] = name
    h[100:108] = b"0000444\0"
    h[108:116] = b"%07o\0" % uid
    h[116:124] = b"0000000\0"
    h[124:136] = (b"%011o\0" % size) if size < 8 ** 11 else b"\x80" + size.to_bytes(11, "big")
    h[136:148] = b"14540000000\0"
    h[156:157] = kind
    h[257:265] = b"ustar\x0000"
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


#: The zeros one stream holds: gzip and zstd compress 64 MiB of zeros in hundredths of a second,
#: bzip2 and xz take a tenth for each 8 MiB (and a stream of 8 MiB inflates as far as any)
_UNIT = {"gzip": 64 << 20, "zstd": 64 << 20, "bzip2": 8 << 20, "xz": 8 << 20}
_ZEROS = {}


def zeros_stream(kind, nbytes, prefix=b""):
    """``prefix`` then about ``nbytes`` zeros, compressed by ``kind``: the bombs.

    The zeros are streams (or frames) of 64 MiB (bzip2, xz: 8 MiB) compressed once and
    repeated: every compression here allows concatenation, and a few KiB then inflate to
    gigabytes.
    """
    unit = min(_UNIT[kind], nbytes)
    if (kind, unit) not in _ZEROS:
        _ZEROS[kind, unit] = _compressed_zeros(kind, unit)
    return compress(kind, prefix) + _ZEROS[kind, unit] * max(1, nbytes // unit)


def _compressed_zeros(kind, nbytes):
    """``nbytes`` zeros compressed by ``kind``; gzip and xz told that the data is one run.

    Deflate's run-length strategy, and LZMA2 with xz's default 8 MiB dictionary but a short
    search, give what their defaults give (a stream of that format, as small) for zeros, and
    spare the search that makes the corpus slow to build.
    """
    zeros = bytes(nbytes)
    if kind == "gzip":
        deflate = zlib.compressobj(6, zlib.DEFLATED, 31, 8, zlib.Z_RLE)
        return deflate.compress(zeros) + deflate.flush()
    if kind == "xz":
        return lzma.compress(zeros, filters=[{"id": lzma.FILTER_LZMA2, "preset": 6, "mode": lzma.MODE_FAST,
                                              "mf": lzma.MF_HC3, "nice_len": 273}])
    return compress(kind, zeros)


def xz_with_dictionary(data, dict_code=40):
    """An xz stream whose LZMA2 dictionary property asks for 4 GiB (code 40), CRC fixed."""
    raw = bytearray(lzma.compress(data, preset=0))
    at = 12  # the block header follows the 12-byte stream header
    size = (raw[at] + 1) * 4
    block = raw[at:at + size]
    props = block.index(b"\x21\x01") + 2  # LZMA2 filter id 0x21, one byte of properties
    block[props] = dict_code
    block[-4:] = struct.pack("<I", zlib.crc32(bytes(block[:-4])))
    raw[at:at + size] = block
    return bytes(raw)


def one_stream(kind, nbytes, prefix=b""):
    """``prefix`` and ``nbytes`` zeros in one gzip or zstd stream (a kernel's payload is one)."""
    c = zlib.compressobj(1, zlib.DEFLATED, 31) if kind == "gzip" else \
        _zstandard().ZstdCompressor(level=1).compressobj()
    chunk = bytes(1 << 20)
    parts = [c.compress(prefix)] + [c.compress(chunk) for _ in range(nbytes >> 20)] + [c.flush()]
    return b"".join(parts)


def elf_header(shoff=0, shnum=0, phoff=0, phnum=0):
    """A 64-bit little-endian ELF header (vmlinux type) and nothing else."""
    return (b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, phoff, shoff, 0, 64,
                                                                  56, phnum, 64, shnum, 1))


def bzimage_header(payload_length, payload_offset=0):
    """The setup header of a bzImage (x86 boot protocol 2.15) whose payload follows it."""
    head = bytearray(1024)
    head[0x1F1] = 1
    head[0x202:0x206] = b"HdrS"
    head[0x206:0x208] = struct.pack("<H", 0x20F)
    head[0x248:0x250] = struct.pack("<II", payload_offset, payload_length)
    return bytes(head)


def zstd_with_window(log=31):
    """A zstd frame whose header asks for a 2**log byte window (no content size)."""
    descriptor = 0x00  # no checksum, no dictionary, not single segment, no content size
    window = (log - 10) << 3
    block = b"\x01\x00\x00"  # last block, raw, size 0
    return b"\x28\xb5\x2f\xfd" + bytes([descriptor, window]) + block


EXACT_SMAPS = (b"00400000-%08x rw-p 00000000 00:00 0 \nSize: %d kB\nRss: %d kB\nPss: %d kB\n"
               b"Private_Clean: 0 kB\nPrivate_Dirty: %d kB\nSwap: 0 kB\n")


def u64(values):
    values = [int(v) for v in values]
    return struct.pack(f"<{len(values)}Q", *values)


def frames_member(segments, pfns, swap=(), page_size=4096, counts=None):
    """An ``N/frames`` member as docs/capture-format.md describes it (deltas of uint64)."""
    n = (len(segments), len(pfns), len(swap)) if counts is None else counts
    deltas = [(b - a) % (1 << 64) for a, b in zip([0] + list(pfns), pfns)]
    swap_deltas = [(b - a) % (1 << 64) for a, b in zip([0] + list(swap), swap)]
    return (b"SMEMFRM1" + u64([page_size, *n]) + u64([v for s in segments for v in s]) + u64(deltas)
            + u64(swap_deltas))


def kpages_member(pfns, counts, page_size=4096, flags=None):
    deltas = [(b - a) % (1 << 64) for a, b in zip([0] + list(pfns), pfns)]
    return (b"SMEMKPG1" + u64([page_size, len(pfns), int(flags is not None)]) + u64(deltas) + u64(counts)
            + (u64(flags) if flags is not None else b""))


def exact_capture(pfns, swap=(), page_size=4096, frames=None, kpages=None, info=b""):
    """A capture with one process mapping ``pfns`` (and ``swap``), with exact members."""
    pages = max(len(pfns) + len(swap), 1)
    kib = pages * 4
    smaps = EXACT_SMAPS % (0x400000 + pages * 4096, kib, kib, kib, kib)
    files = process_files(smaps=smaps)
    frames = frames if frames is not None else frames_member([(0x400000, len(pfns), len(swap))], pfns, swap,
                                                             page_size)
    unique = sorted(set(pfns))
    kpages = kpages if kpages is not None else kpages_member(unique, [1] * len(unique), page_size)
    members = capture_members(processes={1234: files},
                              extra=[("1234/frames", frames), ("kpages.sparse", kpages),
                                     ("capture-info", b"pagesize=%d\n" % page_size + info)])
    return tar_of(members)
