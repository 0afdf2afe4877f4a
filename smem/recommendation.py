"""--recommend: the RAM a device needs, from what the system view finds cannot be reclaimed.

The need is the sum of the areas' non-reclaimable parts (``noncache`` of -w or --breakdown);
the headroom is the user's percent on top; the answer is the smallest RAM size sold (2^n or
3·2^n MiB, from 16M) that holds both.  Installed RAM or the kernel image unknown (no iomem, not
root, C smemcap's capture) leaves an area out of the need: the line says which, and how to give
it (``not_counted``).  The line under the table says it, and formats that carry
figures carry them (JSON's ``recommend`` object, OpenMetrics' ``smem_recommended_ram_bytes``).

Part of the need scales with the RAM itself: the page map, the kernel's array of one ``struct
page`` per physical page (the "memmap" of Documentation/mm/memory-model.rst), allocated at boot
before MemTotal is counted, so in the firmware/hardware row (installed RAM - MemTotal).  A struct
page is 64 bytes on a 64-bit kernel (1/64 of RAM with 4 KiB pages) and 32 on a 32-bit one: the
measured machine's, estimated from its installed RAM, word size and page size, comes out of the
need, and the answer is the size R that holds the rest plus its own page map (R x struct page /
page size).  Where installed RAM is not known the row holds no page map to scale, and where the
word or page size is not, the need stays as measured and the line says so.
"""

from typing import NamedTuple, Optional, Tuple

from .errors import UsageError
from .units import human

__all__ = ["PageMap", "Recommendation", "SIZED_AREAS", "page_map", "recommend", "standard_ram_size", "STRUCT_PAGE_BYTES"]

#: bytes of one struct page by the kernel's word size (its usual layout: eight words)
STRUCT_PAGE_BYTES = {8: 64, 4: 32}


