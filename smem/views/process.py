"""The process view (the default): one row per process with memory mapped."""

from operator import attrgetter

from ..aggregate import pss_split_of_mappings
from ..model import ROLLUP_SPLIT
from ..parsers.cgroup import cgroup_label
from ..parsers.status import status_kib
from .columns import Accounting, Comparison, Metrics, Reads, View, count, text
from .cpu import cpu_column, cpu_readings, process_cpu
from .memory_columns import exact_columns, memory_columns

__all__ = ["PROCESS_VIEW", "process_split", "process_status", "process_ksm"]

def process_split(process):
    """(anon, file, shmem) PSS: the kernel's rollup where it has it, else estimated per mapping."""
    rollup = process.rollup
    if rollup and all(k in rollup for k in ROLLUP_SPLIT):
        return tuple(rollup[k] for k in ROLLUP_SPLIT)
    if process.mappings is not None:
        return pss_split_of_mappings(process.mappings)
    return process.split  # (estimated where its mappings were read, then let go: the page's)


def process_ksm(process):
    """KiB merged by KSM: smaps' KSM: (6.6+), else /proc/PID/ksm_merging_pages (5.19+) when read."""
    value = process.totals.get("KSM")
    return value if value is not None else process.ksm_kib


def process_status(process, field):
    return status_kib(process.status, field) if process.status is not None else None


class ProcessRow:
    __slots__ = ("process", "user", "exact", "swap_ratios", "devices", "cpu", "measured", "_split", "_memo")

    def __init__(self, process, user, exact=None, swap_ratios=(None, None), devices=None, cpu=None,
                 working_set=None):
        self.process = process
        self.measured = working_set  # smem.working_set.WorkingSet, under --wss
        self.cpu = cpu  # % of one core (views.cpu)
        self.devices = devices  # device_memory.DeviceShare of the process
        self.user = user
        self.swap_ratios = swap_ratios  # kernel_pools.swap_ram_ratios of the process (its cgroup's)
        self.exact = exact  # ExactFigures under --exact
        self._split = False
        self._memo = None

    @property
    def member_pids(self):
        return (self.process.pid,)

    @property
    def memo_inputs(self):
        """(its name, what its cells are computed from): smem.table_memo.  Made once, when first
        asked for (rows() sets every field before): watch mode asks for the kept side's each frame."""
        if self._memo is None:
            self._memo = self.process.pid, (self.process, self.user, self.swap_ratios, self.devices, self.cpu,
                                            self.measured, self.exact)
        return self._memo

    @property
    def split(self):
        if self._split is False:
            self._split = process_split(self.process)
        return self._split

    @property
    def working_set(self):
        """(wss, wsspss) KiB (smem.working_set, imported only for a wss column)."""
        from ..working_set import working_set_of
        return working_set_of(self.process, self.measured)


def user_label(process, numeric):
    if numeric:
        return process.uid if process.uid is not None else "?"
    return process.user


def rows(snapshots, options):
    from ..kernel_pools import SwapRamRatios  # (its parsers: only once rows are made)
    snapshot = snapshots[-1]
    ratios = SwapRamRatios(snapshot.pools, snapshot.meminfo.kib)
    devices = snapshot.devices or {}
    clock, earlier = snapshot.clock, cpu_readings(snapshots[0]) if len(snapshots) > 1 else None
    numeric, ratio_of, measured, exact = options.numeric, ratios.of, snapshot.working_set, snapshot.exact
    if clock is None and not devices and not numeric and exact is None:
        # (the usual case, watch mode's every frame: 1,500 rows)
        return [ProcessRow(p, p.user, None, ratio_of(p), None, None, measured)
                for p in snapshot.processes if p.has_memory]
    return [ProcessRow(p, user_label(p, numeric), _exact_of(exact, p.pid), ratio_of(p), devices.get(p.pid),
                       process_cpu(p, clock, earlier) if clock is not None else None, measured)
            for p in snapshot.processes if p.has_memory]


def _exact_of(exact, pid):
    """Its ExactFigures, given when the row is made: its memo (memo_inputs) takes every field once."""
    return exact.process(pid) if exact is not None and pid in exact.pids else None


def _stat(field):
    return lambda r: getattr(r.process.stat, field) if r.process.stat is not None else None


COLUMNS = {c.key: c for c in (
    count("pid", "PID", attrgetter("process.pid"), "process ID", total="rows", total_key="processes"),
    # (-t counts uids: two that passwd names alike are two users, as -u's rows are)
    text("user", "User", attrgetter("user"), "owner of the process", 8, total="distinct", total_key="users")._replace(
        total_getter=lambda r: r.process.uid),
    text("name", "Name", lambda r: r.process.name, "process name (from stat)", 24, truncate=True, needs={"stat"}),
    text("command", "Command", attrgetter("process.command"), "process command line", 27, truncate=True,
         needs={"command"}),
    text("cgroup", "Cgroup", lambda r: cgroup_label(r.process.cgroup), "memory cgroup of the process", 40,
         truncate=True, keep_end=True, needs={"cgroup"}),
    count("maps", "Maps", lambda r: r.process.map_count, "number of mappings", needs={"mappings"}),
    *memory_columns(attrgetter("process.totals"), attrgetter("split"),
                    lambda r, field: process_status(r.process, field), split_needs={"rollup"},
                    ksm_of=lambda r: process_ksm(r.process), swap_ratios_of=lambda r: r.swap_ratios,
                    devices_of=lambda r: r.devices, working_set_of=lambda r: r.working_set),
    *exact_columns(lambda r: r.exact),
    count("ppid", "PPID", _stat("ppid"), "parent process ID", total=None, needs={"stat"}),
    text("state", "S", _stat("state"), "process state (R running, S sleeping, D disk wait, ...)", 1,
         needs={"stat"}),
    count("threads", "Threads", _stat("num_threads"), "number of threads", width=7, needs={"stat"}),
    cpu_column(lambda r: r.cpu),
)}

PROCESS_VIEW = View(
    name="process", title="processes", columns=COLUMNS,
    default_columns=("pid", "user", "command", "swap", "uss", "pss", "rss"),
    default_sort="pss", rows=rows, flowing_column="command",
    reads=Reads(identity=frozenset({"stat"})),
    accounting=Accounting(process_groups=True, disjoint=True),
    metrics=Metrics(labels=(("pid", lambda r: r.process.pid), ("user", lambda r: r.user),
                            ("name", lambda r: r.process.name)),
                    companions=("user", "system")),
    comparison=Comparison(row_key=lambda r: (r.process.pid, r.process.stat.start_time
                                             if r.process.stat is not None else None),
                          interval_rows=True),
    smem15_table=True,
)
