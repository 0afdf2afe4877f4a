"""Views that add processes up by a key: the user view (-u) and the program view (--group name).

A group's counters are the sums of its processes' (so its USS is the sum of
their USS: a page shared only within the group is in nobody's USS; exact
accounting with pagemap is what tells that apart).
"""

from collections import Counter

from ..aggregate import Sums
from ..parsers.cgroup import cgroup_label
from ..parsers.status import status_kib
from .columns import Accounting, Column, ColumnMetric, Comparison, Metrics, Reads, View, count, text
from .memory_columns import exact_columns, memory_columns
from ..kernel_pools import SwapRamRatios
from .cpu import cpu_column, cpu_readings, process_cpu
from .process import process_ksm, process_split, user_label

__all__ = ["USER_VIEW", "PROGRAM_VIEW", "CGROUP_VIEW", "GroupRow", "group_rows"]

_STATUS_FIELDS = ("RssAnon", "RssFile", "RssShmem")


class GroupRow:
    """A group of processes and what they add up to; made once (group_rows), its fields never set
    after: the table, a chart and a diff read the same row."""

    __slots__ = ("key", "label", "processes", "totals", "exact", "swap_ratios", "devices", "pressure", "cpu",
                 "measured", "_split", "_status")

    def __init__(self, key, label, processes, exact=None, swap_ratios=(None, None), devices=None, pressure=None,
                 cpu=None, measured=None):
        self.key = key
        self.label = label
        self.processes = processes  # a tuple of its smem.model.Process
        self.totals = Sums([p.totals for p in processes])
        self.exact = exact  # ExactFigures of the group under --exact
        self.swap_ratios = swap_ratios  # kernel_pools.SwapRamRatios.of_group of its processes
        self.devices = devices  # device_memory.DeviceShare: its processes' summed
        self.pressure = pressure  # memory_pressure.MemoryPressure (the cgroup view)
        self.cpu = cpu  # % of one core its processes ran, summed (views.cpu)
        self.measured = measured  # smem.working_set.WorkingSet, under --wss
        self._split = False
        self._status = None

    @property
    def count(self):
        return len(self.processes)

    @property
    def member_pids(self):
        return [p.pid for p in self.processes]

    @property
    def split(self):
        if self._split is False:
            splits = [s for s in map(process_split, self.processes) if s is not None]
            self._split = tuple(map(sum, zip(*splits))) if splits else None
        return self._split

    @property
    def working_set(self):
        """(wss, wsspss) KiB of its processes, summed (smem.working_set, imported only for a wss column)."""
        from ..working_set import summed_working_sets, working_set_of
        return summed_working_sets(working_set_of(p, self.measured) for p in self.processes)

    @property
    def ksm(self):
        """The members' KSM pages (process_ksm), summed; None where none of them has a figure."""
        values = [v for v in map(process_ksm, self.processes) if v is not None]
        return sum(values) if values else None

    @property
    def status(self):
        if self._status is None:
            self._status = {}
            for process in self.processes:
                if process.status is None:
                    continue
                for field in _STATUS_FIELDS:
                    value = status_kib(process.status, field)
                    if value is not None:
                        self._status[field] = self._status.get(field, 0) + value
        return self._status


def group_rows(snapshots, key, label, pressure=None, apart=None):
    """One row per value of ``key(process)`` among the processes that map memory, of the last of
    ``snapshots`` (an earlier one before it: the cpu column is over the interval between them);
    ``pressure``: the cgroup view's, each row's own; ``apart``: {key: label} -> the same keys with
    labels that no two share, where two keys can have one label (two uids, one user name)."""
    snapshot = snapshots[-1]
    members = _members(snapshots)
    groups = {}  # key -> (label, [process], [cpu]): gathered here, each made a GroupRow once
    for process, cpu in zip(members.processes, members.cpu):
        k = key(process)
        group = groups.get(k)
        if group is None:
            group = groups[k] = (label(process), [], [])
        group[1].append(process)
        group[2].append(cpu)
    exact, clock = snapshot.exact, snapshot.clock
    figures = exact.groups({k: [p.pid for p in g[1]] for k, g in groups.items()}) if exact is not None else None
    devices = snapshot.devices.shares if snapshot.devices is not None else None  # (no share held: no row has one)
    if devices:
        from ..device_memory import sum_shares
    names = apart({k: g[0] for k, g in groups.items()}) if apart is not None else None
    rows = []
    for k, (name, processes, cpus) in groups.items():
        name = names[k] if names is not None else name
        shares = [v for v in cpus if v is not None] if clock is not None else None
        rows.append(GroupRow(k, name, tuple(processes), exact=figures[k] if figures is not None else None,
                             swap_ratios=members.ratios.of_group(processes) if members.swapped
                             else members.ratios.machine,
                             devices=sum_shares(devices.get(p.pid) for p in processes) if devices else None,
                             pressure=pressure, cpu=round(sum(shares), 1) if shares else None,
                             measured=snapshot.working_set))
    return rows


