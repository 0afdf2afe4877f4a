"""The breakdown view (``-w --breakdown``): MemTotal reconciled, each row with the source of its figure.

``free`` says 20 GiB are used and the processes' PSS adds up to 12: the rest is page
cache nobody maps, tmpfs files and SysV segments nobody attaches, slab, page tables,
a zram pool...  These rows add up to MemTotal exactly; the last, ``unexplained``, is
what the kernel's counters leave over (Android's "Lost RAM").

The accounting (Documentation/filesystems/proc.rst, "meminfo", and fs/proc/meminfo.c):

- the processes' PSS, split by the kernel (smaps_rollup Pss_Anon, Pss_File,
  Pss_Shmem, Linux 5.9+; estimated per mapping from smaps before) counts each mapped
  page once over all processes.  It is a part of AnonPages, of the page cache
  (Buffers + Cached - Shmem) and of Shmem respectively; what is left of each is a row:
  anonymous pages of processes smem could not read, page cache no process maps, and
  shared memory no process maps (tmpfs and /dev/shm files, SysV segments not attached,
  memfd held only by a descriptor).  Without the split (no Pss_Anon and no per-mapping
  Anonymous) PSS is one row and the rest one row; without PSS at all (before 2.6.25, or
  no process read) AnonPages, the page cache and Shmem are rows of their own.
- Cached excludes the swap cache (``SwapCached``, a row of its own) and includes Shmem.
  A swap-cache page still mapped is in AnonPages too: the kernel counts it twice, and
  ``unexplained`` is that much lower.
- the kernel: slab (SReclaimable, SUnreclaim; Slab before 2.6.19), other reclaimable
  kernel memory (KReclaimable - SReclaimable, 4.20+), KernelStack, PageTables,
  SecPageTables (6.0+), VmallocUsed (the pages vmalloc took since 5.3; 0 from 4.4 to
  5.2, so no row; before 4.4 the address space of the areas, ioremaps too, so no row),
  Percpu (4.2+), Bounce, WritebackTmp (FUSE), HardwareCorrupted.  With
  CONFIG_VMAP_STACK (the default of 64-bit kernels) the kernel stacks are vmalloc'd, so
  KernelStack is part of VmallocUsed: where VmallocUsed holds it and the machine is
  64-bit, the vmalloc row is VmallocUsed - KernelStack.
- hugetlb pool: Hugetlb (4.16+: every page size), else HugePages_Total x Hugepagesize.
- compressed swap: the zram devices' pools (/sys/block/zramN/mm_stat mem_used_total),
  in no meminfo field; zswap's pool (Zswap, 5.19+).
- free: MemFree, and the free pages in the per-CPU lists (/proc/zoneinfo pagesets),
  which MemFree leaves out.
- dma-bufs (buffers shared between devices and processes: a system heap's pages are in no
  meminfo field): those the processes hold by fd or mapping, each buffer once
  (smem.device_memory), and those the kernel lists (/sys/kernel/dmabuf/buffers, debugfs
  bufinfo) that no process read holds.  A buffer an exporter took from shmem or the GPU's own
  memory is not outside meminfo: ``unexplained`` is then lower by it, or below zero.
- KSM's savings (pages_sharing x page size) are memory *not* used: shown in the
  ``saved`` column, with ``used`` absent, so the rows still add up to MemTotal.

A field the kernel lacks leaves its row absent (``-``), never 0; ``unexplained`` is
MemTotal minus the rows present.  With -R or -K the firmware/hardware and kernel image
rows come first, as in the plain system view, and the rows add up to installed RAM.
"""

from dataclasses import dataclass
from typing import Optional

from ..units import human
from .columns import Column, Reads, Sizing, View, amount, text
from .system_areas import AREAS_CHARTED, AREAS_COMPARED, AREAS_LABELLED, recommendation, sizing_notes, sizing_rows

__all__ = ["BREAKDOWN_VIEW", "breakdown_areas", "ProcessSums", "process_sums", "BREAKDOWN_COUNTERS", "BELOW_ZERO_WHY"]

