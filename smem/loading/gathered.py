"""Processes taken in as they are read, in any order, into a :class:`~smem.model.Reading`."""

import contextlib
import gc
from types import MappingProxyType

from ..errors import ProcessSkipped, ProcessUnreadable, SmapsAbsent
from ..model import Reading

__all__ = ["Gathered", "collector_paused", "make_reading", "folded_where_read"]


def folded_where_read(result, fold):
    """``result`` (what reading a process gave) with the process's mappings reduced to the
    part ``fold`` takes of them, where the fold can take it apart from the sums (``part``):
    run where the process was read (a worker), so only that part travels and is held."""
    if fold is None or not hasattr(fold, "part") or type(result) is not tuple:
        return result
    process, had_pss = result
    if process.fold_part is None and process.mappings is not None:  # (not taken as it was read)
        process = process.replaced(fold_part=fold.part(process.mappings)[0])
    return process.with_totals_only(), had_pss


class Gathered:
    """The results of reading processes, taken in as they come (in any order) and kept
    as compact as the report allows: folded into the view's sums, or with their
    mappings summed where no per-mapping figure is shown.  Put in pid order at the end,
    the order a serial read gives."""

    def __init__(self, fold, needs):
        self.fold = fold
        self.needs = needs
        # a report that shows no per-mapping figure keeps only a process's sums (a capture
        # without smaps_rollup is read from smaps)
        self.totals_only = not needs.mappings and not needs.split and needs.counters is not None
        self.processes = []
        self.unreadable = []   # (pid, reason, name)
        self.skipped = []      # (pid, name, VmRSS KiB)
        self.pss_missing = False
        self.smaps_absent = 0  # processes named whose smaps and smaps_rollup were not there

    def add(self, result):
        if result is None:
            return
        if isinstance(result, SmapsAbsent):
            self.smaps_absent += 1
            return
        if isinstance(result, ProcessSkipped):
            self.skipped.append((result.pid, result.name, result.rss_kib))
            return
        if isinstance(result, ProcessUnreadable):
            self.unreadable.append((result.pid, result.reason, result.name))
            return
        process, had_pss = result
        self.pss_missing = self.pss_missing or not had_pss
        if self.fold is not None:
            self.fold.add(process)
            if hasattr(self.fold, "part"):  # a fold beside the process rows (the page's): their sums stay
                process = process.with_totals_only()
                if process.fold_part is not None:
                    process = process.replaced(fold_part=None)
            else:
                process = process.without_mappings()
        elif self.totals_only:
            process = process.with_totals_only()
        self.processes.append(process)

    def reading(self, source, meminfo, selected):
        unreadable = sorted(((pid, reason, name) for pid, reason, name in self.unreadable), key=lambda u: u[0])
        return make_reading(source, self.needs, tuple(sorted(self.processes, key=lambda p: p.pid)), meminfo,
                            unreadable, self.pss_missing, tuple(sorted(self.skipped, key=lambda s: s[0])),
                            None if self.fold is None else self.fold.result(), selected,
                            self.kernel_without_smaps(source))

    def kernel_without_smaps(self, source):
        """Whether the source's kernel gives no /proc/PID/smaps: processes were named and none
        had smaps or smaps_rollup (nor was refused: a refused one has them), and the kernel says
        so too (process.kernel_gives_no_smaps): those read may be a few that -P, -U or --pid
        picked out of a capture, or have exited as they were read."""
        if self.processes or self.unreadable or not self.smaps_absent:
            return False
        from .process import kernel_gives_no_smaps
        return kernel_gives_no_smaps(source)


def make_reading(source, needs, processes, meminfo, unreadable, pss_missing, skipped, folded, selected,
                 no_smaps=False):
    """The Reading of ``processes`` (in pid order), with what the machine gives beside them that
    ``needs`` asks for (kernel pools, the clock, memory pressure, device memory): one place for
    every loader, whole or incremental.  ``unreadable``: (pid, reason, name) in pid order;
    ``no_smaps``: the kernel gives no process's smaps (Gathered.kernel_without_smaps)."""
    by_reason = {}
    for pid, reason, name in unreadable:
        by_reason.setdefault(reason, []).append((pid, name))
    cgroups = [p.cgroup for p in processes if p.cgroup]
    pools = None
    if needs.pools:
        from ..kernel_pools import read_kernel_pools
        pools = read_kernel_pools(source, cgroups)
    extra = {}
    if needs.uptime:
        from .process import read_clock
        extra["clock"] = read_clock(source)
    if needs.pressure:
        from ..memory_pressure import read_memory_pressure
        extra["pressure"] = read_memory_pressure(source, cgroups)
    if needs.devices:
        from ..device_memory import device_memory
        extra["devices"] = device_memory(source, processes)
    return Reading(source, processes, meminfo, MappingProxyType({r: tuple(u) for r, u in by_reason.items()}),
                   pss_missing, skipped, pools, folded, selected, no_smaps=no_smaps, **extra)


@contextlib.contextmanager
def collector_paused():
    """Pause the cyclic garbage collector while processes are read.

    Loading allocates an object or two per mapping (30,000 on a busy desktop) and
    none of them form cycles, but every 700 allocations the collector walks the
    young objects and, now and then, the whole growing heap (docs/benchmarks.md).
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
