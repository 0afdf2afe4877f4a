"""What the kernel keeps outside meminfo's fields: zram devices, and KSM's savings.

- zram (Documentation/admin-guide/blockdev/zram.rst): a compressed block device in RAM,
  usually swap.  Its pool (``mm_stat``'s mem_used_total) is RAM that no meminfo field
  counts: zsmalloc takes whole pages from the page allocator.  ``/proc/swaps`` says
  which devices are swap; where it was not captured, every zram device holding data is
  taken as swap (the usual set-up: Android, Fedora, ChromeOS).
- zswap (Documentation/admin-guide/mm/zswap.rst): a compressed cache in front of swap,
  in meminfo itself (``Zswap``, the pool; ``Zswapped``, what it holds; Linux 5.19+), and
  per cgroup v2 in ``memory.stat`` (``zswap``, ``zswapped``: the cgroup's part of them,
  Documentation/admin-guide/cgroup-v2.rst), read for the processes' cgroups from
  /sys/fs/cgroup (live: the unified hierarchy mounted there) or a capture's
  ``sys/fs/cgroup/PATH/memory.stat`` members.
- KSM (Documentation/admin-guide/mm/ksm.rst): ``pages_sharing`` pages saved by merging
  identical anonymous pages; ``general_profit`` (6.1+) the saving minus KSM's own cost.
- the per-CPU free lists (/proc/zoneinfo ``pagesets``): free pages MemFree leaves out.

What a swapped KiB costs in RAM is the compressed pools over the swap in use
(SwapTotal - SwapFree, which counts zswap's and zram's pages as well as a disk's): a
process's share of them is its SwapPss times that (the swap columns, ``zram`` and
``zswap``).  Where a system has swap on disk and on zram, this is an average.

zswap per cgroup: the machine's ratio is Zswap / swapped = (Zswap / Zswapped) x (Zswapped /
swapped), how well zswap compresses times the share of swapped pages zswap holds.  Where the
process's cgroup v2 ``memory.stat`` has ``zswap`` and ``zswapped``, the first factor is the
cgroup's own (its pages may compress better or worse than the machine's, and a cgroup with
nothing in zswap takes nothing of the pool); the second stays the machine's, as memory.stat
does not say how much of the cgroup's swap is on disk.  Where the cgroup's file is missing
(cgroup v1, an older kernel or capture), the machine's ratio is used.
"""

from types import MappingProxyType
from typing import Dict, Iterable, Mapping, NamedTuple, Optional, Tuple

from .parsers import plausible
from .parsers.ksm import KSM_FILES, parse_ksm_value
from .parsers.memory_stat import parse_memory_stat, zswap_bytes
from .parsers.meminfo import swap_in_use_kib
from .parsers.mm_stat import parse_mm_stat
from .parsers.swaps import parse_swap_devices
from .parsers.zoneinfo import per_cpu_free_pages

__all__ = ["KernelPools", "ZramDevice", "read_kernel_pools", "swap_ram_ratios", "cgroup_memory_stat_path",
           "SwapRamRatios"]


class ZramDevice(NamedTuple):
    name: str                # "zram0"
    mm_stat: Dict[str, int]  # parsers.mm_stat fields (bytes)
    swap: bool               # used as swap (per /proc/swaps, or assumed)

    @property
    def pool_kib(self):
        used = self.mm_stat.get("mem_used_total")
        return None if used is None else used // 1024


#: an empty mapping no one can add to: KernelPools' default (a named tuple's default is shared by
#: every instance); pools stay in the process that read them, so it need not pickle
_NONE = MappingProxyType({})


class KernelPools(NamedTuple):
    zram: Tuple[ZramDevice, ...] = ()
    ksm: Mapping[str, int] = _NONE                        # KSM_FILES present: counts (general_profit: bytes)
    page_size: Optional[int] = None                       # bytes, of the data's machine
    swaps_known: bool = False                             # /proc/swaps was read
    per_cpu_free_pages: Optional[int] = None              # zoneinfo's pagesets counts
    #: cgroup v2 path -> (zswap, zswapped) bytes of its memory.stat, for the processes' cgroups that have them
    cgroup_zswap: Mapping[str, Tuple[int, int]] = _NONE

    @property
    def per_cpu_free_kib(self):
        return kib_of_pages(self.per_cpu_free_pages, self.page_size)

    def zram_kib(self, swap_only=False):
        """The zram devices' pools (KiB), or None where there is no zram device (with mm_stat)."""
        devices = [d for d in self.zram if d.pool_kib is not None and (d.swap or not swap_only)]
        return sum(d.pool_kib for d in devices) if devices else None

    @property
    def ksm_saved_kib(self):
        """Pages KSM saves (pages_sharing), KiB; None where KSM or the page size is unknown."""
        return kib_of_pages(self.ksm.get("pages_sharing"), self.page_size)


def kib_of_pages(pages, page_size):
    """``pages`` in KiB; None where unknown, or more than a machine has (a damaged capture)."""
    if pages is None or not page_size or plausible(pages * page_size) is None:
        return None
    return pages * page_size // 1024