#: what the rows read per process: the kernel's split, or what the per-mapping estimate needs
BREAKDOWN_COUNTERS = frozenset({"Pss", "Pss_Anon", "Pss_File", "Pss_Shmem", "Anonymous", "Rss"})

#: uname -m of machines whose kernels are 64-bit (CONFIG_VMAP_STACK is their default)
_64BIT = ("x86_64", "aarch64", "arm64", "ppc64", "ppc64le", "s390x", "riscv64", "loongarch64", "mips64", "sparc64")


@dataclass(frozen=True)
class ProcessSums:
    """The processes' PSS, summed (KiB); a part the kernel does not give is None."""

    count: int
    pss: Optional[int]
    anon: Optional[int] = None
    file: Optional[int] = None
    shmem: Optional[int] = None
    estimated: int = 0      # processes whose split is estimated per mapping (no Pss_Anon)


def process_sums(processes, split_of):
    """ProcessSums of ``processes`` (those with memory); ``split_of(process)`` their (anon, file, shmem)."""
    from ..model import ROLLUP_SPLIT
    readable = [p for p in processes if p.has_memory]
    pss = [p.totals.get("Pss") for p in readable]
    if not readable or any(v is None for v in pss):
        return ProcessSums(len(readable), None)
    splits = [split_of(p) for p in readable]
    if any(s is None for s in splits):
        return ProcessSums(len(readable), sum(pss))
    estimated = sum(1 for p in readable if not (p.rollup and all(k in p.rollup for k in ROLLUP_SPLIT)))
    anon, file, shmem = (sum(parts) for parts in zip(*splits))
    return ProcessSums(len(readable), sum(pss), anon, file, shmem, estimated)


class BreakdownRow:
    __slots__ = ("order", "area", "used", "cache", "source", "saved", "figure", "of_processes")

    def __init__(self, order, area, used, cache, source, saved=None, figure=None, of_processes=False):
        self.order = order
        self.area = area
        self.used = used
        self.cache = cache
        self.source = source
        self.saved = saved
        self.figure = figure  # the sizing Figure behind the row (-R, -K)
        self.of_processes = of_processes  # the row is (a part of) the processes' PSS

    @property
    def noncache(self):
        return None if self.used is None or self.cache is None else self.used - self.cache


def _less(total, *parts):
    """``total`` minus ``parts``, or None where any is absent."""
    if total is None or any(p is None for p in parts):
        return None
    return total - sum(parts)


def _plus(*parts):
    return None if any(p is None for p in parts) else sum(parts)


def _release(kernel):
    """(major, minor) of a ``uname -r`` ("6.18.44-fc"), or None."""
    parts = (kernel or "").split(".")
    if len(parts) < 2 or not parts[0].isdigit():
        return None
    minor = "".join(c for c in parts[1][:3] if c.isdigit())
    return (int(parts[0]), int(minor)) if minor else None


def _vmalloc_is_address_space(m, kernel):
    """Before 4.4 VmallocUsed summed the vmalloc areas' sizes (ioremaps too), not pages.  Where the
    kernel's version is unknown, VmallocChunk says it: the largest free area before 4.4, 0 from
    4.4 on (a meminfo that lacks Percpu, of 4.2+, and says 0 there is of 4.4+: Android's 4.9
    trees); without it, a meminfo without Percpu is taken to be that old."""
    release = _release(kernel)
    if release is not None:
        return release < (4, 4)
    chunk = m.get("VmallocChunk")
    return chunk > 0 if chunk is not None else "Percpu" not in m


def _vmalloc_not_counted(vmalloc, kernel):
    """From 4.4 to 5.2 the kernel printed VmallocUsed as 0 whatever vmalloc held: a 0 there (or
    of an unknown kernel: vmalloc always holds something) is not a figure."""
    release = _release(kernel)
    return vmalloc == 0 and (release is None or (4, 4) <= release < (5, 3))


