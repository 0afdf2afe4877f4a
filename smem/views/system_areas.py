"""The areas of RAM both system views (-w and --breakdown) share: smem 1.5's five areas from
meminfo, the installed RAM and kernel image rows (sizing) both start with, --recommend, and how
both chart, label and compare their rows.  Both views import this; neither imports the other.

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
from .columns import Charting, Comparison, Metrics

__all__ = ["system_areas", "sizing_rows", "sizing_notes", "recommendation", "source_of", "MEMINFO", "AREAS_CHARTED",
           "AREAS_LABELLED", "AREAS_COMPARED"]

MEMINFO = "/proc/meminfo"
#: the area of installed RAM the kernel never sees (and its page map, allocated at boot)
FIRMWARE = "firmware/hardware"
KERNEL_IMAGE = "kernel image"

#: both views chart their rows as areas (a pie of all of RAM: no slice folded into "other"),
#: label them by area in OpenMetrics, and match them by area in a comparison
AREAS_CHARTED = Charting(measure="used", measure_without_pss="used", folds_small_slices=False, noun="areas",
                         areas=True)
AREAS_LABELLED = Metrics(labels=(("area", lambda r: r.area),))
AREAS_COMPARED = Comparison(row_key=lambda r: r.area)


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
        (FIRMWARE, firmware, 0),
        (KERNEL_IMAGE, kernel, 0),
        ("kernel dynamic memory", kernel_dynamic, kernel_cache),
        ("userspace memory", userspace, mapped),
        ("free memory", free, free),
    ]


def source_of(figure, order):
    if figure is None:
        return MEMINFO
    source = figure.source + (" (estimate)" if figure.estimate else "")
    return "RAM from " + source if order == 0 else source


def sizing_rows(snapshot):
    """The firmware/hardware and kernel image areas as (order, area, used, cache, source, Figure)."""
    ram, kernel = snapshot.sizing
    areas = system_areas(snapshot.meminfo.kib, ram.kib if ram else None, kernel.kib)[:2]
    return [(i, area, used, cache, source_of(figure, i), figure)
            for i, ((area, used, cache), figure) in enumerate(zip(areas, (ram, kernel)))]


def sizing_notes(snapshot, rows):
    """The lines that say where installed RAM and the kernel image came from (sources smem 1.5 lacked)."""
    notes = []
    for row in rows:
        figure = row.figure
        if row.order == 1 and figure is not None and not figure.known and snapshot.source.local:
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


def recommendation(rows, headroom_percent, free_not_counted_kib=None, machine=None):
    """--recommend: the RAM size that holds the rows' non-reclaimable memory (less the free pages
    they count so: -w's kernel dynamic memory holds the per-CPU lists') plus the headroom, with the
    page map in the firmware/hardware row scaled to the size where installed RAM is known and
    ``machine`` (the data's) says its word and page size, as a note (a
    recommendation.Recommendation: make_table keeps its figures for JSON and OpenMetrics)."""
    from ..recommendation import page_map, recommend
    firmware = next((r for r in rows if r.area == FIRMWARE), None)
    installed = getattr(firmware, "figure", None)
    kernel = getattr(next((r for r in rows if r.area == KERNEL_IMAGE), None), "figure", None)
    scaled = None
    if installed is not None and installed.known and firmware.noncache is not None:
        scaled = page_map(machine, installed.kib, firmware.noncache)
    not_counted = tuple(area for area, figure in ((FIRMWARE, installed), (KERNEL_IMAGE, kernel))
                        if figure is not None and not figure.known)
    return recommend(sum(r.noncache for r in rows), headroom_percent, free_not_counted_kib, scaled, not_counted)
