"""A live /proc file is read whole, whatever its size, in the fewest system calls: the files a
short read ends (smem.sources.proc_files.WHOLE_IF_SHORT) are not read again to find their end,
and the rest are read until a read gives nothing.  Real processes: ones with command lines of
every size around the first read's 64 KiB, and one with thousands of mappings, whose smaps comes
a page or so a read."""

import mmap
import os
import subprocess
import sys
import time

import pytest

from smem.sources import LiveSource
from smem.sources.proc_files import WHOLE_IF_SHORT

FIRST_READ = 1 << 16


def _sleeper(args_bytes):
    """A process whose cmdline is ``args_bytes`` long (NULs included), sleeping."""
    argv0 = [sys.executable, "-c", "import time; time.sleep(60)"]
    head = sum(len(a.encode()) + 1 for a in argv0)
    pad = args_bytes - head
    assert pad > 1
    chunks = []  # arguments of at most 64 KiB (MAX_ARG_STRLEN is 128 KiB), each with its NUL
    while pad > 0:
        n = min(pad, FIRST_READ)
        chunks.append("x" * (n - 1))
        pad -= n
    return subprocess.Popen(argv0 + chunks)


@pytest.mark.parametrize("size", [FIRST_READ - 1, FIRST_READ, FIRST_READ + 1, 3 * FIRST_READ + 7])
def test_a_command_line_of_any_size_is_read_whole(size):
    process = _sleeper(size)
    try:
        deadline = time.monotonic() + 30
        while True:  # (until it has exec'd: before, the command line is smem's or empty)
            with open(f"/proc/{process.pid}/cmdline", "rb") as f:
                expected = f.read()
            if len(expected) == size or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        assert len(expected) == size
        assert LiveSource().read(f"{process.pid}/cmdline") == expected
    finally:
        process.kill()
        process.wait()


def test_a_smaps_of_thousands_of_mappings_is_read_whole_and_its_rollup_in_one_read():
    """smaps is a seq_file of many records: a read returns what its buffer held, less than asked
    long before the end, so only a read that gives nothing ends it."""
    assert "smaps" not in WHOLE_IF_SHORT and "maps" not in WHOLE_IF_SHORT
    regions = []
    page = mmap.PAGESIZE
    for n in range(3000):  # alternate protections, so that no two merge into one mapping
        region = mmap.mmap(-1, page, prot=mmap.PROT_READ | (mmap.PROT_WRITE if n % 2 else 0))
        regions.append(region)
    try:
        source = LiveSource()
        pid = os.getpid()
        smaps = source.read(f"{pid}/smaps")
        assert len(smaps) > 4 * FIRST_READ
        assert smaps.count(b"\nRss:") >= 3000
        assert smaps.endswith(b"\n") and smaps.rstrip().rsplit(b"\n", 1)[-1].startswith(b"VmFlags:")
        rollup = source.read(f"{pid}/smaps_rollup")
        assert rollup.split(b"\n", 1)[0].endswith(b"[rollup]") and rollup.endswith(b" kB\n")
        assert int(rollup.split(b"\nRss:", 1)[1].split()[0]) > 0
    finally:
        for region in regions:
            region.close()
