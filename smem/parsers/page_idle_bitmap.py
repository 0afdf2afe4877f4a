"""Parser for /sys/kernel/mm/page_idle/bitmap (Documentation/admin-guide/mm/idle_page_tracking.rst).

Idle page tracking (Linux 4.3+, CONFIG_IDLE_PAGE_TRACKING): one bit per page frame, the frame
at PFN i in bit i % 64 of the 8-byte word i // 64, in the machine's own byte order.  A set bit
is an idle page: not accessed since it was marked idle.  Writing a word ORs it into the bitmap
(a set bit marks that page idle; a clear bit changes nothing); reads and writes start on a word
and are whole words, or fail with EINVAL.  Only user pages on an LRU list can be marked; for
any other page (a slab page, the zero page, a tail page of a large folio, whose state is its
head page's) the bit stays clear, so a clear bit alone does not say a page was used.
"""

import sys

import numpy as np

__all__ = ["WORD_SIZE", "PAGES_PER_WORD", "parse_page_idle_bitmap", "idle_bitmap_words", "idle_among"]

WORD_SIZE = 8
PAGES_PER_WORD = 64

#: native byte order, as the kernel writes the words
_WORD = np.dtype("<u8" if sys.byteorder == "little" else ">u8")


def parse_page_idle_bitmap(data, first_word=0):
    """The PFNs marked idle in ``data`` (bitmap bytes read from word ``first_word``), sorted,
    as uint64.  ``data`` must be whole words; anything else is a truncated read (ValueError)."""
    if len(data) % WORD_SIZE:
        raise ValueError(f"page_idle bitmap data of {len(data)} bytes is not a whole number of words")
    words = np.frombuffer(data, dtype=_WORD)
    bits = np.unpackbits(words.astype("<u8").view(np.uint8), bitorder="little")
    return np.flatnonzero(bits).astype(np.uint64) + np.uint64(first_word * PAGES_PER_WORD)


def idle_bitmap_words(pfns):
    """What to write to mark ``pfns`` idle: (first word, bytes) for each run of consecutive words
    holding them, each word with the bits of its PFNs set (and no other: writes OR in)."""
    pfns = np.sort(np.asarray(pfns, dtype=np.uint64))
    if not len(pfns):
        return []
    pfns = pfns[np.concatenate(([True], pfns[1:] != pfns[:-1]))]
    of_word = pfns // np.uint64(PAGES_PER_WORD)
    first = np.concatenate(([True], of_word[1:] != of_word[:-1]))
    words = of_word[first]
    # each word: the sum of its PFNs' bits (distinct bits, so the sum is their OR)
    bits = np.uint64(1) << (pfns % np.uint64(PAGES_PER_WORD))
    values = np.add.reduceat(bits, np.flatnonzero(first)).astype(np.uint64)
    breaks = np.flatnonzero(np.diff(words) != 1) + 1
    runs = []
    for lo, hi in zip([0, *breaks.tolist()], [*breaks.tolist(), len(words)]):
        runs.append((int(words[lo]), values[lo:hi].astype(_WORD).tobytes()))
    return runs


def idle_among(pfns, data, first_word=0):
    """Bool array: which of ``pfns`` the bitmap bytes ``data`` (read from word ``first_word``)
    say are idle; a PFN outside the bytes read is not."""
    pfns = np.asarray(pfns, dtype=np.uint64)
    idle = parse_page_idle_bitmap(data, first_word)
    if not len(idle):
        return np.zeros(len(pfns), dtype=bool)
    at = np.minimum(np.searchsorted(idle, pfns), len(idle) - 1)
    return idle[at] == pfns
