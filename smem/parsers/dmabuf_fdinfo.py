"""Parser for the fdinfo of a dma-buf file descriptor, ``/proc/PID/fdinfo/FD``
(Documentation/filesystems/proc.rst, "3.8 /proc/<pid>/fdinfo/<fd>", dma-buf files;
Documentation/driver-api/dma-buf.rst).

Beside ``pos``/``flags``/``mnt_id``/``ino`` a dma-buf fd shows ``size`` (the buffer's bytes),
``count`` (references to its file), ``exp_name`` (the exporter) and, where set, ``name``.
The inode (``ino``) names the buffer on the machine: the same number is the inode of its
``/dmabuf:`` mappings in /proc/PID/maps and its directory in /sys/kernel/dmabuf/buffers.

Not a dma-buf (no ``exp_name``), or one without a usable inode or size: None.  A key
printed twice keeps its first value; numbers no machine has are damage (None).
"""

from typing import NamedTuple, Optional

from . import MAX_BYTES

__all__ = ["DmaBufFdinfo", "parse_dmabuf_fdinfo"]


class DmaBufFdinfo(NamedTuple):
    inode: int
    size_bytes: int
    exporter: str
    name: Optional[str]


def _number(text):
    if text is None or not (text.isascii() and text.isdigit()) or len(text) > 20:
        return None
    value = int(text)
    return value if value < MAX_BYTES else None


def parse_dmabuf_fdinfo(data) -> Optional[DmaBufFdinfo]:
    """The dma-buf an fdinfo (bytes) describes, or None where it is no dma-buf's."""
    keys = {}
    for line in data.decode("utf-8", "replace").split("\n"):
        key, sep, value = line.partition(":")
        if sep:
            keys.setdefault(key.strip(), value.strip())
    exporter = keys.get("exp_name")
    inode, size = _number(keys.get("ino")), _number(keys.get("size"))
    if not exporter or inode is None or size is None:
        return None
    return DmaBufFdinfo(inode, size, exporter, keys.get("name") or None)
