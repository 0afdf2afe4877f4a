"""A capture's text member of millions of short lines (a 64 MiB capture-info of ``a=`` lines
gzips to 300 KB; 256 MiB per member are allowed) is read in memory like its size.  The
capture-info, meminfo and SysV shm parsers split the member into a list of every line first:
1.8 GiB, 610 MiB and 1.2 GiB at 64 MiB, for a capture of 300 KB."""

import gzip
import os
import subprocess
import sys

import pytest

import hostile_inputs as hc

N = 64 << 20
SHM_HEAD = b"       key      shmid perms       size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime\n"
#: member: (its content, a view that reads it)
MEMBERS = {
    "capture-info": (b"pagesize=4096\n" + b"a=\n" * (N // 3), []),
    "meminfo": (hc.MEMINFO + b"X: 1 kB\n" * (N // 8), []),
    "sysvipc/shm": (SHM_HEAD + b"\n" * N, ["--shm"]),
}


def _peak_mib(path, args):
    with open(os.devnull, "wb") as null:
        child = subprocess.Popen([sys.executable, "-m", "smem", "-S", str(path), *args], stdout=null,
                                 stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
    assert os.waitstatus_to_exitcode(status) in (0, 1)
    return usage.ru_maxrss >> 10


@pytest.mark.parametrize("member", MEMBERS)
def test_a_member_of_millions_of_short_lines_costs_what_its_size_costs(tmp_path, member):
    data, args = MEMBERS[member]
    small, large = tmp_path / "small.tgz", tmp_path / "large.tgz"
    small.write_bytes(gzip.compress(hc.capture_tar(), 1))
    members = [m for m in hc.capture_members() if m[0] != member] + [(member, data)]
    large.write_bytes(gzip.compress(hc.tar_of(members), 1))
    growth = _peak_mib(large, args) - _peak_mib(small, args)
    assert growth < 4 * N >> 20, f"{growth} MiB more for a member of {N >> 20} MiB"  # (held, decoded: twice)
