"""The data: processes with their memory, what a report needs read, and what it read.

A :class:`Process` is one process's identity and counters; :class:`Needs` what a report needs
read per process (typed :class:`Need` flags); :class:`Reading` what the loader
(:mod:`smem.loading`) read of a source, once; :class:`Derived` what the report worked out from it
(sizing, exact accounting, shared memory, sharing); :class:`Snapshot` the two side by side, what
views read.  Each is built once and never changed (the loader gathers a Process's fields, then
makes it whole).
"""

import enum
import operator
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Optional

from .aggregate import Sums
from .parsers.smaps import Mapping

__all__ = ["Process", "PROCESS_FIELDS", "summed", "Need", "Needs", "Reading", "Derived", "Snapshot", "uss_of", "ROLLUP_SPLIT", "rollup_keys"]


def uss_of(counters):
    """Unique set size: pages mapped by this process alone (Private_Clean + Private_Dirty)."""
    clean = counters.get("Private_Clean")
    dirty = counters.get("Private_Dirty")
    if clean is None and dirty is None:
        return None
    return (clean or 0) + (dirty or 0)


def _sum_kept(mappings):
    """The kept counters (plain dicts, a few keys: parse_smaps_kept) summed in one pass; a key
    no mapping has stays absent.  Summed lazily key by key (aggregate.Sums) they cost a large
    share of a capture's report (docs/benchmarks.md), and the report then summed them again."""
    totals = {}
    for mapping in mappings:
        for key, value in mapping.counters.items():
            before = totals.get(key)
            totals[key] = value if before is None else before if value is None else before + value
    return totals


def summed(mappings, rollup):
    """A process's totals (:attr:`Process.totals`): every smaps counter of ``mappings`` summed, or
    without mappings (None) the kernel's own rollup of them."""
    if mappings is None:
        return rollup if rollup is not None else {}
    if mappings and isinstance(mappings[0].counters, dict):
        return _sum_kept(mappings)
    return Sums([m.counters for m in mappings])


#: A Process's fields, in the order it holds them (a tuple: made in one C call, read through C
#: getters, never changed).
PROCESS_FIELDS = ("pid", "name", "cmdline", "uid", "user", "stat", "mappings", "rollup", "status", "cgroup",
                  "ksm_kib", "devices", "read_seconds", "_totals", "_mapped", "_map_count", "fold_part", "split")
_INDEX = {name: i for i, name in enumerate(PROCESS_FIELDS)}
_MAPPINGS_AT, _ROLLUP_AT, _TOTALS_AT = _INDEX["mappings"], _INDEX["rollup"], _INDEX["_totals"]


