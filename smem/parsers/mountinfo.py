"""Parser for /proc/PID/mountinfo (Documentation/filesystems/proc.rst, "/proc/<pid>/mountinfo").

One line per mount::

    36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
    (1)(2)(3)   (4)   (5)      (6)      (7)   (8) (9)   (10)         (11)

(3) is the device's ``major:minor`` (decimal), (5) the mount point, then optional
fields up to the ``-`` separator, (9) the filesystem type and (10) its source.  Paths
escape space, tab, newline and backslash as octal (``\\040``); they are decoded here.
A carriage return (or \\x1c, U+2028) in a path is not escaped: only a newline ends a line.
"""

import re
from typing import List, NamedTuple, Tuple

__all__ = ["Mount", "parse_mountinfo", "unescape"]

_OCTAL = re.compile(r"\\([0-7]{3})")


def unescape(text):
    """A path as the kernel's seq_file escapes it (``\\040`` for a space), decoded."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), text)


class Mount(NamedTuple):
    mount_id: int
    device: Tuple[int, int]     # (major, minor), as st_dev and smaps name the device
    mount_point: str
    fstype: str
    source: str


def parse_mountinfo(data) -> List[Mount]:
    mounts = []
    for line in data.decode("utf-8", "surrogateescape").split("\n"):
        fields = line.split(" ")
        if "-" not in fields[6:]:
            continue
        dash = fields.index("-", 6)
        if len(fields) < dash + 3:
            continue
        major, sep, minor = fields[2].partition(":")
        if not (sep and major.isdigit() and minor.isdigit() and fields[0].isdigit()):
            continue
        mounts.append(Mount(int(fields[0]), (int(major), int(minor)), unescape(fields[4]),
                            fields[dash + 1], unescape(fields[dash + 2])))
    return mounts