class _Members:
    """What every group view takes of a snapshot's processes, the same for the program, user and
    cgroup views of one collection (smem serve's scrape, a watch frame, a page make the three):
    those that map memory, the cpu of each over the interval, the swap ratios, and whether any
    has pages in swap (else each group's ratios are the machine's, its members not weighed)."""

    __slots__ = ("snapshots", "processes", "cpu", "ratios", "swapped")

    def __init__(self, snapshots):
        snapshot = snapshots[-1]
        self.snapshots = snapshots
        self.processes = [p for p in snapshot.processes if p.has_memory]
        clock, earlier = snapshot.clock, cpu_readings(snapshots[0]) if len(snapshots) > 1 else None
        self.cpu = ([process_cpu(p, clock, earlier) for p in self.processes] if clock is not None
                    else [None] * len(self.processes))
        self.ratios = SwapRamRatios(snapshot.pools, snapshot.meminfo.kib)
        self.swapped = any(p.totals.get("SwapPss") for p in self.processes)


_latest = [None]  # the _Members made last: the next group view of the same snapshots takes it


def _members(snapshots):
    """_Members of ``snapshots`` (the same objects as the latest call's: that one's)."""
    latest = _latest[0]
    if (latest is None or len(latest.snapshots) != len(snapshots)
            or any(a is not b for a, b in zip(latest.snapshots, snapshots))):
        latest = _latest[0] = _Members(tuple(snapshots))
    return latest


def _memory():
    return memory_columns(lambda r: r.totals, lambda r: r.split,
                          lambda r, field: r.status.get(field), vss=True, split_needs={"rollup"},
                          ksm_of=lambda r: r.ksm, swap_ratios_of=lambda r: r.swap_ratios,
                          devices_of=lambda r: r.devices, working_set_of=lambda r: r.working_set) + \
        exact_columns(lambda r: r.exact) + [cpu_column(lambda r: r.cpu)]


#: every group view's rows are disjoint sets of processes, each the same row by its key in two readings
_GROUPS = Accounting(process_groups=True, disjoint=True)
_BY_KEY = Comparison(row_key=lambda r: r.key, interval_rows=True)


def user_rows(snapshots, options):
    return group_rows(snapshots, lambda p: p.uid, lambda p: user_label(p, options.numeric), apart=uids_apart)


def uids_apart(labels):
    """{uid: label} with each label that several uids hold written ``name:uid`` (passwd merged from
    NIS or LDAP names two uids alike; a name that is a number, an unnamed uid's): one row per uid, as
    smem 1.5 has them, but no two rows, CSV rows or metric series under one label.  A label so made
    ends in its own uid, so two made never meet; one made that meets another name is made again."""
    labels = dict(labels)
    while True:
        held = Counter(labels.values())
        shared = [uid for uid, label in labels.items() if held[label] > 1]
        if not shared:
            return labels
        for uid in shared:
            labels[uid] = f"{labels[uid]}:{'?' if uid is None else uid}"


USER_VIEW = View(
    name="user", title="users",
    columns={c.key: c for c in (
        text("user", "User", lambda r: r.label, "user name or ID", 8),
        count("count", "Count", lambda r: r.count, "number of processes", total_key="processes"),
        *_memory(),
    )},
    default_columns=("user", "count", "swap", "uss", "pss", "rss"),
    default_sort="pss", rows=user_rows, accounting=_GROUPS, comparison=_BY_KEY,
    metrics=Metrics(labels=(("user", lambda r: r.label),)),
    smem15_table=True,
)


def program_rows(snapshots, options):
    return group_rows(snapshots, lambda p: p.name, lambda p: p.name)