def breakdown_areas(meminfo, sums=None, pools=None, arch=None, kernel=None, selected=False, devices=None):
    """The rows as (area, used, cache, source, saved), KiB, adding up to MemTotal; ``selected``:
    ``sums`` are of the processes -P, -U or --pid chose, not of all.

    ``meminfo`` a parsers.meminfo.Meminfo; ``sums`` the processes' ProcessSums (None:
    none read); ``pools`` kernel_pools.KernelPools (None: not read); ``arch`` and ``kernel``
    uname -m and -r of the data's machine (None: unknown); ``devices`` the processes'
    device_memory.DeviceMemory (None: not read).
    """
    m, counts = meminfo.kib, meminfo.counts
    rows = []

    def add(area, used, source, cache=False, saved=None):
        rows.append((area, used, (used if cache else 0) if used is not None else None, source, saved))

    anon, buffers, cached, shmem = m.get("AnonPages"), m.get("Buffers"), m.get("Cached"), m.get("Shmem")
    files = _plus(buffers, cached)
    page_cache = _less(files, shmem) if shmem is not None else files
    if sums is not None and sums.anon is not None:
        how = "smaps_rollup" if not sums.estimated else f"smaps ({sums.estimated} estimated per mapping)"
        add("process anon (PSS)", sums.anon, f"sum of Pss_Anon, {_processes(sums.count, 's')} {how}")
        add("process file (PSS)", sums.file, "sum of Pss_File", cache=True)
        add("process shmem (PSS)", sums.shmem, "sum of Pss_Shmem")
        # with -P, -U, --pid or -M what was left out (processes, mappings) is in the rest: the names say so
        others = " or not selected" if selected else ""
        by_them = " by those selected" if selected else ""
        add(f"anon of processes not read{others}", _less(anon, sums.anon), "meminfo AnonPages - sum of Pss_Anon")
        if shmem is not None:
            add(f"page cache not mapped{by_them}", _less(page_cache, sums.file),
                "meminfo Buffers + Cached - Shmem - sum of Pss_File", cache=True)
            add(f"shmem not mapped{by_them} (tmpfs/SysV/memfd)", _less(shmem, sums.shmem),
                "meminfo Shmem - sum of Pss_Shmem")
        else:
            add(f"page cache and shmem not mapped{by_them}", _less(files, sums.file, sums.shmem),
                "meminfo Buffers + Cached - sum of Pss_File and Pss_Shmem", cache=True)
    elif sums is not None and sums.pss is not None:
        add("process memory (PSS)", sums.pss, f"sum of Pss, {_processes(sums.count)} (the kernel gives no split)")
        by_them = " by those selected" if selected else ""
        rows.append((f"anon, page cache, shmem not mapped{by_them}", _less(_plus(anon, files), sums.pss), None,
                     "meminfo AnonPages + Buffers + Cached - sum of Pss", None))
    else:
        add("anon", anon, "meminfo AnonPages")
        add("page cache", page_cache, "meminfo Buffers + Cached" + (" - Shmem" if shmem is not None else ""),
            cache=True)
        add("shmem", shmem, "meminfo Shmem")
    add("swap cache", m.get("SwapCached"), "meminfo SwapCached", cache=True)

    reclaimable, unreclaimable = m.get("SReclaimable"), m.get("SUnreclaim")
    if reclaimable is not None and unreclaimable is not None:
        add("slab reclaimable", reclaimable, "meminfo SReclaimable", cache=True)
        add("slab unreclaimable", unreclaimable, "meminfo SUnreclaim")
    else:
        add("slab", m.get("Slab"), "meminfo Slab")
    add("other kernel reclaimable", _less(m.get("KReclaimable"), reclaimable),
        "meminfo KReclaimable - SReclaimable", cache=True)
    stacks, vmalloc = m.get("KernelStack"), m.get("VmallocUsed")
    add("kernel stacks", stacks, "meminfo KernelStack")
    add("page tables", m.get("PageTables"), "meminfo PageTables")
    add("secondary page tables", m.get("SecPageTables"), "meminfo SecPageTables")
    if vmalloc is not None and _vmalloc_is_address_space(m, kernel):
        add("vmalloc", None, "meminfo VmallocUsed: address space before Linux 4.4, not RAM")
    elif vmalloc is not None and _vmalloc_not_counted(vmalloc, kernel):
        add("vmalloc", None, "meminfo VmallocUsed: 0 from Linux 4.4 to 5.2, not counted")
    elif vmalloc is not None and stacks is not None and vmalloc >= stacks and (arch is None or arch in _64BIT):
        assumed = " (64-bit: stacks taken as vmalloc'd)" if arch is None else ""
        add("vmalloc", vmalloc - stacks, "meminfo VmallocUsed - KernelStack" + assumed)
    else:
        add("vmalloc", vmalloc, "meminfo VmallocUsed")
    add("percpu", m.get("Percpu"), "meminfo Percpu")
    add("bounce buffers", m.get("Bounce"), "meminfo Bounce")
    add("FUSE writeback buffers", m.get("WritebackTmp"), "meminfo WritebackTmp")
    add("hardware corrupted", m.get("HardwareCorrupted"), "meminfo HardwareCorrupted")

    if "Hugetlb" in m:
        add("hugetlb pool", m["Hugetlb"], "meminfo Hugetlb")
    else:
        total, size = counts.get("HugePages_Total"), m.get("Hugepagesize")
        add("hugetlb pool", total * size if total is not None and size is not None else None,
            "meminfo HugePages_Total x Hugepagesize")
    names = " ".join(d.name for d in pools.zram) if pools is not None and pools.zram else "zram*"
    add("zram pool", pools.zram_kib() if pools is not None else None, f"mm_stat mem_used_total of {names}")
    add("zswap pool", m.get("Zswap"), "meminfo Zswap")
    if devices is not None:
        held = devices.buffers
        add("dma-buf held by processes", devices.held_kib,
            f"size of the {_buffers(len(held))} processes hold by fd or map, each once"
            if devices.held_kib is not None else "no process's fds read, nor a dma-buf mapped (a capture keeps "
                                                 "device fds only: holding none looks the same as not read)")
        unheld = devices.unheld
        add("dma-buf held by no process" + (" read" if selected else ""), unheld[1] if unheld else None,
            f"{_buffers(unheld[0])} of /sys/kernel/dmabuf/buffers or debugfs bufinfo no process holds"
            if unheld else "no list of every dma-buf: /sys/kernel/dmabuf/buffers needs CONFIG_DMABUF_SYSFS_STATS, "
                           "debugfs dma_buf/bufinfo needs debugfs mounted and root")
    add("free", m.get("MemFree"), "meminfo MemFree", cache=True)
    add("free in per-CPU lists", pools.per_cpu_free_kib if pools is not None else None,
        "zoneinfo pagesets count x page size", cache=True)
    rows.append(("KSM saved (not in sum)", None, None, "/sys/kernel/mm/ksm pages_sharing x page size",
                 pools.ksm_saved_kib if pools is not None else None))
    counted = sum(used for _, used, _, _, _ in rows if used is not None)
    rows.append(("unexplained", m.get("MemTotal", 0) - counted, 0, "MemTotal - the rows above", None))
    return rows


