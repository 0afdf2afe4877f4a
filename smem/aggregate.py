"""Derived figures: the anonymous / file / shmem split of PSS, and sums of counters.

The kernel splits PSS by page type only in smaps_rollup (Pss_Anon, Pss_File,
Pss_Shmem, Linux 5.9+; Documentation/filesystems/proc.rst).  Where only
per-mapping smaps is available (older kernels, captures, the mapping view)
we estimate the split per mapping: the ``Anonymous`` share of its resident
pages is anonymous PSS; the rest is shmem for a shared memory mapping
(/dev/shm, memfd, SysV, shared anonymous memory) and file otherwise.
"""

from operator import methodcaller

from .parsers.smaps import CountersBase

__all__ = ["Sums", "sum_of", "is_shmem_mapping", "is_shmem_name", "pss_split_of_mappings"]


class Sums(CountersBase):
    """Counters summed over parts (mappings, processes), a key at a time, when first asked.

    A report shows a handful of the ~25 smaps counters, so summing only
    those is most of the work saved on a system with 100,000 mappings.  A key
    no part has stays absent (``get`` gives None): absent is not zero.
    """

    __slots__ = ("_parts", "_cache")

    def __init__(self, parts):
        self._parts = parts  # dicts, or other Sums
        self._cache = {}

    def get(self, key, default=None):
        cache = self._cache
        if key in cache:
            value = cache[key]
        else:
            values = list(map(methodcaller("get", key), self._parts))  # (in C: a scrape sums ~20 per process)
            if None in values:
                values = [v for v in values if v is not None]
            value = cache[key] = sum(values) if values else None
        return default if value is None else value

    def __iter__(self):
        found = {}
        for part in self._parts:
            found.update(dict.fromkeys(part.keys()))
        return iter(found)

    def __len__(self):
        return sum(1 for _ in self)

_SHMEM_PREFIXES = ("/dev/shm/", "/memfd:", "/SYSV", "/dev/zero", "[anon_shmem", "/run/shm/")


def sum_of(counters, *keys):
    """The sum of the keys present, or None when none of them is (absent is not zero)."""
    present = [counters[k] for k in keys if k in counters]
    return sum(present) if present else None


def is_shmem_mapping(mapping):
    return mapping.name.startswith(_SHMEM_PREFIXES) and "s" in mapping.perms  # (the name first: perms parses)


def is_shmem_name(name):
    """Whether a shared mapping of ``name`` is shared memory (is_shmem_mapping, its perms known)."""
    return name.startswith(_SHMEM_PREFIXES)


def anonymous_pss(counters):
    """The anonymous part of one mapping's PSS in KiB, estimated as PSS x Anonymous / Rss
    (smaps splits a mapping's resident pages, not its PSS, into anonymous or not: a private
    file mapping's copy-on-write copies are anonymous).  None where the kernel gives no Pss
    or no Anonymous (before 2.6.32): absent is not zero."""
    pss, anonymous = counters.get("Pss"), counters.get("Anonymous")
    if pss is None or anonymous is None:
        return None
    rss = counters.get("Rss") or 0
    return pss * anonymous // rss if rss else 0


def pss_split_of_mappings(mappings):
    """(anon, file, shmem) PSS in KiB estimated per mapping.

    None where the kernel does not give what the estimate needs (Pss, and
    Anonymous, before 2.6.32): absent is not zero.
    """
    anon = file = shmem = 0
    seen = False
    for m in mappings:
        c = m.counters
        pss = c.get("Pss")
        if pss is None:
            continue
        anon_part = anonymous_pss(c)
        if anon_part is None:
            return None
        seen = True
        if is_shmem_mapping(m):
            shmem += pss - anon_part
        else:
            file += pss - anon_part
        anon += anon_part
    return (anon, file, shmem) if seen else None
