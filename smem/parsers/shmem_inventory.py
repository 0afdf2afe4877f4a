"""Parser for a capture's ``smem/shmem`` member: the shared-memory objects no /proc file lists
(docs/capture-format.md, "Shared memory").

``smem capture`` and scripts/smemcap.sh write it (the live source builds the same text,
smem/sources/shmem_probe.py), so that ``smem --shm`` reads a capture as it reads the live
system.  One object per line, amounts in bytes, ``-`` for what the writer could not learn;
the name is the rest of the line, with ``\\ooo`` octal escapes (as /proc/mounts writes)::

    mount MAJOR:MINOR FSTYPE CAPACITY USED FILES RSS MOUNT-POINT
    file MAJOR:MINOR INODE SIZE ALLOCATED RSS PATH
    memfd MAJOR:MINOR INODE SIZE ALLOCATED RSS PID FD NAME

``mount``: a tmpfs (or devtmpfs) mount; CAPACITY and USED from statfs(2) (blocks times
block size: tmpfs counts a page in RAM or in swap as used); FILES the regular files
walked, and RSS the sum of their pages in RAM, where every file was walked.
``file``: a regular file in such a mount (st_size, st_blocks * 512, and its pages in
RAM from cachestat(2) or mincore(2)).  ``memfd``: one descriptor PID holds (fd FD)
on a memfd (``/proc/PID/fd/FD`` -> ``/memfd:NAME (deleted)``), stat of the descriptor.
Lines of kinds not known here, and lines that do not parse, are skipped.
"""

from typing import NamedTuple, Optional, Tuple

from . import MAX_BYTES, plausible
from .mountinfo import unescape

__all__ = ["TmpfsMount", "TmpfsFile", "MemfdHandle", "ShmemInventory", "parse_shmem_inventory", "escape",
           "HEADER"]

HEADER = "# smem shmem inventory 1"


class TmpfsMount(NamedTuple):
    device: Tuple[int, int]
    fstype: str
    capacity: Optional[int]   # bytes
    used: Optional[int]       # bytes in RAM or swap
    files: Optional[int]      # regular files, where all were walked
    rss: Optional[int]        # bytes in RAM of all its files, where known
    mount_point: str


class TmpfsFile(NamedTuple):
    device: Tuple[int, int]
    inode: int
    size: Optional[int]
    allocated: Optional[int]  # bytes in RAM or swap
    rss: Optional[int]
    path: str


class MemfdHandle(NamedTuple):
    device: Tuple[int, int]
    inode: int
    size: Optional[int]
    allocated: Optional[int]
    rss: Optional[int]
    pid: int
    fd: int
    name: str                 # what the link says after "/memfd:", without " (deleted)"


class ShmemInventory(NamedTuple):
    mounts: Tuple[TmpfsMount, ...]
    files: Tuple[TmpfsFile, ...]
    memfds: Tuple[MemfdHandle, ...]


def escape(name):
    """A name for the last field of a line: backslash, newline, tab and CR as ``\\ooo``."""
    return "".join(f"\\{ord(c):03o}" if c in "\\\n\t\r" else c for c in name)


def _amount(word):
    if word == "-" or not word.isdigit() or len(word) > 20:
        return None
    return plausible(int(word), MAX_BYTES)


def _device(word):
    major, sep, minor = word.partition(":")
    if not (sep and major.isdigit() and minor.isdigit() and len(word) < 24):
        raise ValueError(word)
    return int(major), int(minor)


def _whole(word):
    value = _amount(word)
    if value is None:
        raise ValueError(word)
    return value


_FIELDS = {"mount": 7, "file": 6, "memfd": 8}


def parse_shmem_inventory(data) -> ShmemInventory:
    mounts, files, memfds = [], [], []
    for line in data.decode("utf-8", "surrogateescape").split("\n"):
        kind = line.partition(" ")[0]
        count = _FIELDS.get(kind)
        if count is None:
            continue
        fields = line.split(" ", count)
        if len(fields) != count + 1 or not fields[-1]:
            continue
        name = unescape(fields[-1])
        try:
            if kind == "mount":
                mounts.append(TmpfsMount(_device(fields[1]), fields[2], *map(_amount, fields[3:7]), name))
            elif kind == "file":
                files.append(TmpfsFile(_device(fields[1]), _whole(fields[2]), *map(_amount, fields[3:6]), name))
            else:
                memfds.append(MemfdHandle(_device(fields[1]), _whole(fields[2]), *map(_amount, fields[3:6]),
                                          _whole(fields[6]), _whole(fields[7]), memfd_name(name)))
        except ValueError:
            continue
    return ShmemInventory(tuple(mounts), tuple(files), tuple(memfds))


def memfd_name(link):
    """``/memfd:NAME (deleted)`` (a descriptor's link or a mapping's name) -> NAME."""
    name = link[len("/memfd:"):] if link.startswith("/memfd:") else link
    return name[:-len(" (deleted)")] if name.endswith(" (deleted)") else name