class Process(tuple):
    """One process: identity, owner, and the memory data the report asked for.

    ``mappings`` is the list of mappings that passed the map filter, or None
    where only the kernel's rollup (smaps_rollup) was read; ``rollup`` holds
    those counters when read; ``status`` the parsed /proc/PID/status when read.
    A value: every field is given where it is made (the loader gathers them first), and a
    changed one is a new Process (:meth:`replaced`); setting a field raises AttributeError.
    A tuple underneath, so that making one (once a process read, ten thousand a report) is one
    C call where setting eighteen slots one by one was eighteen Python calls; compared and hashed
    by identity, as any object.
    """

    __slots__ = ()

    def __new__(cls, pid, name, cmdline, uid, user, stat, mappings=None, *, rollup=None, status=None,
                cgroup=None, ksm_kib=None, devices=None, read_seconds=None, totals=None, mapped=None,
                map_count=None, fold_part=None, split=None):
        # pid; name: comm, from stat ("?" if unknown; None if stat was not read: Needs.stat);
        # cmdline: arguments joined by spaces ("?" if unknown); uid (None if unknown); user: user
        # name, str(uid), or "?"; stat: PidStat or None.
        # cgroup: memory cgroup path; ksm_kib: pages KSM merged (/proc/PID/ksm_merging_pages);
        # devices: device_memory.DeviceHandles (GPU clients, dma-bufs); read_seconds: how long its
        # smaps took to read (live sources): each None where not read.
        # totals: its counters summed, where the loader summed them as it read (else summed
        # here from the mappings); mapped, map_count: whether it mapped anything and how many
        # mappings it had, once its mappings are summed and let go; fold_part: what a view's fold
        # took of its mappings where it was read (a worker); split: (anon, file, shmem) PSS
        # estimated per mapping, where they were let go unkept.
        if totals is None and mappings is not None:
            totals = summed(mappings, rollup)
        return tuple.__new__(cls, (pid, name, cmdline, uid, user, stat, mappings, rollup, status, cgroup, ksm_kib,
                                   devices, read_seconds, totals, mapped, map_count, fold_part, split))

    def __setattr__(self, name, value):
        raise AttributeError(f"a Process is a value: its {name} is given where it is made (Process.replaced)")

    def __eq__(self, other):
        # (not object.__eq__: its NotImplemented let tuple's == answer, and a Process equalled
        # the tuple of its fields)
        return self is other

    def __ne__(self, other):
        return self is not other

    __hash__ = object.__hash__

    def _unordered(self, other):
        # (not tuple's <: it compared the fields, pid first, a sort by accident that nothing may rely on)
        raise TypeError(f"a Process has no order (compared with a {type(other).__name__}): sort by a key, its pid "
                        "or a figure")

    __lt__ = __le__ = __gt__ = __ge__ = _unordered
    del _unordered

    def __reduce__(self):
        """Pickled as a flat tuple of its fields and its mappings as three flat lists (headers,
        names, counters): what a worker sends the parent (smem.collect).  Tuples and lists
        pickle in C, where a Mapping's own __reduce__ would be a Python call per mapping."""
        mappings = self[_MAPPINGS_AT]
        flat = None if mappings is None else ([m._header for m in mappings], [m.name for m in mappings],
                                              [m.counters for m in mappings])
        return _rebuilt_process, (tuple(self[:_MAPPINGS_AT]) + tuple(self[_MAPPINGS_AT + 1:]), flat)

    def replaced(self, **changes):
        """A new Process with ``changes`` (field=value) and every other field as this one's."""
        fields = list(self)
        for name, value in changes.items():
            fields[_INDEX[name]] = value
        if fields[_TOTALS_AT] is None and fields[_MAPPINGS_AT] is not None:
            fields[_TOTALS_AT] = summed(fields[_MAPPINGS_AT], fields[_ROLLUP_AT])
        return tuple.__new__(Process, fields)

    def without_mappings(self):
        """This process without its mappings, once a view has folded them into its sums (the
        mapping view): a new Process, or this one where it has none."""
        if self.mappings is None:
            return self
        return self.replaced(mappings=None, _totals=None, _mapped=bool(self.mappings), _map_count=len(self.mappings))

    def with_totals_only(self):
        """This process with its mappings summed into :attr:`totals` and let go: what a report
        that shows no per-mapping figure keeps of a process read from smaps (a capture without
        smaps_rollup), so memory does not grow with every mapping of every process."""
        if self.mappings is None:
            return self
        totals = self.totals
        return self.replaced(mappings=None, _mapped=bool(self.mappings), _map_count=len(self.mappings),
                             _totals=totals if isinstance(totals, dict) else {key: totals.get(key) for key in totals})

    @property
    def totals(self):
        """Every smaps counter summed over the mappings (KiB); absent keys stay absent.

        Without mappings, the kernel's own rollup of them.
        """
        totals = self[_TOTALS_AT]
        if totals is None:  # (no mappings: summed when made otherwise)
            rollup = self[_ROLLUP_AT]
            return rollup if rollup is not None else {}
        return totals

    @property
    def has_memory(self):
        """Whether the process maps anything (kernel threads and zombies do not)."""
        if self.mappings is not None:
            return bool(self.mappings)
        if self._mapped is not None:
            return self._mapped
        return self.rollup is not None and "Rss" in self.rollup  # (one lookup: no need to parse it all)

    @property
    def map_count(self):
        return len(self.mappings) if self.mappings is not None else self._map_count

    @property
    def command(self):
        """The command line as shown: the cmdline, or "[name]" where it is empty."""
        return self.cmdline if self.cmdline else f"[{self.name}]"

    def __repr__(self):
        return f"Process({self.pid}, {self.name!r})"


