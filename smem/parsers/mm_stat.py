"""Parser for /sys/block/zramN/mm_stat (Documentation/admin-guide/blockdev/zram.rst, "mm_stat").

One line of space-separated numbers, in this order (bytes, except the page counts):
orig_data_size (uncompressed size of the data stored, same-filled pages included),
compr_data_size (compressed size), mem_used_total (the memory the allocator took to
store it: what the device costs in RAM, fragmentation included), mem_limit,
mem_used_max, same_pages, pages_compacted, huge_pages (Linux 4.19+),
huge_pages_since (5.15+).  A kernel prints fewer on older versions (mm_stat itself is
Linux 4.1+): what it does not print is absent, never 0.
"""

from . import plausible

__all__ = ["parse_mm_stat", "MM_STAT_FIELDS"]

MM_STAT_FIELDS = ("orig_data_size", "compr_data_size", "mem_used_total", "mem_limit", "mem_used_max",
                  "same_pages", "pages_compacted", "huge_pages", "huge_pages_since")


def parse_mm_stat(data):
    """{field: int} for the fields present; ValueError for a file that is not an mm_stat."""
    words = data.split()
    if not words or len(words) > 32:
        raise ValueError("not a zram mm_stat: expected a line of numbers")
    values = {}
    for name, word in zip(MM_STAT_FIELDS, words):
        if not (word.isdigit() and len(word) <= 20) or plausible(int(word)) is None:
            raise ValueError(f"not a zram mm_stat: {word[:20]!r} is not a count")
        values[name] = int(word)
    return values
