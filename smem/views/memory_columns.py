"""The memory columns every row-of-memory view shares (process, mapping, user, program).

Each view passes how to get a row's summed smaps counters, its PSS split and,
where it has one, its /proc/PID/status; the columns are then the same
everywhere, with the same help, so -c, -s, -t, -p, -k and the formats treat
them alike.
"""

from ..aggregate import sum_of
from ..model import uss_of
from .columns import amount

__all__ = ["memory_columns", "exact_columns"]


def _counter(totals_of, key):
    return lambda r: totals_of(r).get(key)


def _sum(totals_of, *keys):
    return lambda r: sum_of(totals_of(r), *keys)


#: What the per-mapping estimate of the PSS split reads (accounting.pss_split_of_mappings).
SPLIT_COUNTERS = ("Pss", "Anonymous", "Rss")


def _split(split_of, index):
    def get(r):
        split = split_of(r)
        return None if split is None else split[index]
    return get


def _wide(key, header, getter, help, **kw):
    return amount(key, header, getter, help, width=max(8, len(header)), **kw)


def _swap_ram(totals_of, ratios_of, index):
    def get(r):
        ratio = ratios_of(r)[index]
        swap = totals_of(r).get("SwapPss")
        return None if ratio is None or swap is None else round(swap * ratio)
    return get


def _device(devices_of, field, kind=None):
    def get(r):
        share = devices_of(r)
        if share is None:
            return None
        return share.region(kind) if kind is not None else getattr(share, field)
    return get


def _of_all_rows(devices_of, field, kind=None):
    """A device column's -t total, the share of all the rows as one group's (device_memory.sum_shares):
    each client's shared memory once however many rows hold it, the parts split 1/k added before
    rounding, so that it is a group view's total too (the rows' rounded parts summed fell short)."""
    def total(rows):
        from ..device_memory import sum_shares
        share = sum_shares(devices_of(r) for r in rows)
        return None if share is None else share.region(kind) if kind is not None else getattr(share, field)
    return total


def device_columns(devices_of):
    """GPU memory per client counted once and split between its holders (smem.device_memory);
    ``devices_of``: a row's DeviceShare, or None."""
    from ..device_memory import REGION_KINDS
    columns = [
        _wide("gpu", "GPU", _device(devices_of, "gpu"),
              "GPU memory resident and its own (less what its clients share), a client held by k "
              "processes split 1/k (DRM fdinfo; - without a GPU client)", needs={"devices"},
              total_of=_of_all_rows(devices_of, "gpu")),
        _wide("gpushared", "GPUShared", _device(devices_of, "gpushared"),
              "GPU memory its clients share with other clients, in full (DRM fdinfo drm-shared-): a group, "
              "and the -t total, count a client once", needs={"devices"},
              total_of=_of_all_rows(devices_of, "gpushared")),
    ]
    for kind, what in REGION_KINDS.items():
        columns.append(_wide(f"gpu{kind}", f"GPU{kind.upper()}", _device(devices_of, None, kind),
                             f"gpu in {what}", needs={"devices"}, total_of=_of_all_rows(devices_of, None, kind)))
    columns.append(_wide("dmabuf", "DmaBuf", _device(devices_of, "dmabuf"),
                         "dma-buf PSS: each buffer it holds by fd or maps (/dmabuf:) split between the "
                         "processes holding it (fdinfo size, /sys/kernel/dmabuf; - without one)", needs={"devices"},
                         total_of=_of_all_rows(devices_of, "dmabuf")))
    return columns


def working_set_columns(working_set_of):
    """What the processes referenced during --wss SECONDS (smem.working_set); ``working_set_of``:
    a row's (wss, wsspss): idle page tracking's figures, or smaps ``Referenced`` once the
    referenced bits were cleared and each mapping's referenced pages x its Pss/Rss."""
    return [
        _wide("wss", "WSS", lambda r: working_set_of(r)[0],
              "working set: pages referenced during --wss SECONDS (ignoring sharing)", needs={"wss"},
              counters=WSSPSS_COUNTERS),
        _wide("wsspss", "WSSPSS", lambda r: working_set_of(r)[1],
              "working set with shared pages split as PSS splits them (--wss)",
              needs={"wss", "mappings"}, counters=WSSPSS_COUNTERS),
    ]


#: what the working set reads per mapping under clear_refs (working_set.working_set_of)
WSSPSS_COUNTERS = ("Referenced", "Pss", "Rss")


