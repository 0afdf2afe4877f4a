"""Parser for /proc/PID/smaps and /proc/PID/smaps_rollup.

Format (Documentation/filesystems/proc.rst, "The /proc/PID/smaps"): each
mapping is a header line as in /proc/PID/maps::

    00400000-0048a000 r-xp 00000000 fd:03 960637       /bin/bash

followed by ``Key:   value kB`` counter lines (Size, Rss, Pss, Shared_Clean,
..., the set depends on the kernel version) and a few lines that are not in
kB (``VmFlags:``, ``THPeligible:``, ``ProtectionKey:``, Android's ``Name:``).
smaps_rollup has the same shape with a single ``[rollup]`` pseudo-mapping.

Every ``kB`` counter is kept under the kernel's own key, unknown ones
included, so new columns need no parser change; a key a kernel does not print
is simply absent.  Mapping names keep their spaces and a trailing
`` (deleted)``; bytes that are not UTF-8 survive as surrogate escapes.
"""

__all__ = ["Mapping", "parse_smaps", "ANONYMOUS"]

#: The name smem has always given to a mapping without a path.
ANONYMOUS = "<anonymous>"

_KEYS = {}  # b"Key:" -> "Key", shared by all parses (there are ~30 keys)


class Mapping:
    """One virtual memory area and its counters (KiB, keyed as the kernel names them)."""

    __slots__ = ("start", "end", "perms", "offset", "device", "inode", "name",
                 "counters", "attributes")

    def __init__(self, start, end, perms, offset, device, inode, name):
        self.start = start
        self.end = end
        self.perms = perms
        self.offset = offset
        self.device = device
        self.inode = inode
        self.name = name
        self.counters = {}
        self.attributes = {}

    def get(self, key, default=None):
        return self.counters.get(key, default)

    def __repr__(self):
        return f"Mapping({self.start:#x}-{self.end:#x} {self.perms} {self.name!r})"


def _header(line):
    parts = line.split(None, 5)
    if len(parts) < 5:
        raise ValueError(f"malformed smaps header: {line[:80]!r}")
    start, _, end = parts[0].partition(b"-")
    name = parts[5].rstrip(b"\r") if len(parts) > 5 else b""
    return Mapping(
        int(start, 16), int(end, 16),
        parts[1].decode("ascii", "replace"),
        int(parts[2], 16),
        parts[3].decode("ascii", "replace"),
        int(parts[4]),
        name.decode("utf-8", "surrogateescape") if name else ANONYMOUS,
    )


def parse_smaps(data):
    """Parse smaps (or smaps_rollup) bytes into a list of :class:`Mapping`.

    Lines before the first header are ignored; so are blank lines and a
    missing final newline.  A malformed header raises ``ValueError``.
    """
    mappings = []
    current = None
    counters = None
    keys = _KEYS
    for line in data.split(b"\n"):
        parts = line.split()
        if not parts:
            continue
        first = parts[0]
        if first[-1] == 58:  # b":" -> a "Key: value" line (spaces or tabs)
            if current is None:
                continue
            key = keys.get(first)
            if key is None:
                key = keys[first] = first[:-1].decode("ascii", "replace")
            if len(parts) == 3 and parts[2] == b"kB":
                counters[key] = int(parts[1])
            else:
                current.attributes[key] = b" ".join(parts[1:]).decode("utf-8", "surrogateescape")
        elif b"-" in first:
            current = _header(line)
            counters = current.counters
            mappings.append(current)
    return mappings