class PageMap(NamedTuple):
    """The page map of the data's machine: its entry and page size, and the KiB taken out of the need."""

    entry_bytes: int      # one struct page
    page_size: int        # bytes
    measured_kib: int     # the measured machine's page map (estimated), out of the firmware row's need

    def kib(self, ram_kib):
        """The page map of a machine of ``ram_kib`` of RAM, rounded up."""
        return -(-ram_kib * self.entry_bytes // self.page_size)


def page_map(machine, installed_kib, firmware_noncache_kib):
    """The measured machine's PageMap (at most the firmware row, which holds it), or why it cannot
    be estimated (a str: the word or page size unknown)."""
    word = machine.word_bytes if machine is not None else None
    if word is None:
        arch = machine.arch if machine is not None else None
        return f"the word size of {arch} unknown" if arch else "the arch unknown"
    page_size = machine.page_size
    if not page_size:
        return "the page size unknown"
    entry = PageMap(STRUCT_PAGE_BYTES[word], page_size, 0)
    return entry._replace(measured_kib=min(entry.kib(installed_kib), max(firmware_noncache_kib, 0)))


class Recommendation(NamedTuple):
    """--recommend's answer, in KiB (its ``str`` is the line under the table)."""

    needs_kib: int            # what cannot be reclaimed
    headroom_percent: float
    with_headroom_kib: int    # needs_kib plus the headroom
    fits_in_kib: int          # the smallest usual RAM size holding with_headroom_kib
    #: free pages the rows count as not reclaimable (smem 1.5's kernel dynamic memory holds the
    #: per-CPU lists' free pages), left out of needs_kib; None where not known or not so counted
    free_not_counted_kib: Optional[int] = None
    #: the page map of a machine of fits_in_kib, in needs_kib; None where not scaled
    page_map_kib: Optional[int] = None
    #: the measured machine's page map (estimated), left out of needs_kib; None where not scaled
    measured_page_map_kib: Optional[int] = None
    #: why the page map was not scaled (the word or page size unknown); None where it was, or
    #: where installed RAM is not known (no page map in the need to scale)
    page_map_not_scaled: Optional[str] = None
    #: the areas whose size the data does not give, so not in needs_kib ("firmware/hardware":
    #: installed RAM unknown, its page map with it; "kernel image"): a need too low by them
    not_counted: Tuple[str, ...] = ()

    def __str__(self):
        headroom = (f" (+{self.headroom_percent:g}% headroom: {_under(self.with_headroom_kib, self.fits_in_kib)})"
                    if self.headroom_percent else "")
        free = (f" (free pages in per-CPU lists, {human(self.free_not_counted_kib)}, not counted)"
                if self.free_not_counted_kib else "")
        scaled = ""
        if self.page_map_kib is not None:
            scaled = (f"; page map scaled to the size: {human(self.page_map_kib)} at {human(self.fits_in_kib)}, "
                      f"not the measured {human(self.measured_page_map_kib)}")
        elif self.page_map_not_scaled:
            scaled = f"; page map not scaled to the size ({self.page_map_not_scaled})"
        unknown = ""
        if self.not_counted:
            unknown = (f"; {' and '.join(SIZED_AREAS[area][0] for area in self.not_counted)} unknown, not counted: "
                       f"give {', '.join(SIZED_AREAS[area][1] for area in self.not_counted)}")
        return (f"needs {_under(self.needs_kib, self.fits_in_kib)} non-reclaimable{free}{headroom}; "
                f"fits in {human(self.fits_in_kib)}"
                f"{scaled}{unknown}")


def _under(kib, size_kib):
    """``kib`` in human units, with the decimals that tell it from the ``size_kib`` it fits in:
    "needs 2.0G ...; fits in 2.0G" reads as a need that fills the size, where 1.98G leaves 19M."""
    decimals = 1
    while kib < size_kib and human(kib, decimals) == human(size_kib, decimals) and decimals < 3:
        decimals += 1
    return human(kib, decimals)


#: the areas whose size the data may not give: (how the line names it unknown, the option that gives it)
SIZED_AREAS = {"firmware/hardware": ("firmware/hardware (its page map)", "-R SIZE"),
               "kernel image": ("kernel image", "-K vmlinux")}


def recommend(noncache_kib, headroom_percent, free_not_counted_kib=None, page_map=None, not_counted=()):
    """The RAM size that holds ``noncache_kib`` (less ``free_not_counted_kib``: free pages it
    counts) plus ``headroom_percent`` of it; with a PageMap, less the measured page map and plus
    that of the size itself (a str: why not, said in the line).  ``not_counted``: the areas of
    unknown size (Recommendation.not_counted), said in the line."""
    needs = max(noncache_kib - (free_not_counted_kib or 0), 0)
    if not isinstance(page_map, PageMap):
        with_headroom = _with_headroom(needs, headroom_percent)
        return Recommendation(needs, headroom_percent, with_headroom, standard_ram_size(with_headroom),
                              free_not_counted_kib, page_map_not_scaled=page_map, not_counted=tuple(not_counted))
    fixed = max(needs - page_map.measured_kib, 0)
    for size in _standard_sizes():  # (the smallest: a smaller size has a smaller page map)
        needs = fixed + page_map.kib(size)
        with_headroom = _with_headroom(needs, headroom_percent)
        if with_headroom <= size:
            return Recommendation(needs, headroom_percent, with_headroom, size, free_not_counted_kib,
                                  page_map.kib(size), page_map.measured_kib, not_counted=tuple(not_counted))
    raise UsageError(f"no RAM size holds {fixed} KiB and its page map")


def _with_headroom(needs, headroom_percent):
    return int(needs + needs * headroom_percent // 100)


def standard_ram_size(kib):
    """The smallest usual RAM size (2^n or 3·2^n MiB, from 16M) holding ``kib``."""
    if not 0 <= kib < 1 << 60:
        raise UsageError(f"no RAM size holds {kib} KiB")
    return next(size for size in _standard_sizes() if size >= kib)


def _standard_sizes():
    """The usual RAM sizes in KiB, smallest first: 16M, 32M, 48M, 64M, 96M ... up to 2^60 KiB."""
    size = 16 << 10
    while size <= 1 << 60:
        yield size
        if size * 3 // 2 >= 48 << 10:
            yield size * 3 // 2
        size *= 2
