"""Parser for /proc/zoneinfo (Documentation/filesystems/proc.rst, "zoneinfo").

Per memory zone, its ``pagesets``: for each CPU the free pages it keeps in its own list
(``count:``) so that allocating and freeing need no lock.  The kernel counts those pages
in no meminfo field: NR_FREE_PAGES (MemFree) counts only the buddy allocator's free
pages (mm/page_alloc.c), so MemFree understates free memory by them.
"""

__all__ = ["per_cpu_free_pages"]


def per_cpu_free_pages(data):
    """The pages in every zone's per-CPU free lists, or None where the file shows no pagesets."""
    total = None
    in_pagesets = False
    for line in data.split(b"\n"):
        stripped = line.strip()
        if not line[:1].isspace():  # "Node 0, zone   Normal": a new zone
            in_pagesets = False
            continue
        if stripped == b"pagesets":
            in_pagesets = True
            continue
        if in_pagesets and stripped.startswith(b"count:"):
            value = stripped[6:].strip()
            if not value.isdigit() or len(value) > 20:
                raise ValueError(f"zoneinfo: a per-CPU count {value[:20]!r} is not a number")
            total = (total or 0) + int(value)
    return total
