"""Parser for /proc/PID/status (Documentation/filesystems/proc.rst, Table 1-2).

``Key:\tvalue`` lines.  We keep the raw text per key and offer helpers for
the ones smem uses: Uid/Gid (real, effective, saved, fs), PPid, Threads,
State, and the Vm*/Rss* sizes in KiB.
"""

import io

from . import MAX_ID, MAX_KEYS, MAX_KIB, plausible

__all__ = ["parse_status", "status_ids", "status_kib", "status_int"]


def parse_status(data):
    fields = {}
    for line in io.BytesIO(data):  # (line by line, MAX_KEYS at most: a capture's may hold millions)
        key, sep, value = line.partition(b":")
        if sep and (len(fields) < MAX_KEYS or key.decode("ascii", "replace") in fields):
            fields[key.decode("ascii", "replace")] = value.strip().decode("utf-8", "surrogateescape")
    return fields


def status_ids(fields, key):
    """Uid/Gid as a tuple (real, effective, saved, fs), or None if absent."""
    value = fields.get(key)
    if value is None:
        return None
    words = value.split()
    if any(len(w) > 12 for w in words):
        return None
    try:
        ids = tuple(int(w) for w in words)
    except ValueError:
        return None
    return ids if all(plausible(i, MAX_ID) is not None for i in ids) else None


def status_int(fields, key):
    value = fields.get(key)
    if value is None:
        return None
    try:
        word = value.split()[0]
        return plausible(int(word), MAX_KIB) if len(word) <= 20 else None
    except (ValueError, IndexError):
        return None


def status_kib(fields, key):
    """A ``VmRSS:   1234 kB`` style field in KiB, or None if absent."""
    return status_int(fields, key)
