"""--recommend: the RAM a device needs, from what the system view finds cannot be reclaimed.

The need is the sum of the areas' non-reclaimable parts (``noncache`` of -w or --breakdown);
the headroom is the user's percent on top; the answer is the smallest RAM size sold (2^n or
3·2^n MiB, from 16M) that holds both.  The line under the table says it, and formats that carry
figures carry them (JSON's ``recommend`` object, OpenMetrics' ``smem_recommended_ram_bytes``).
"""

from typing import NamedTuple, Optional

from .errors import UsageError
from .units import human

__all__ = ["Recommendation", "recommend", "standard_ram_size"]


class Recommendation(NamedTuple):
    """--recommend's answer, in KiB (its ``str`` is the line under the table)."""

    needs_kib: int            # what cannot be reclaimed
    headroom_percent: float
    with_headroom_kib: int    # needs_kib plus the headroom
    fits_in_kib: int          # the smallest usual RAM size holding with_headroom_kib
    #: free pages the rows count as not reclaimable (smem 1.5's kernel dynamic memory holds the
    #: per-CPU lists' free pages), left out of needs_kib; None where not known or not so counted
    free_not_counted_kib: Optional[int] = None

    def __str__(self):
        headroom = (f" (+{self.headroom_percent:g}% headroom: {human(self.with_headroom_kib)})"
                    if self.headroom_percent else "")
        free = (f" (free pages in per-CPU lists, {human(self.free_not_counted_kib)}, not counted)"
                if self.free_not_counted_kib else "")
        return f"needs {human(self.needs_kib)} non-reclaimable{free}{headroom}; fits in {human(self.fits_in_kib)}"


def recommend(noncache_kib, headroom_percent, free_not_counted_kib=None):
    """The RAM size that holds ``noncache_kib`` (less ``free_not_counted_kib``: free pages it
    counts) plus ``headroom_percent`` of it."""
    needs = max(noncache_kib - (free_not_counted_kib or 0), 0)
    with_headroom = int(needs + needs * headroom_percent // 100)
    return Recommendation(needs, headroom_percent, with_headroom, standard_ram_size(with_headroom),
                          free_not_counted_kib)


def standard_ram_size(kib):
    """The smallest usual RAM size (2^n or 3·2^n MiB, from 16M) holding ``kib``."""
    if not 0 <= kib < 1 << 60:
        raise UsageError(f"no RAM size holds {kib} KiB")
    size = 16 << 10
    while True:
        for candidate in (size, size * 3 // 2):
            if candidate >= kib and (candidate == size or candidate >= 48 << 10):
                return candidate
        size *= 2
