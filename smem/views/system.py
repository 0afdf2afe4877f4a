"""The system view (-w): where all of RAM goes, from meminfo (KiB).

The areas, as smem 1.5 defines them (Documentation/filesystems/proc.rst,
"meminfo", for the fields):

- firmware/hardware: installed RAM (``-R``) the kernel never sees:
  RAM - MemTotal - kernel image, never below 0;
- kernel image: text, data and bss of the kernel (``-K``);
- kernel dynamic memory: MemTotal - MemFree - userspace, of which
  Buffers + SReclaimable + (Cached - Mapped) is reclaimable cache;
- userspace memory: AnonPages + Mapped, of which Mapped is cache;
- free memory: MemFree (all of it counts as "cache": it is available).

They add up to RAM exactly.  A meminfo field an old kernel lacks
(SReclaimable before 2.6.19) counts as 0 in these sums.
"""

from ..units import human
from .breakdown import breakdown_view
from .columns import Column, View, amount, text

__all__ = ["SYSTEM_VIEW", "system_areas"]

MEMINFO = "/proc/meminfo"


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


def system_areas(meminfo_kib, ram_kib=None, kernel_kib=None):
    """The five areas as (name, used, cache) in KiB."""
    m = meminfo_kib
    mem_total = m.get("MemTotal", 0)
    free = m.get("MemFree", 0)
    mapped = m.get("Mapped", 0)
    ram = ram_kib if ram_kib is not None else mem_total
    kernel = kernel_kib or 0
    firmware = max(ram - mem_total - kernel, 0)
    userspace = m.get("AnonPages", 0) + mapped
    kernel_dynamic = mem_total - free - userspace
    kernel_cache = m.get("Buffers", 0) + m.get("SReclaimable", 0) + (m.get("Cached", 0) - mapped)
    return [
        ("firmware/hardware", firmware, 0),
        ("kernel image", kernel, 0),
        ("kernel dynamic memory", kernel_dynamic, kernel_cache),
        ("userspace memory", userspace, mapped),
        ("free memory", free, free),
    ]


def _source(figure, order):
    if figure is None:
        return MEMINFO
    source = figure.source + (" (estimate)" if figure.estimate else "")
    return "RAM from " + source if order == 0 else source


def rows(snapshots, options):
    snapshot = snapshots[0]
    ram, kernel = snapshot.sizing
    areas = system_areas(snapshot.meminfo.kib, ram.kib if ram else None, kernel.kib)
    figures = [ram, kernel, None, None, None]
    return [AreaRow(i, *area, source=_source(figure, i), figure=figure)
            for i, (area, figure) in enumerate(zip(areas, figures))]


def sizing_rows(snapshot):
    """The firmware/hardware and kernel image areas as (order, area, used, cache, source, Figure)."""
    ram, kernel = snapshot.sizing
    areas = system_areas(snapshot.meminfo.kib, ram.kib if ram else None, kernel.kib)[:2]
    return [(i, area, used, cache, _source(figure, i), figure)
            for i, ((area, used, cache), figure) in enumerate(zip(areas, (ram, kernel)))]


def sizing_notes(snapshot, rows):
    """The lines that say where installed RAM and the kernel image came from (sources smem 1.5 lacked)."""
    notes = []
    for row in rows:
        figure = row.figure
        if row.order == 1 and figure is not None and not figure.kib and snapshot.source.local:
            notes.append(f"{row.area}: unknown (/proc/iomem hides it from non-root users and no boot "
                         "line was found; give -K vmlinux)")
            continue
        if figure is None or figure.smem15:
            continue
        if row.order == 0:
            notes.append(f"{row.area}: installed RAM {human(figure.kib)} from {figure.source}")
        else:
            how = "estimated from" if figure.estimate else "from"
            notes.append(f"{row.area}: {how} {figure.source}")
    return notes


def recommendation(rows, headroom_percent):
    """--recommend: the RAM size that holds the rows' non-reclaimable memory plus the headroom."""
    from ..sizing import standard_ram_size
    need = sum(r.noncache for r in rows)
    with_headroom = need + need * headroom_percent // 100
    headroom = f" (+{headroom_percent:g}% headroom: {human(with_headroom)})" if headroom_percent else ""
    return f"needs {human(need)} non-reclaimable{headroom}; fits in {human(standard_ram_size(with_headroom))}"


def summary(snapshot, rows, options, system):
    """RAM (the -p base) and the lines under the table: sources smem 1.5 lacked, and --recommend."""
    ram_figure = rows[0].figure if rows else None
    ram = ram_figure.kib if ram_figure else sum(r.used for r in rows)
    notes = sizing_notes(snapshot, rows)
    if system.recommend is not None:
        notes.append(recommendation(rows, system.recommend))
    return ram, notes + pressure_notes(snapshot)


def pressure_notes(snapshot):
    """The memory pressure line, where the kernel has PSI (Linux 4.20+)."""
    from ..memory_pressure import pressure_note
    note = pressure_note(snapshot.pressure)
    return [note] if note else []


COLUMNS = {c.key: c for c in (
    Column("order", "Order", lambda r: r.order, "hierarchical order", width=1, total=None),
    Column("area", "Area", lambda r: r.area, "memory area", width=24, align="<"),
    amount("used", "Used", lambda r: r.used, "area in use", width=10),
    amount("cache", "Cache", lambda r: r.cache, "part of the area that is reclaimable cache", width=10),
    amount("noncache", "Noncache", lambda r: r.noncache, "part of the area that is not reclaimable", width=10),
    text("source", "Source", lambda r: r.source, "where the figure comes from", 24),
)}

SYSTEM_VIEW = View(
    name="system", title="system memory", columns=COLUMNS,
    default_columns=("area", "used", "cache", "noncache"),
    default_sort="order", rows=rows, summary=summary, labels=(("area", lambda r: r.area),),
    needs=frozenset({"pressure"}), reads_processes=False, needs_sizing=True, chart_measure="used", chart_measure_without_pss="used",
    folds_small_slices=False, noun="areas", row_key=lambda r: r.area,
    shaped_by_system=lambda system: breakdown_view(system) if system.breakdown else None,
)
