"""Parsers for what the kernel lists of every dma-buf, held or not: the sysfs statistics
``/sys/kernel/dmabuf/buffers/<inode>/size`` and ``exporter_name``
(Documentation/ABI/testing/sysfs-kernel-dmabuf-buffers, CONFIG_DMABUF_SYSFS_STATS, Linux 5.13+,
deprecated in 6.x) and debugfs ``/sys/kernel/debug/dma_buf/bufinfo`` (drivers/dma-buf/dma-buf.c,
``dma_buf_debug_show``: after a header line ``size flags mode count exp_name ino name``, one
line per buffer, its attachments and fences indented below it, and a closing ``Total ...``).

A buffer is named by its inode (its fdinfo ``ino:``, its ``/dmabuf:`` mappings' inode).
Damaged lines are skipped; a listing cut short gives the buffers before the cut.
"""

from typing import Dict, Optional

from . import MAX_BYTES

__all__ = ["parse_dmabuf_size", "parse_dmabuf_bufinfo"]


def parse_dmabuf_size(data) -> Optional[int]:
    """The bytes a ``size`` file holds, or None where it holds no size."""
    text = data.strip()
    if not text.isdigit() or len(text) > 20:
        return None
    value = int(text)
    return value if value < MAX_BYTES else None


def parse_dmabuf_bufinfo(data) -> Dict[int, int]:
    """{inode: size bytes} of every buffer line of a bufinfo (bytes)."""
    buffers = {}
    columns = None
    for line in data.split(b"\n"):
        fields = line.split()
        if columns is None:
            if fields[:1] == [b"size"] and b"ino" in fields:
                columns = (fields.index(b"size"), fields.index(b"ino"))
            continue
        if not fields or line[:1].isspace() or len(fields) <= max(columns):
            continue
        size, inode = fields[columns[0]], fields[columns[1]]
        if not (size.isdigit() and inode.isdigit()) or len(size) > 20 or len(inode) > 20:
            continue
        if int(size) < MAX_BYTES and int(inode) < MAX_BYTES:
            buffers.setdefault(int(inode), int(size))
    return buffers
