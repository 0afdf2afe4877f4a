"""Parser for /proc/sysvipc/shm: the System V shared memory segments (man 5 proc, "/proc/sysvipc";
the kernel's ipc/shm.c, ``sysvipc_shm_proc_show``).

A header line names the columns, then one line per segment (here without the
uid, gid, cuid, cgid, atime, dtime and ctime columns between nattch and rss)::

           key      shmid perms       size  cpid  lpid nattch ...        rss       swap
             0          5   600    8388608 26397 26397      1 ...    8388608          0

``size``, ``rss`` and ``swap`` are in bytes.  ``rss`` and ``swap`` came later (Linux 3.10,
``shm_add_rss_swap``); the columns are read by the header's names, so a kernel without
them gives None for them, never 0.  ``perms`` is octal; ``key`` is signed
(printed with ``%10d``).  A line that does not parse is skipped.
"""

from typing import List, NamedTuple, Optional

from . import MAX_BYTES, plausible, text_lines

__all__ = ["ShmSegment", "parse_sysvipc_shm"]


class ShmSegment(NamedTuple):
    key: int                 # the IPC key (0 for IPC_PRIVATE)
    shmid: int               # the segment's id: also the inode of its mappings in smaps
    perms: int
    size: int                # bytes, as asked for at shmget
    cpid: Optional[int]      # creator
    lpid: Optional[int]      # last shmat/shmdt
    nattch: Optional[int]    # attachments (the kernel's count)
    uid: Optional[int]
    rss: Optional[int]       # bytes in RAM (None: the kernel does not say)
    swap: Optional[int]      # bytes in swap (None: the kernel does not say)


def _number(fields, index, base=10, signed=False):
    if index is None or index >= len(fields):
        return None
    word = fields[index]
    if len(word) > 24:
        return None
    try:
        value = int(word, base)
    except ValueError:
        return None
    if signed and -(1 << 31) <= value < 0:
        return value
    return plausible(value, MAX_BYTES)


def parse_sysvipc_shm(data) -> List[ShmSegment]:
    lines = text_lines(data.decode("ascii", "replace"))
    names = next(lines, "").split()
    column = {name: i for i, name in enumerate(names)}
    if not {"key", "shmid", "size"} <= column.keys():
        return []
    segments = []
    for line in lines:
        fields = line.split()
        key = _number(fields, column["key"], signed=True)
        shmid = _number(fields, column["shmid"])
        size = _number(fields, column["size"])
        perms = _number(fields, column.get("perms"), 8)
        if key is None or shmid is None or size is None:
            continue
        segments.append(ShmSegment(key, shmid, perms or 0, size,
                                   *(_number(fields, column.get(n)) for n in ("cpid", "lpid", "nattch", "uid",
                                                                               "rss", "swap"))))
    return segments
