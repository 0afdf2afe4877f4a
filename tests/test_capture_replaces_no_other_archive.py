"""`smem capture -o FILE` rewrites FILE without --force only if it already holds a capture (README,
"Captures"); any tar or gzip file passed for one, so `smem capture -o backup.tgz` replaced a
tarball of someone's /etc or home without a word. The first member of an existing archive (read
from its first block, decompressed) now tells: a capture's first member is one of its own
(capture-info, meminfo, a process's directory, ...); a file whose first block does not say
(bzip2 decompresses nothing before its first 900 KB block ends) is still taken for one."""

import bz2
import io
import lzma
import os
import random
import tarfile

import pytest

from conftest import FIXTURES, run_smem
from smem.output import looks_like_capture

CAPTURES = sorted((FIXTURES / "captures").glob("*.tar.gz"))


def _tar(names, mode="w:gz", size=0):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode) as tar:
        for name in names:
            info = tarfile.TarInfo(name)
            if name.endswith("/"):  # (a directory)
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
                continue
            data = f"the content of {name}\n".encode() + random.Random(name).randbytes(size)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.mark.parametrize("data", [
    _tar(["etc/hostname", "etc/passwd"]),
    _tar(["home/ana/thesis.tex"], mode="w"),
    _tar(["photos/2026/beach.jpg"], mode="w:xz"),
    lzma.compress(b"a text file, not an archive\n" * 20),
    bz2.compress(_tar(["etc/passwd"], mode="w")),
], ids=["tgz of /etc", "tar of a home", "txz of photos", "xz of text", "small tbz of /etc"])
def test_an_archive_that_holds_no_capture_is_kept(tmp_path, data):
    backup = tmp_path / "backup.tgz"
    backup.write_bytes(data)
    proc = run_smem("capture", "-o", backup)
    assert proc.returncode == 1 and proc.stdout == b""
    assert proc.stderr.decode() == (f"smem: refusing to replace {backup}: it exists and does not hold a capture; "
                                    "give --force to replace it\n")
    assert backup.read_bytes() == data and os.listdir(tmp_path) == ["backup.tgz"]


@pytest.mark.parametrize("capture", CAPTURES, ids=[c.name for c in CAPTURES])
def test_a_capture_is_still_taken_for_one(capture):
    with open(capture, "rb") as f:
        assert looks_like_capture(f.read(4096))


@pytest.mark.parametrize("data", [
    _tar(["meminfo", "1/smaps"], mode="w:xz"),
    _tar(["./capture-info", "./meminfo"], mode="w"),
    _tar(["proc/meminfo"]),
    _tar(["90021/smaps"]),
    bz2.compress(_tar(["etc/passwd"], mode="w", size=100_000)),  # (its first 4 KiB inflate to nothing)
], ids=["txz of a capture", "./ members", "old proc/ layout", "C smemcap's pid first", "bzip2"])
def test_what_may_be_a_capture_is_taken_for_one(data):
    assert looks_like_capture(data[:4096])


@pytest.mark.uses("cpu")  # (120 MiB compressed, and a Python started)
def test_a_small_zstd_file_that_inflates_to_a_lot_is_looked_at_a_block_only():
    """The check inflates the first block only: a 4 KB zstd file at the -o path that inflates to
    120 MiB (zeros; a crafted one to more) was inflated whole, all of it held at once."""
    zstandard = pytest.importorskip("zstandard")
    import subprocess
    import sys
    bomb = zstandard.ZstdCompressor(level=19).compress(b"\0" * (120 << 20))
    assert len(bomb) <= 4096  # (the part of a file the check is given)
    # (VmHWM, the peak of this process's own memory: ru_maxrss keeps the test's, from before exec)
    code = ("import re, sys; from smem.output import looks_like_capture; "
            "hwm = lambda: int(re.search(rb'VmHWM:\\s*(\\d+)', open('/proc/self/status', 'rb').read())[1]); "
            "before = hwm(); assert not looks_like_capture(sys.stdin.buffer.read()); print(hwm() - before)")
    grown = subprocess.run([sys.executable, "-c", code], input=bomb, capture_output=True, check=True,
                           cwd=FIXTURES.parent.parent)
    assert int(grown.stdout) < 16 * 1024, grown.stdout  # KiB: not the 120 MiB it inflates to


def _v7(names):
    """A plain tar of ``names`` in the old V7 form C smemcap writes (no "ustar" at 257)."""
    out = bytearray()
    for name in names:
        data = f"the content of {name}\n".encode()
        header = bytearray(tarfile.TarInfo(name).tobuf(format=tarfile.USTAR_FORMAT))
        header[148:156] = b" " * 8
        header[124:136] = b"%011o\0" % len(data)
        header[257:512] = bytes(255)  # (no magic, version, owner names or prefix)
        header[148:156] = b"%06o\0 " % sum(header)
        out += header + data + bytes(-len(data) % tarfile.BLOCKSIZE)
    return bytes(out + bytes(2 * tarfile.BLOCKSIZE))


def _pax(names, **kwargs):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT, **kwargs) as tar:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size = 3
            tar.addfile(info, io.BytesIO(b"abc"))
    return out.getvalue()


@pytest.mark.parametrize("data", [
    _pax(["repo/README.md"], pax_headers={"comment": "0123456789abcdef"}),  # (git archive: a global header first)
    _pax(["photos/" + "long name " * 12 + ".jpg"]),  # (a pax header for the long name)
    _tar(["2024/beach.jpg"]),
    _tar(["smem/__init__.py", "smem/cli.py"]),
    _tar(["sys/kernel.conf"]),
    bz2.compress(b"x\n"),
    bz2.compress(_tar(["etc/passwd"], mode="w", size=100_000)),
    __import__("gzip").compress(b"hello\n"),
    b"\x1f\x8b\x08\x00junk that inflates to nothing" * 3,
], ids=["git archive", "a long name", "a year's photos", "a source tree", "a sys/ of its own", "bzip2 of a line",
        "tbz of /etc", "gzip of a line", "gzip magic then junk"])
def test_more_archives_that_hold_no_capture_are_kept(tmp_path, data):
    assert not looks_like_capture(data)
    backup = tmp_path / "backup.tgz"
    backup.write_bytes(data)
    assert run_smem("capture", "-o", backup).returncode == 1
    assert backup.read_bytes() == data


@pytest.mark.parametrize("data", [
    _v7(["meminfo", "version", "90021/smaps"]),
    __import__("gzip").compress(_v7(["meminfo", "90021/smaps"])),
    _tar(["./", "./capture-info", "./meminfo"]),
    _tar(["90021/", "90021/smaps"]),
    _pax(["capture-info", "meminfo"], pax_headers={"comment": "made by hand"}),
    bz2.compress(_tar(["capture-info", "meminfo"], mode="w", size=100_000)),
], ids=["C smemcap's plain tar", "C smemcap's, gzipped", "tar -C dir .", "a process's directory first",
        "pax", "a tbz capture"])
def test_captures_of_every_form_are_taken_for_one(data):
    assert looks_like_capture(data)
