"""Parser for a cgroup v2 ``memory.stat`` (Documentation/admin-guide/cgroup-v2.rst, "memory.stat").

Lines are ``key value``: amounts in bytes (``anon``, ``file``, ``zswap``, ``zswapped``, ...)
and event counts (``pgfault``, ``zswpout``, ...), for the cgroup and its descendants.  The
keys smem reads: ``zswap`` (memory the cgroup's pages take in the zswap pool, compressed) and
``zswapped`` (those pages' size before compression), both Linux 5.19+, the cgroup's share of
meminfo's ``Zswap`` and ``Zswapped``.  A key a kernel does not print is absent, never 0;
unknown keys pass through; a line that is not ``key number`` (a damaged capture) is skipped,
as is a number no machine has.
"""

from typing import Dict

from . import plausible

__all__ = ["parse_memory_stat", "zswap_bytes"]


def parse_memory_stat(data) -> Dict[str, int]:
    """Every ``key number`` line of ``data`` (bytes), as {key: int}."""
    stats = {}
    for line in data.split(b"\n"):
        fields = line.split()
        if len(fields) != 2 or not fields[1].isdigit() or len(fields[1]) > 20:
            continue
        value = plausible(int(fields[1]))
        if value is not None:
            stats[fields[0].decode("ascii", "replace")] = value
    return stats


def zswap_bytes(stats):
    """(zswap, zswapped) bytes of a parsed memory.stat, or None where the kernel has no zswap
    accounting for cgroups (before 5.19, or CONFIG_ZSWAP off)."""
    zswap, zswapped = stats.get("zswap"), stats.get("zswapped")
    return None if zswap is None or zswapped is None else (zswap, zswapped)
