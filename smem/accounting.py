"""Derived figures: the anonymous / file / shmem split of PSS, and sums of counters.

The kernel splits PSS by page type only in smaps_rollup (Pss_Anon, Pss_File,
Pss_Shmem, Linux 5.9+; Documentation/filesystems/proc.rst).  Where only
per-mapping smaps is available (older kernels, captures, the mapping view)
we estimate the split per mapping: the ``Anonymous`` share of its resident
pages is anonymous PSS; the rest is shmem for a shared memory mapping
(/dev/shm, memfd, SysV, shared anonymous memory) and file otherwise.
"""

__all__ = ["sum_of", "is_shmem_mapping", "pss_split_of_mappings"]

_SHMEM_PREFIXES = ("/dev/shm/", "/memfd:", "/SYSV", "/dev/zero", "[anon_shmem", "/run/shm/")


def sum_of(counters, *keys):
    """The sum of the keys present, or None when none of them is (absent is not zero)."""
    present = [counters[k] for k in keys if k in counters]
    return sum(present) if present else None


def is_shmem_mapping(mapping):
    return "s" in mapping.perms and mapping.name.startswith(_SHMEM_PREFIXES)


def pss_split_of_mappings(mappings):
    """(anon, file, shmem) PSS in KiB estimated per mapping; None if no mapping has Pss."""
    anon = file = shmem = 0
    seen = False
    for m in mappings:
        c = m.counters
        pss = c.get("Pss")
        if pss is None:
            continue
        seen = True
        rss = c.get("Rss") or 0
        anonymous = c.get("Anonymous") or 0
        anon_part = pss * anonymous // rss if rss else 0
        if is_shmem_mapping(m):
            shmem += pss - anon_part
        else:
            file += pss - anon_part
        anon += anon_part
    return (anon, file, shmem) if seen else None
