"""What the exact-accounting tests read from /proc for themselves, to check smem.exact against:
whether the frame tables can be read here, a live process's mappings, and the kernel's count and
flags of given frames.  Shared by test_exact.py and test_pagemap_interface.py.
"""

import os

import numpy as np

from smem.parsers.kpagecount import parse_kpagecount
from smem.parsers.kpageflags import FLAGS, parse_kpageflags
from smem.parsers.smaps import parse_smaps


def kpagecount_readable():
    """Whether /proc/kpagecount can be read here (root, CONFIG_PROC_PAGE_MONITOR)."""
    try:
        fd = os.open("/proc/kpagecount", os.O_RDONLY)
    except OSError:
        return False
    try:
        return len(os.pread(fd, 8, 0)) == 8
    except OSError:
        return False
    finally:
        os.close(fd)


def smaps_of(pid):
    with open(f"/proc/{pid}/smaps", "rb") as f:
        return parse_smaps(f.read())


def mapping_at(pid, start):
    """The smaps entry of ``pid`` that starts at ``start``."""
    (m,) = [m for m in smaps_of(pid) if m.start == start]
    return m


def kpage_words(name, pfns):
    """The /proc/kpagecount or /proc/kpageflags (``name``) word of each frame of ``pfns``."""
    fd = os.open(f"/proc/{name}", os.O_RDONLY)
    try:
        parse = parse_kpagecount if name == "kpagecount" else parse_kpageflags
        return np.concatenate([parse(os.pread(fd, 8, int(p) * 8)) for p in pfns])
    finally:
        os.close(fd)


def has_flag(flags, name):
    """Bool array: kpageflags words ``flags`` have flag ``name`` set (smem itself masks FLAGS' bits)."""
    return (flags & np.uint64(1 << FLAGS[name])) != 0
