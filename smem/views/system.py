"""The system view (-w): where all of RAM goes, from meminfo (KiB): smem 1.5's five areas
(:mod:`.system_areas`, which says how each is reckoned), which add up to RAM exactly.
"""

from .columns import Column, Reads, Sizing, View, amount, text
from .system_areas import (AREAS_CHARTED, AREAS_COMPARED, AREAS_LABELLED, MEMINFO, recommendation, sizing_notes,
                           source_of, system_areas)

__all__ = ["SYSTEM_VIEW", "system_areas"]


class AreaRow:
    __slots__ = ("order", "area", "used", "cache", "source", "figure")

    def __init__(self, order, area, used, cache, source=MEMINFO, figure=None):
        self.order = order
        self.area = area
        self.used = used
        self.cache = cache
        self.source = source
        self.figure = figure  # the sizing Figure behind the row, if any

    @property
    def noncache(self):
        return self.used - self.cache


def rows(snapshots, options):
    snapshot = snapshots[0]
    ram, kernel = snapshot.sizing
    areas = system_areas(snapshot.meminfo.kib, ram.kib if ram else None, kernel.kib)
    figures = [ram, kernel, None, None, None]
    return [AreaRow(i, *area, source=source_of(figure, i), figure=figure)
            for i, (area, figure) in enumerate(zip(areas, figures))]


def summary(snapshot, rows, options, system):
    """RAM (the -p base) and the lines under the table: sources smem 1.5 lacked, and --recommend."""
    ram_figure = rows[0].figure if rows else None
    ram = ram_figure.kib if ram_figure else sum(r.used for r in rows)
    notes = sizing_notes(snapshot, rows)
    if system.recommend is not None:
        notes.append(recommendation(rows, system.recommend, _free_in_kernel_dynamic(snapshot, rows),
                                    snapshot.source.machine()))
    from ..memory_pressure import pressure_notes
    return ram, notes + pressure_notes(snapshot.pressure)


def _free_in_kernel_dynamic(snapshot, rows):
    """The free pages the per-CPU lists hold (zoneinfo's pagesets), which kernel dynamic memory
    (MemTotal - MemFree - userspace) counts as not reclaimable; at most that row's noncache, as
    zoneinfo is read at another moment than meminfo (more would come off the other areas' need)."""
    pools = snapshot.pools
    free = pools.per_cpu_free_kib if pools is not None else None
    kernel = next((r for r in rows if r.order == 2), None)
    return free if free is None or kernel is None else min(free, max(kernel.noncache, 0))


COLUMNS = {c.key: c for c in (
    Column("order", "Order", lambda r: r.order, "hierarchical order", width=1, total=None),
    Column("area", "Area", lambda r: r.area, "memory area", width=24, align="<"),
    amount("used", "Used", lambda r: r.used, "area in use", width=10),
    amount("cache", "Cache", lambda r: r.cache, "part of the area that is reclaimable cache", width=10),
    amount("noncache", "Noncache", lambda r: r.noncache, "part of the area that is not reclaimable", width=10),
    text("source", "Source", lambda r: r.source, "where the figure comes from", 24, wraps=True),
)}

SYSTEM_VIEW = View(
    name="system", title="system memory", columns=COLUMNS,
    default_columns=("area", "used", "cache", "noncache"),
    default_sort="order", rows=rows, summary=summary,
    reads=Reads(needs=frozenset({"pressure", "pools"}), processes=False, sizing=Sizing.ALWAYS),
    charting=AREAS_CHARTED, metrics=AREAS_LABELLED, comparison=AREAS_COMPARED,
    smem15_table=True,
)