def cgroup_memory_stat_path(cgroup):
    """The /sys path ("fs/cgroup/a/b/memory.stat") of the cgroup v2 ``cgroup``'s memory.stat,
    or None for a path that is not a plain one ("..", empty parts)."""
    parts = cgroup.strip("/").split("/") if cgroup.strip("/") else []
    if not cgroup.startswith("/") or any(p in ("", ".", "..") or "\0" in p for p in parts):
        return None
    return "/".join(["fs/cgroup", *parts, "memory.stat"])


def _cgroup_zswap(source, cgroups):
    found = {}
    for cgroup in sorted(set(cgroups)):
        path = cgroup_memory_stat_path(cgroup)
        if path is None:
            continue
        raw = source.read_sys_optional(path)
        counts = zswap_bytes(parse_memory_stat(raw)) if raw is not None else None
        if counts is not None:
            found[cgroup] = counts
    return found


def read_kernel_pools(source, cgroups: Iterable[str] = ()):
    """The zram devices and the KSM counters of ``source`` (absent ones left out), and the
    zswap figures of the cgroups ``cgroups`` (v2 paths: the processes' ones) that have them."""
    swaps = source.read_optional("swaps")
    swapping = parse_swap_devices(swaps) if swaps is not None else None
    devices = []
    for name in source.list_sys("block"):
        if not name.startswith("zram"):
            continue
        raw = source.read_sys_optional(f"block/{name}/mm_stat")
        try:
            stat = parse_mm_stat(raw) if raw is not None else None
        except ValueError:
            stat = None
        if stat is None:
            continue
        swap = name in swapping if swapping is not None else bool(stat.get("orig_data_size"))
        devices.append(ZramDevice(name, stat, swap))
    ksm = {}
    for name in KSM_FILES:
        raw = source.read_sys_optional(f"kernel/mm/ksm/{name}")
        try:
            if raw is not None:
                ksm[name] = parse_ksm_value(raw)
        except ValueError:
            continue
    zoneinfo = source.read_optional("zoneinfo")
    try:
        per_cpu = per_cpu_free_pages(zoneinfo) if zoneinfo else None
    except ValueError:
        per_cpu = None
    return KernelPools(tuple(devices), ksm, source.machine().page_size, swapping is not None, per_cpu,
                       _cgroup_zswap(source, cgroups))


def swap_ram_ratios(pools, meminfo_kib, cgroup=None):
    """(zram, zswap): the RAM each compressed pool takes per KiB of swap in use, or None
    where the kernel has no such pool (no zram swap device; no ``Zswap`` field, before 5.19)
    or no swap figure; ``cgroup``: a process's cgroup, whose memory.stat's compression
    (read into ``pools.cgroup_zswap``) stands in for the machine's (the module's docstring)."""
    if pools is None:
        return None, None
    swapped = swap_in_use_kib(meminfo_kib)
    if swapped is None:
        return None, None
    zram = pools.zram_kib(swap_only=True)
    zswap = meminfo_kib.get("Zswap")

    def ratio(pool):
        if pool is None:
            return None
        return pool / swapped if swapped > 0 else 0.0
    return ratio(zram), _cgroup_zswap_ratio(pools.cgroup_zswap.get(cgroup), meminfo_kib, swapped, ratio(zswap))


def _cgroup_zswap_ratio(counts, meminfo_kib, swapped, machine):
    if counts is None:
        return machine
    zswap, zswapped = counts
    if zswap == 0 or swapped == 0:
        return 0.0  # nothing of the cgroup's in the pool
    held = meminfo_kib.get("Zswapped")
    if not zswapped or not held:
        return machine  # a cgroup with a pool but nothing in it, or no Zswapped: not a ratio
    return zswap / zswapped * min(held / swapped, 1.0)


class SwapRamRatios:
    """swap_ram_ratios of each process of a snapshot, by its cgroup (computed once a cgroup)."""

    def __init__(self, pools, meminfo_kib):
        self.pools = pools
        self.meminfo_kib = meminfo_kib
        self.machine = swap_ram_ratios(pools, meminfo_kib)
        self._by_cgroup = {}

    def of(self, process):
        cgroup = process.cgroup
        if self.pools is None or cgroup not in self.pools.cgroup_zswap:
            return self.machine
        ratios = self._by_cgroup.get(cgroup)
        if ratios is None:
            ratios = self._by_cgroup[cgroup] = swap_ram_ratios(self.pools, self.meminfo_kib, cgroup)
        return ratios

    def of_group(self, processes):
        """A group's ratios: zram the machine's; zswap its processes' weighted by their SwapPss
        (so that the group's SwapPss times it is the sum of theirs); None where one with swap has none."""
        zram = self.machine[0]
        swap = weighted = 0
        for process in processes:
            swap_pss = process.totals.get("SwapPss") or 0
            if not swap_pss:
                continue  # (weighs nothing: its cgroup's ratio is not looked up)
            zswap = self.of(process)[1]
            if zswap is None:
                return zram, None
            swap += swap_pss
            weighted += swap_pss * zswap
        return zram, (weighted / swap if swap else self.machine[1])