PROGRAM_VIEW = View(
    name="program", title="programs",
    columns={c.key: c for c in (
        text("name", "Name", lambda r: r.label, "program name (from stat)", 24, truncate=True, total="rows",
             total_key="programs"),
        count("count", "Count", lambda r: r.count, "number of processes", total_key="processes"),
        *_memory(),
    )},
    default_columns=("name", "count", "swap", "uss", "pss", "rss"),
    default_sort="pss", rows=program_rows, reads=Reads(needs=frozenset({"stat"})), accounting=_GROUPS,
    comparison=_BY_KEY, metrics=Metrics(labels=(("name", lambda r: r.label),)),
)


def _whole_path(row):
    """A cgroup's metric label: its path whole, as cAdvisor's id label has it.  The tables' label cuts a
    container's id to the 12 hex digits docker ps shows, which two cgroups can share (a user names
    cgroups freely in the subtree systemd delegates to them): one label twice, a duplicate series."""
    return row.key if row.key is not None else row.label


def cgroup_rows(snapshots, options):
    return group_rows(snapshots, lambda p: p.cgroup, lambda p: cgroup_label(p.cgroup), snapshots[-1].pressure)


def _pressure(kind, window):
    def get(r):
        return r.pressure.of_cgroup(r.key, kind, window) if r.pressure is not None else None
    return get


def _stalled(kind):
    def get(r):
        us = r.pressure.of_cgroup(r.key, kind, "total_us") if r.pressure is not None else None
        return None if us is None else us / 1e6
    return get


#: the families the pressure columns are exported as, labelled as the machine's
#: (formats.families.pressure_families) and by cgroup; absent where a cgroup has no memory.pressure
_RATIO = "share of time its tasks stalled on memory over the window (cgroup v2 memory.pressure: some = at least " \
         "one task, full = all at once; absent without it)"
_STALLED = "time its tasks stalled on memory since the cgroup was made (cgroup v2 memory.pressure total; " \
           "absent without it)"


def _pressure_columns():
    """The cgroup's memory.pressure (cgroup v2, Linux 4.20+): % of time its tasks stalled on memory,
    and for how long in all; exported as smem_cgroup_memory_pressure_ratio{kind, window} and the
    counter smem_cgroup_memory_pressure_stall_seconds_total{kind}."""
    from ..parsers.pressure import KINDS, WINDOWS
    averages = [Column(f"{kind}{window[3:]}", f"{kind.title()}{window[3:]}", _pressure(kind, window),
                       f"memory.pressure {kind} {window}: % of the last {window[3:]} s {'some' if kind == 'some' else 'all'}"
                       f" of its tasks stalled on memory (- without cgroup v2 PSI)", width=7, needs=frozenset({"pressure"}),
                       metric=ColumnMetric("memory_pressure_ratio", _RATIO, (("kind", kind), ("window", window)),
                                           scale=0.01))
                for kind in KINDS for window in WINDOWS]
    totals = [Column(f"{kind}stall", f"{kind.title()}Stall", _stalled(kind),
                     f"memory.pressure {kind} total: seconds {'some' if kind == 'some' else 'all'} of its tasks "
                     f"stalled on memory since the cgroup was made (- without cgroup v2 PSI)", width=11,
                     needs=frozenset({"pressure"}),
                     metric=ColumnMetric("memory_pressure_stall_seconds", _STALLED, (("kind", kind),), "seconds",
                                         type="counter"))
              for kind in KINDS]
    return averages + totals


CGROUP_VIEW = View(
    name="cgroup", title="cgroups",
    columns={c.key: c for c in (
        text("cgroup", "Cgroup", lambda r: r.label, "memory cgroup: a service, a container, a session",
             40, truncate=True, keep_end=True, total="rows", total_key="cgroups"),
        count("count", "Count", lambda r: r.count, "number of processes", total_key="processes"),
        *_memory(),
        *_pressure_columns(),
    )},
    default_columns=("cgroup", "count", "swap", "uss", "pss", "rss"),
    default_sort="pss", rows=cgroup_rows, flowing_column="cgroup", reads=Reads(needs=frozenset({"cgroup"})),
    accounting=_GROUPS, comparison=_BY_KEY, metrics=Metrics(labels=(("cgroup", _whole_path),)),
)
