"""What the kernel keeps outside meminfo's fields: zram devices, and KSM's savings.

- zram (Documentation/admin-guide/blockdev/zram.rst): a compressed block device in RAM,
  usually swap.  Its pool (``mm_stat``'s mem_used_total) is RAM that no meminfo field
  counts: zsmalloc takes whole pages from the page allocator.  ``/proc/swaps`` says
  which devices are swap; where it was not captured, every zram device holding data is
  taken as swap (the usual set-up: Android, Fedora, ChromeOS).
- zswap (Documentation/admin-guide/mm/zswap.rst): a compressed cache in front of swap,
  in meminfo itself (``Zswap``, the pool; ``Zswapped``, what it holds; Linux 5.19+).
- KSM (Documentation/admin-guide/mm/ksm.rst): ``pages_sharing`` pages saved by merging
  identical anonymous pages; ``general_profit`` (6.1+) the saving minus KSM's own cost.
- the per-CPU free lists (/proc/zoneinfo ``pagesets``): free pages MemFree leaves out.

What a swapped KiB costs in RAM is the compressed pools over the swap in use
(SwapTotal - SwapFree, which counts zswap's and zram's pages as well as a disk's): a
process's share of them is its SwapPss times that (the swap columns, ``zram`` and
``zswap``).  Where a system has swap on disk and on zram, this is an average.
"""

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from .parsers import plausible
from .parsers.ksm import KSM_FILES, parse_ksm_value
from .parsers.meminfo import swap_in_use_kib
from .parsers.mm_stat import parse_mm_stat
from .parsers.swaps import parse_swap_devices
from .parsers.zoneinfo import per_cpu_free_pages

__all__ = ["KernelPools", "ZramDevice", "read_kernel_pools"]


@dataclass(frozen=True)
class ZramDevice:
    name: str                # "zram0"
    mm_stat: Dict[str, int]  # parsers.mm_stat fields (bytes)
    swap: bool               # used as swap (per /proc/swaps, or assumed)

    @property
    def pool_kib(self):
        used = self.mm_stat.get("mem_used_total")
        return None if used is None else used // 1024


@dataclass(frozen=True)
class KernelPools:
    zram: Tuple[ZramDevice, ...] = ()
    ksm: Dict[str, int] = field(default_factory=dict)   # KSM_FILES present: counts (general_profit: bytes)
    page_size: Optional[int] = None                       # bytes, of the data's machine
    swaps_known: bool = False                             # /proc/swaps was read
    per_cpu_free_pages: Optional[int] = None              # zoneinfo's pagesets counts

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


def read_kernel_pools(source):
    """The zram devices and the KSM counters of ``source`` (absent ones left out)."""
    swaps = source.read_optional("swaps")
    swapping = parse_swap_devices(swaps) if swaps is not None else None
    devices = []
    for name in source.list_sys("block"):
        if not name.startswith("zram"):
            continue
        try:
            stat = parse_mm_stat(source.read_sys(f"block/{name}/mm_stat"))
        except (OSError, ValueError):
            continue
        swap = name in swapping if swapping is not None else bool(stat.get("orig_data_size"))
        devices.append(ZramDevice(name, stat, swap))
    ksm = {}
    for name in KSM_FILES:
        try:
            ksm[name] = parse_ksm_value(source.read_sys(f"kernel/mm/ksm/{name}"))
        except (OSError, ValueError):
            continue
    zoneinfo = source.read_optional("zoneinfo")
    try:
        per_cpu = per_cpu_free_pages(zoneinfo) if zoneinfo else None
    except ValueError:
        per_cpu = None
    return KernelPools(tuple(devices), ksm, source.machine().page_size, swapping is not None, per_cpu)


def swap_ram_ratios(pools, meminfo_kib):
    """(zram, zswap): the RAM each compressed pool takes per KiB of swap in use, or None
    where the kernel has no such pool (no zram swap device; no ``Zswap`` field, before 5.19)
    or no swap figure."""
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
    return ratio(zram), ratio(zswap)
