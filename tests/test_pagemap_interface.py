"""The kernel's pagemap interface (/proc/PID/pagemap, /proc/kpagecount, /proc/kpageflags) as
smem.exact reads it: the parsers on real bytes, this process's own pages written and not and a
process's swapped-out pages, read bit by bit (pagemap_bits.py) to see each entry means what smem
takes it to mean; and the clear error a user who may not read the interface gets.

Needs root and a readable /proc/kpagecount (CONFIG_PROC_PAGE_MONITOR).
"""

import mmap
import os
import pwd

import pytest

np = pytest.importorskip("numpy", reason="--exact needs smem[exact]")

from smem import exact
from smem.errors import SmemError
from smem.parsers import pagemap as pm
from smem.parsers.kpagecount import parse_kpagecount
from smem.parsers.kpageflags import FLAGS, parse_kpageflags
from smem.sources import LiveSource
import pagemap_bits as bits
from page_frames import has_flag, kpage_words, kpagecount_readable, mapping_at, smaps_of
from workload import PAGE_KIB, PAGE_SIZE, swapped_process


pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not kpagecount_readable(),
                                reason="exact accounting needs root and /proc/kpagecount")


def _own_pagemap(addr, pages):
    fd = os.open("/proc/self/pagemap", os.O_RDONLY)
    try:
        return pm.parse_pagemap(os.pread(fd, pages * 8, addr // PAGE_SIZE * 8))
    finally:
        os.close(fd)


def flag_names(value):
    """The names of the documented flags set in one kpageflags word, in bit order."""
    return [name for name, bit in FLAGS.items() if int(value) >> bit & 1]


def test_pagemap_fields_of_pages_we_wrote_and_pages_we_did_not():
    import ctypes
    m = mmap.mmap(-1, 8 * PAGE_SIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    m.madvise(mmap.MADV_NOHUGEPAGE)
    for i in range(0, 8, 2):
        m[i * PAGE_SIZE] = 1
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    e = _own_pagemap(addr, 8)
    assert e.dtype == np.uint64 and len(e) == 8
    assert bits.present(e).tolist() == [True, False] * 4
    assert not bits.swapped(e).any()
    assert not bits.file_shared(e[::2]).any()          # private anonymous
    assert bits.exclusive(e[::2]).all()                # mapped by us alone (Linux 4.2+)
    pfns = bits.pfn(e[::2])
    assert (pfns > 0).all() and len(set(pfns.tolist())) == 4
    assert (bits.pfn(e[1::2]) == 0).all()
    assert kpage_words("kpagecount", pfns).tolist() == [1] * 4
    flags = kpage_words("kpageflags", pfns)
    assert has_flag(flags, "ANON").all() and not has_flag(flags, "ZERO_PAGE").any()
    assert "ANON" in flag_names(flags[0]) and "MMAP" in flag_names(flags[0])


def test_parsers_refuse_partial_entries():
    for parse in (pm.parse_pagemap, parse_kpagecount, parse_kpageflags):
        with pytest.raises(ValueError):
            parse(b"\0" * 12)
        assert len(parse(b"")) == 0


def test_kpageflags_table_matches_the_kernel_header_numbers():
    # include/uapi/linux/kernel-page-flags.h, as pagemap.rst lists them
    assert (FLAGS["LOCKED"], FLAGS["ANON"], FLAGS["KSM"], FLAGS["THP"],
            FLAGS["ZERO_PAGE"], FLAGS["IDLE"], FLAGS["PGTABLE"]) == (0, 12, 21, 22, 24, 25, 26)
    assert sorted(FLAGS.values()) == list(range(27))


@pytest.mark.xdist_group("swap")  # (with test_breakdown's zram swap, whose swapoff would page ours back in)
def test_swap_entries_split_into_type_and_offset():
    with swapped_process(1024) as wl:
        if not wl.info["swapped"]:
            pytest.skip("nothing was paged out (no swap?)")
        pid = wl.pids[0]
        region = wl.regions[pid]["anon"]
        fd = os.open(f"/proc/{pid}/pagemap", os.O_RDONLY)
        try:
            e = pm.parse_pagemap(os.pread(fd, (region.end - region.start) // PAGE_SIZE * 8,
                                          region.start // PAGE_SIZE * 8))
        finally:
            os.close(fd)
        m = mapping_at(pid, region.start)
        sw = e[bits.swapped(e)]
        assert len(sw) * PAGE_KIB == m.counters["Swap"]
        with open("/proc/swaps") as f:
            areas = len(f.read().splitlines()) - 1
        assert (bits.swap_type(sw) < areas).all()
        offsets = bits.swap_offset(sw)
        assert len(set(offsets.tolist())) == len(sw) and (offsets > 0).all()
        assert (bits.swap_entry(sw) == (bits.swap_type(sw) | (offsets << np.uint64(5)))).all()
        # and exact accounting counts the same slots, as smaps does
        acc = exact.account(LiveSource(), {pid: [m]})
        assert acc.process(pid).swap_kib == m.counters["Swap"]
        assert acc.process(pid).rss_kib == m.counters["Rss"]


def test_unprivileged_user_gets_a_clear_error():
    """A child of this test drops to nobody (as a non-root smem user runs) and tries."""
    nobody = pwd.getpwnam("nobody")
    maps = {os.getpid(): smaps_of(os.getpid())}
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # never return into pytest from here
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            try:
                exact.account(LiveSource(), maps)
                message = "no error"
            except exact.ExactUnavailable as e:
                message = "ExactUnavailable: " + str(e)
            os.write(w, message.encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        message = f.read().decode()
    os.waitpid(pid, 0)
    assert message.startswith("ExactUnavailable: ")
    assert "root" in message and "kpagecount" in message
    assert issubclass(exact.ExactUnavailable, SmemError)
