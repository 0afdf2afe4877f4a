"""Parser for /proc/PID/maps (Documentation/filesystems/proc.rst, "/proc/PID/maps"; the same
header lines open each entry of ``smaps``).

Each line is one mapping::

    address           perms offset  dev   inode      pathname
    00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon

The device and inode name the object a mapping maps: a file, a tmpfs or /dev/shm file, a memfd,
a SysV segment or a MAP_SHARED anonymous region (each of the last four an inode of the kernel's
shmem).  Two processes mapping the same (device, inode) may share its pages; an inode of 0 is
anonymous memory (or a special mapping such as [vdso]) that only a fork shares.  The kernel
builds this file from the mapping list alone, without walking page tables as smaps does.

A mapped dma-buf's pathname is ``/dmabuf:NAME`` (Linux 5.3+, its file on the dma-buf pseudo
filesystem) and its inode the buffer's, as in its fdinfo ``ino:`` and
/sys/kernel/dmabuf/buffers/<inode>.  Lines that are damaged are skipped.
"""

from typing import Dict

from . import MAX_BYTES

__all__ = ["DMABUF_PREFIX", "dmabuf_mappings", "parse_maps_objects", "parse_maps_ranges"]

#: how a mapped dma-buf's pathname starts: a mapping of no other name is one
DMABUF_PREFIX = "/dmabuf:"


_DMABUF = DMABUF_PREFIX.encode("ascii")


def dmabuf_mappings(data) -> Dict[int, int]:
    """{inode: KiB mapped} of the dma-buf mappings in maps or smaps text (bytes): a buffer
    mapped twice adds its ranges."""
    found = {}
    start = 0
    while True:
        at = data.find(_DMABUF, start)
        if at < 0:
            return found
        line_start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        start = len(data) if end < 0 else end + 1
        fields = data[line_start:at].split()
        if len(fields) != 5 or not fields[4].isdigit() or len(fields[4]) > 20:
            continue
        low, dash, high = fields[0].partition(b"-")
        try:
            size = int(high, 16) - int(low, 16)
        except ValueError:
            continue
        inode = int(fields[4])
        if not dash or not 0 < size < MAX_BYTES or inode >= MAX_BYTES:
            continue
        found[inode] = found.get(inode, 0) + size // 1024


def parse_maps_objects(data):
    """{(device, inode): KiB mapped} of the objects ``data`` (maps bytes) maps, the device and
    inode as bytes (b"08:02", b"173521"); a line that is not a mapping is passed over."""
    objects = {}
    for line in data.split(b"\n"):
        fields = line.split(None, 5)
        if len(fields) >= 5 and fields[4] != b"0":
            start, _, end = fields[0].partition(b"-")
            try:
                kib = (int(end, 16) - int(start, 16)) >> 10
            except ValueError:
                continue
            key = (fields[3], fields[4])
            objects[key] = objects.get(key, 0) + kib
    return objects


def parse_maps_ranges(data):
    """[(start, end)] byte addresses of each mapping in ``data`` (maps bytes), in file order; a
    line whose range is damaged (not hex, end before start, past 64 bits) is passed over."""
    ranges = []
    for line in data.split(b"\n"):
        low, dash, rest = line.partition(b"-")
        high = rest.split(None, 1)[0] if rest else b""
        if not dash or not 0 < len(low) <= 16 or not 0 < len(high) <= 16:
            continue
        try:
            start, end = int(low, 16), int(high, 16)
        except ValueError:
            continue
        if start < end:
            ranges.append((start, end))
    return ranges