def _processes(n, of=""):
    """"1 process" or "2 processes"; ``of`` "s": the possessive ("1 process's", "2 processes'")."""
    return ("1 process'" + of) if of and n == 1 else "1 process" if n == 1 else f"{n} processes" + ("'" if of else "")


def _buffers(n):
    return f"{n} dma-buf{'' if n == 1 else 's'}"


def breakdown_rows(snapshots, options):
    """The rows; with -R or -K (the snapshot is sized only then) the sizing's two first."""
    from .process import process_split
    snapshot = snapshots[-1]
    result = []
    if snapshot.sizing is not None:
        result = [BreakdownRow(order, area, used, cache, source, figure=figure)
                  for order, area, used, cache, source, figure in sizing_rows(snapshot)]
    sums = process_sums(snapshot.processes, process_split)
    if snapshot.selected and sums.count == 0:  # (-P matching nothing: 0 of 0, not a capture without processes)
        sums = ProcessSums(0, 0, 0, 0, 0)
    machine = snapshot.source.machine()
    areas = breakdown_areas(snapshot.meminfo, sums, snapshot.pools, machine.arch, machine.kernel,
                            snapshot.selected, snapshot.devices)
    start = len(result)
    result += [BreakdownRow(start + i, *area, of_processes=i < _process_rows(sums)) for i, area in enumerate(areas)]
    return result