for _i, _name in enumerate(PROCESS_FIELDS):
    setattr(Process, _name, property(operator.itemgetter(_i), doc=f"field {_i} of the value"))
del _i, _name


def _rebuilt_process(fields, flat):
    """The Process :meth:`Process.__reduce__` gave ``fields`` and ``flat`` mappings of."""
    mappings = None if flat is None else list(map(Mapping, *flat))
    return tuple.__new__(Process, fields[:_MAPPINGS_AT] + (mappings,) + fields[_MAPPINGS_AT:])


class Need(enum.Flag):
    """The kinds of data a report may need read per process, beyond identity (cmdline, owner).

    Columns and views declare them by name (``needs={"status"}``); :meth:`named` turns the
    names into flags, so a misspelt need is an error, not a need silently never read.
    """

    MAPPINGS = enum.auto()  # the per-mapping smaps (mapping view, map counts, VSS, -M); else the rollup will do
    ROLLUP = enum.auto()    # smaps_rollup too (its Pss_Anon/File/Shmem split)
    STATUS = enum.auto()    # /proc/PID/status (RssAnon/RssFile/RssShmem, threads)
    CGROUP = enum.auto()    # /proc/PID/cgroup (the cgroup view)
    POOLS = enum.auto()     # the zram devices and KSM counters (smem.kernel_pools, system files)
    KSM = enum.auto()       # /proc/PID/ksm_merging_pages where smaps has no KSM: line (Linux 5.19-6.5)
    STAT = enum.auto()      # /proc/PID/stat of every process: name, parent, state, threads, start
    EXACT = enum.auto()     # page-by-page accounting (--exact)
    SPLIT = enum.auto()     # a PSS split column: before Linux 5.9 the mappings are read to estimate it
    DEVICES = enum.auto()   # the fdinfo of its DRM and dma-buf fds, its dma-buf mappings (smem.device_memory)
    PRESSURE = enum.auto()  # memory pressure, the machine's and its cgroups' (smem.memory_pressure)
    UPTIME = enum.auto()    # /proc/uptime and the clock rate, what CPU time is measured against (cpu)
    WSS = enum.auto()       # the working set: --wss measured it before the reading (smem.working_set)
    COMMAND = enum.auto()   # the command line is shown: read again with a process's figures (smem.incremental)

    @classmethod
    def named(cls, names):
        """The flags of ``names`` ("mappings", "status", ...); ValueError names a need that is none."""
        kinds = cls(0)
        for name in names:
            try:
                kinds |= cls[name.upper()]
            except KeyError:
                raise ValueError(f"no such need: {name!r} (one of "
                                 f"{', '.join(k.name.lower() for k in cls)})") from None
        return kinds


@dataclass(frozen=True)
class Needs:
    """What a report needs read per process: a value built once (views.needs_of), never changed.

    ``kinds``: the :class:`Need` flags.  Without ``STAT``, /proc/PID/stat is read only where
    the cmdline cannot say what a process is (empty: a kernel thread or a zombie), for -P
    (which matches the name too), and to name a process in a warning.
    ``counters``: the smaps counters the report reads per mapping.  Once a process's mappings
    are parsed, only these are kept and its smaps text is let go, so memory does not grow with
    the text of every process (None: keep the text, and every counter can still be read).
    ``max_rss_kib``: --max-rss: a process whose VmRSS (status, read first: cheap) is above this
    is skipped before its smaps is read, since reading smaps walks its page tables and stalls it.
    ``rollup_keys`` (derived): the smaps_rollup counters kept (None: every one): the counters
    read, the PSS split where a column shows it, and Rss and Pss (Process.has_memory).
    """

    kinds: Need = Need.MAPPINGS | Need.STAT
    counters: Optional[frozenset] = None
    max_rss_kib: Optional[int] = None
    rollup_keys: Optional[tuple] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        keys = None
        if self.counters is not None:
            split = ROLLUP_SPLIT if self.kinds & (Need.SPLIT | Need.ROLLUP) else ()
            keys = tuple(sorted(self.counters.union(split, {"Rss", "Pss"})))
        object.__setattr__(self, "rollup_keys", keys)  # (derived from the fields, once)
        # each kind as a bool attribute (``needs.status``): the loader asks which it holds some ten
        # times a process, and an enum.Flag's ``in`` is a Python method call, an attribute one read
        bits = self.kinds.value
        for name, value in _KIND_ATTRIBUTES:
            object.__setattr__(self, name, bool(bits & value))

    def with_kinds(self, kinds):
        """These needs and ``kinds`` too."""
        return self if kinds in self.kinds else replace(self, kinds=self.kinds | kinds)