def memory_columns(totals_of, split_of, status_of=None, *, vss=True, split_needs=frozenset(), ksm_of=None,
                   swap_ratios_of=None, devices_of=None, working_set_of=None):
    """The classic amounts (swap uss rss pss vss) and the newer counters, in known-fields order.

    ``ksm_of``: a row's KSM pages where it has more than smaps' ``KSM:`` (a process's
    /proc/PID/ksm_merging_pages); ``swap_ratios_of``: a row's (zram, zswap) RAM per KiB of swap
    (kernel_pools.swap_ram_ratios), for the columns that share the compressed pools out by SwapPss;
    ``devices_of``: a row's device_memory.DeviceShare, for the GPU columns.
    """
    columns = [
        amount("swap", "Swap", _counter(totals_of, "Swap"), "swap space used (ignoring sharing)",
               percent_of="swap", counters={"Swap"}),
        amount("uss", "USS", lambda r: uss_of(totals_of(r)), "unique set size: memory only this maps",
               counters={"Private_Clean", "Private_Dirty"}, exact_total="uss_kib"),
        amount("rss", "RSS", _counter(totals_of, "Rss"), "resident set size (ignoring sharing)",
               counters={"Rss"}, exact_total="rss_kib"),
        amount("pss", "PSS", _counter(totals_of, "Pss"),
               "proportional set size (shared pages divided among their users)", counters={"Pss"},
               exact_total="pss_kib"),
    ]
    if vss:
        columns.append(amount("vss", "VSS", _counter(totals_of, "Size"),
                              "virtual set size (all virtual memory mapped)", needs={"mappings"},
                              counters={"Size"}))
    columns += [
        _wide("swappss", "SwapPSS", _counter(totals_of, "SwapPss"),
              "proportional swap: swap shared by N counts 1/N (Linux 4.3+)", percent_of="swap",
              counters={"SwapPss"}),
    ]
    if swap_ratios_of is not None:
        columns += [
            _wide("zram", "ZramRAM", _swap_ram(totals_of, swap_ratios_of, 0),
                  "RAM its swap takes in zram: SwapPSS x zram pool / swap used (- without zram swap)",
                  needs={"pools"}, counters={"SwapPss"}),
            _wide("zswap", "ZswapRAM", _swap_ram(totals_of, swap_ratios_of, 1),
                  "RAM its swap takes in zswap: SwapPSS x Zswap / swap used, with its cgroup v2's "
                  "compression (memory.stat zswap / zswapped) where known (Linux 5.19+)",
                  needs={"pools", "cgroup"}, counters={"SwapPss"}),
        ]
    columns += [
        _wide("pss_anon", "PSS_Anon", _split(split_of, 0),
              "PSS of anonymous pages (smaps_rollup; else estimated per mapping)", needs=split_needs | {"split"},
              counters=SPLIT_COUNTERS),
        _wide("pss_file", "PSS_File", _split(split_of, 1),
              "PSS of file pages (smaps_rollup; else estimated per mapping)", needs=split_needs | {"split"},
              counters=SPLIT_COUNTERS),
        _wide("pss_shmem", "PSS_Shmem", _split(split_of, 2),
              "PSS of shared memory (smaps_rollup; else estimated per mapping)", needs=split_needs | {"split"},
              counters=SPLIT_COUNTERS),
        _wide("pss_dirty", "PSS_Dirty", _counter(totals_of, "Pss_Dirty"), "PSS of dirty pages (Linux 6.0+)",
              counters={"Pss_Dirty"}),
        _wide("dirty", "Dirty", _sum(totals_of, "Shared_Dirty", "Private_Dirty"),
              "dirty pages, shared and private (ignoring sharing)", counters={"Shared_Dirty", "Private_Dirty"}),
        _wide("anon", "Anon", _counter(totals_of, "Anonymous"), "anonymous pages (ignoring sharing)",
              counters={"Anonymous"}),
        _wide("referenced", "Referenced", _counter(totals_of, "Referenced"),
              "pages recently referenced (ignoring sharing)", counters={"Referenced"}),
        _wide("locked", "Locked", _counter(totals_of, "Locked"), "pages locked in memory (mlock)",
              counters={"Locked"}),
        _wide("thp", "THP", _sum(totals_of, "AnonHugePages", "ShmemPmdMapped", "FilePmdMapped"),
              "transparent huge pages: anonymous, shmem and file",
              counters={"AnonHugePages", "ShmemPmdMapped", "FilePmdMapped"}),
        _wide("hugetlb", "HugeTLB", _sum(totals_of, "Shared_Hugetlb", "Private_Hugetlb"),
              "hugetlbfs pages, shared and private", counters={"Shared_Hugetlb", "Private_Hugetlb"}),
        _wide("ksm", "KSM", ksm_of or _counter(totals_of, "KSM"),
              "pages merged by KSM (smaps KSM:, Linux 6.6+" + ("; else ksm_merging_pages, 5.19+)" if ksm_of else ")"),
              needs={"ksm"} if ksm_of else (), counters={"KSM"}),
    ]
    if status_of is not None:
        for key, header, field, what in (("rss_anon", "RSS_Anon", "RssAnon", "anonymous"),
                                         ("rss_file", "RSS_File", "RssFile", "file"),
                                         ("rss_shmem", "RSS_Shmem", "RssShmem", "shared memory")):
            columns.append(_wide(key, header, (lambda f: lambda r: status_of(r, f))(field),
                                 f"resident {what} pages, from status (Linux 4.5+)", needs={"status"}))
    if devices_of is not None:
        columns += device_columns(devices_of)
    if working_set_of is not None:
        columns += working_set_columns(working_set_of)
    return columns


def _exact(exact_of, field):
    def get(r):
        figures = exact_of(r)
        if figures is None:
            return None
        value = getattr(figures, field)
        return int(round(value)) if isinstance(value, float) else value
    return get


def exact_columns(exact_of):
    """Exact figures of a row's processes as one group, from pagemap (--exact)."""
    def column(key, header, field, help, **kw):
        return _wide(key, header, _exact(exact_of, field), help, needs={"exact"},
                     exact_total=field, **kw)
    return [
        column("guss", "GUSS", "uss_kib",
               "group USS: frames only these processes map, what killing them all frees (--exact)"),
        column("gpss", "GPSS", "pss_kib", "group PSS recomputed page by page from map counts (--exact)"),
        column("grss", "GRSS", "rss_kib",
               "distinct frames mapped (a frame shared inside the group counts once) (--exact)"),
        column("gshared", "GShared", "shared_kib", "frames also mapped by processes outside the group (--exact)"),
        column("gswap", "GSwap", "swap_kib", "distinct swap slots (--exact)", percent_of="swap"),
    ]
