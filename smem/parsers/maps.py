"""Parser for the dma-buf lines of ``/proc/PID/maps`` (Documentation/filesystems/proc.rst,
"/proc/PID/maps"; the same header lines open each entry of ``smaps``).

A line is ``start-end perms offset dev inode pathname``.  A mapped dma-buf's pathname is
``/dmabuf:NAME`` (Linux 5.3+, its file on the dma-buf pseudo filesystem) and its inode the
buffer's, as in its fdinfo ``ino:`` and /sys/kernel/dmabuf/buffers/<inode>.  Lines that are
not a dma-buf mapping, or are damaged, are skipped.
"""

from typing import Dict

from . import MAX_BYTES

__all__ = ["dmabuf_mappings"]


def dmabuf_mappings(data) -> Dict[int, int]:
    """{inode: KiB mapped} of the dma-buf mappings in maps or smaps text (bytes): a buffer
    mapped twice adds its ranges."""
    found = {}
    start = 0
    while True:
        at = data.find(b"/dmabuf:", start)
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