def _process_rows(sums):
    """How many of breakdown_areas' first rows are the processes' PSS: the split's three, one, or none."""
    if sums is None or sums.pss is None:
        return 0
    return 3 if sums.anon is not None else 1


#: why a row of processes' figures less meminfo's goes below zero (the page says it under its legend)
BELOW_ZERO_WHY = "meminfo and the processes are read at different moments, and processes came or went in between"


def _summary(snapshot, rows, options, system):
    ram_figure = rows[0].figure if rows and rows[0].figure is not None else None
    ram = ram_figure.kib if ram_figure else snapshot.mem_total
    notes = sizing_notes(snapshot, rows) if ram_figure else []
    pools = snapshot.pools
    saved = pools.ksm_saved_kib if pools is not None else None
    if saved is not None:
        profit = pools.ksm.get("general_profit")
        profit = f"; general_profit {_signed(profit // 1024)} (minus KSM's own bookkeeping)" if profit is not None else ""
        notes.append(f"KSM: {human(saved)} saved (pages_sharing x page size, not in the sum){profit}")
    negative = [r.area for r in rows[:-1] if r.used is not None and r.used < 0]
    if negative:
        notes.append(f"below zero: {', '.join(negative)}: {BELOW_ZERO_WHY}")
    lost = rows[-1].used
    total = snapshot.mem_total
    if total:
        notes.append(f"unexplained: {_signed(lost)} "
                     f"({100.0 * lost / total:.2f}% of MemTotal {human(total)})")
    if system.recommend is not None:
        notes.append(recommendation([r for r in rows if r.noncache is not None], system.recommend,
                                    machine=snapshot.source.machine()))
    from ..memory_pressure import pressure_notes
    return ram, notes + pressure_notes(snapshot.pressure)


def _signed(kib):
    return human(kib) if kib >= 0 else "-" + human(-kib)


COLUMNS = {c.key: c for c in (
    Column("order", "Order", lambda r: r.order, "hierarchical order", width=1, total=None),
    Column("area", "Area", lambda r: r.area, "memory area", width=35, align="<"),
    amount("used", "Used", lambda r: r.used, "area in use (the rows add up to MemTotal; with -R/-K to RAM)",
           width=10),
    amount("cache", "Cache", lambda r: r.cache, "part of the area that is reclaimable cache", width=10),
    amount("noncache", "Noncache", lambda r: r.noncache, "part of the area that is not reclaimable", width=10),
    amount("saved", "Saved", lambda r: r.saved, "memory not used thanks to the area (KSM's merged pages)",
           width=10),
    text("source", "Source", lambda r: r.source, "where the figure comes from", 24, wraps=True),
)}


BREAKDOWN_VIEW = View(
    name="system", title="system memory", columns=COLUMNS,
    default_columns=("area", "used", "cache", "noncache", "saved", "source"), default_sort="order",
    rows=breakdown_rows, summary=_summary,
    reads=Reads(needs=frozenset({"rollup", "split", "pools", "devices", "pressure"}), counters=BREAKDOWN_COUNTERS,
                sizing=Sizing.ASKED),
    charting=AREAS_CHARTED, metrics=AREAS_LABELLED, comparison=AREAS_COMPARED,
)