#: the kinds a Needs answers as plain bool attributes (needs.status, needs.mappings, ...)
_KIND_ATTRIBUTES = tuple((flag.name.lower(), flag.value) for flag in Need)


@dataclass(frozen=True, eq=False)
class Reading:
    """What the loader read of a source, once: processes, meminfo, the source and what went wrong."""

    source: object
    processes: tuple          # Process, in pid order
    meminfo: object           # parsers.meminfo.Meminfo
    unreadable: MappingProxyType  # {reason: ((pid, name), ...)} of processes we could not read
    pss_missing: bool         # some smaps had no Pss line (kernel < 2.6.25)
    skipped: tuple = ()       # ((pid, name, VmRSS KiB), ...) left out by --max-rss
    pools: object = None      # kernel_pools.KernelPools (zram, KSM), when asked for
    folded: object = None     # the view's sums (its fold's result), where the loader folded processes
    selected: bool = False    # -P, -U, --pid or -M left processes (mappings) out of what was read
    devices: object = None    # device_memory.DeviceMemory, when asked for
    pressure: object = None   # memory_pressure.MemoryPressure, when asked for
    clock: tuple = None       # (seconds since boot, clock ticks a second), when asked for (cpu)
    no_smaps: bool = False    # processes named and none had smaps or smaps_rollup: the kernel gives none

    @property
    def mem_total(self):
        return self.meminfo.kib.get("MemTotal")

    @property
    def swap_total(self):
        return self.meminfo.kib.get("SwapTotal")


@dataclass(frozen=True)
class Derived:
    """What a report worked out from a reading, beyond it: each None unless the view asked."""

    sizing: tuple = None          # (installed RAM, kernel image) sizing Figures, for -w
    exact: object = None          # smem.exact.ExactAccounting, under --exact
    shared_memory: object = None  # smem.shared_memory.SharedMemory, for --shm
    sharing: tuple = None         # (selected pids, exact.SharedWith), for --shared-with
    working_set: object = None    # smem.working_set.WorkingSet, under --wss: how it measured


@dataclass(frozen=True, eq=False)
class Snapshot:
    """What one report shows: a reading and what was derived from it, side by side."""

    reading: Reading
    derived: Derived = Derived()

    source = property(lambda self: self.reading.source)
    processes = property(lambda self: self.reading.processes)
    meminfo = property(lambda self: self.reading.meminfo)
    unreadable = property(lambda self: self.reading.unreadable)
    pss_missing = property(lambda self: self.reading.pss_missing)
    skipped = property(lambda self: self.reading.skipped)
    pools = property(lambda self: self.reading.pools)
    folded = property(lambda self: self.reading.folded)
    selected = property(lambda self: self.reading.selected)
    devices = property(lambda self: self.reading.devices)
    pressure = property(lambda self: self.reading.pressure)
    clock = property(lambda self: self.reading.clock)
    no_smaps = property(lambda self: self.reading.no_smaps)
    mem_total = property(lambda self: self.reading.mem_total)
    swap_total = property(lambda self: self.reading.swap_total)
    sizing = property(lambda self: self.derived.sizing)
    exact = property(lambda self: self.derived.exact)
    shared_memory = property(lambda self: self.derived.shared_memory)
    sharing = property(lambda self: self.derived.sharing)
    working_set = property(lambda self: self.derived.working_set)


#: The kernel's split of PSS in smaps_rollup (Linux 5.9+): anonymous, file, shmem.
ROLLUP_SPLIT = ("Pss_Anon", "Pss_File", "Pss_Shmem")


def rollup_keys(needs):
    """The smaps_rollup counters a report with ``needs`` keeps (None: every one)."""
    return None if needs is None else needs.rollup_keys
