"""A capture's text member of millions of short lines (a 64 MiB capture-info of ``a=`` lines
gzips to 300 KB; 256 MiB per member are allowed) is read in memory like its size.  The
capture-info, meminfo and SysV shm parsers split the member into a list of every line first:
1.8 GiB, 610 MiB and 1.2 GiB at 64 MiB, for a capture of 300 KB; and capture-info, meminfo and
a process's status kept every key of millions (``k1=``, ``k2=``, ...), where a real file has a
few dozen: 13 times the member's size.  A DRM client's fdinfo, a cgroup's memory.stat, iomem and
swaps of millions of entries took up to 28 times."""

import gzip
import subprocess
import sys

import pytest

import hostile_inputs as hc

pytestmark = pytest.mark.uses("cpu")

#: (16 MiB is enough to tell: the parsers that held a list or every key took 9 to 28 times a
#: member's size, the bound is 4 times, smem today takes at most 3: SysV shm's text, held and decoded)
N = 16 << 20
SHM_HEAD = b"       key      shmid perms       size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime\n"
#: member: (its content, a view that reads it).  The contents are made by the test that reads them,
#: not at import: each is tens of MiB, and every xdist worker imports every test module
MEMBERS = {
    "capture-info": (lambda: b"pagesize=4096\n" + b"a=\n" * (N // 3), []),
    "meminfo": (lambda: hc.MEMINFO + b"X: 1 kB\n" * (N // 8), []),
    "sysvipc/shm": (lambda: SHM_HEAD + b"\n" * N, ["--shm"]),
    "capture-info keys": (lambda: b"pagesize=4096\n" + b"".join(b"k%d=\n" % i for i in range(N // 10)), []),
    "meminfo keys": (lambda: hc.MEMINFO + b"".join(b"k%d: 1 kB\n" % i for i in range(N // 14)), []),
    "1234/status keys": (lambda: hc.STATUS + b"".join(b"k%d:\n" % i for i in range(N // 10)), ["-c", "pid rss_anon"]),
    # (the kernel's files of a few KiB: a member past 1 MiB (16 for zoneinfo and iomem) is refused)
    "1234/fdinfo/5 keys": (lambda: b"drm-pdev:\t0000:04:00.0\n" + b"".join(b"drm-resident-k%d:\t1 KiB\n" % i
                                                                             for i in range(N // 24)), ["-c", "pid gpu"]),
    "sys/fs/cgroup/a/memory.stat keys": (lambda: b"".join(b"k%d 1\n" % i for i in range(N // 10)), ["--cgroup"]),
    "iomem keys": (lambda: b"".join(b"00001000-0009ffff : k%d\n" % i for i in range(N // 26)), ["-w"]),
    "swaps keys": (lambda: b"Filename Type\n" + b"".join(b"/dev/k%d partition 1 0 -2\n" % i for i in range(N // 30)),
                   ["-w", "--breakdown"]),
}


#: runs smem (its argv) and prints its peak RSS in KiB: from a small process, since a child's peak
#: starts at its parent's RSS when forked, and this test's is hundreds of MiB
LAUNCH = """import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)"""


def _peak_mib(path, args):
    out = subprocess.run([sys.executable, "-c", LAUNCH, sys.executable, "-m", "smem", "-S", str(path), *args],
                         capture_output=True, check=True).stdout.split()
    assert int(out[0]) in (0, 1)
    return int(out[1]) >> 10


@pytest.mark.parametrize("member", MEMBERS)
def test_a_member_of_millions_of_short_lines_costs_what_its_size_costs(tmp_path, member):
    make, args = MEMBERS[member]
    data = make()
    small, large = tmp_path / "small.tgz", tmp_path / "large.tgz"
    small.write_bytes(gzip.compress(hc.capture_tar(), 1))
    name = member.removesuffix(" keys")
    members = [m for m in hc.capture_members() if m[0] != name] + [(name, data)]
    large.write_bytes(gzip.compress(hc.tar_of(members), 1))
    growth = _peak_mib(large, args) - _peak_mib(small, args)
    assert growth < 4 * N >> 20, f"{growth} MiB more for a member of {N >> 20} MiB"  # (held, decoded: twice)
