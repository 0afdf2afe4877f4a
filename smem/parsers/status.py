"""Parser for /proc/PID/status (Documentation/filesystems/proc.rst, Table 1-2).

``Key:\tvalue`` lines.  We keep the raw text per key and offer helpers for
the ones smem uses: Uid/Gid (real, effective, saved, fs), PPid, Threads,
State, and the Vm*/Rss* sizes in KiB.
"""

__all__ = ["parse_status", "status_ids", "status_kib", "status_int"]


def parse_status(data):
    fields = {}
    for line in data.split(b"\n"):
        key, sep, value = line.partition(b":")
        if sep:
            fields[key.decode("ascii", "replace")] = value.strip().decode("utf-8", "surrogateescape")
    return fields


def status_ids(fields, key):
    """Uid/Gid as a tuple (real, effective, saved, fs), or None if absent."""
    value = fields.get(key)
    if value is None:
        return None
    try:
        return tuple(int(v) for v in value.split())
    except ValueError:
        return None


def status_int(fields, key):
    value = fields.get(key)
    if value is None:
        return None
    try:
        return int(value.split()[0])
    except (ValueError, IndexError):
        return None


def status_kib(fields, key):
    """A ``VmRSS:   1234 kB`` style field in KiB, or None if absent."""
    return status_int(fields, key)
