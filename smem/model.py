"""The core model: processes with their mappings, and the system they ran on.

:func:`load_reading` reads everything a report needs from a source, once:
for each process its cmdline, stat (name, kernel-thread flag) and smaps, and
the system's meminfo.  Filters (``-P``, ``-U``, ``-M``) are applied while
loading so that filtered-out processes' smaps are never read.

Errors are mapped here, in one place: a process whose files vanish is
skipped silently; one whose smaps cannot be read is counted and summarised in
one warning; anything the user caused is an :class:`~smem.errors.SmemError`.
"""

import contextlib
import copy
import enum
import gc
import os
import re
import time
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Optional

from .aggregate import Sums
from .errors import ProcessGone, ProcessSkipped, ProcessUnreadable, SourceError, UsageError
from .parsers.cmdline import parse_cmdline
from .parsers.ksm import parse_ksm_value
from .parsers.meminfo import parse_meminfo
from .parsers.smaps import Mapping, parse_smaps, parse_smaps_kept, sum_smaps_kept
from .parsers.stat import parse_stat
from .parsers.status import parse_status, status_kib
from .sources.base import OWN_PID, STREAMED, VANISHING, NeedHeld

__all__ = ["Process", "Snapshot", "Selection", "Need", "Needs", "load_reading", "Reading", "Derived", "uss_of", "own_invocation", "ROLLUP_SPLIT",
           "rollup_keys"]



def uss_of(counters):
    """Unique set size: pages mapped by this process alone (Private_Clean + Private_Dirty)."""
    clean = counters.get("Private_Clean")
    dirty = counters.get("Private_Dirty")
    if clean is None and dirty is None:
        return None
    return (clean or 0) + (dirty or 0)


def _sum_kept(mappings):
    """The kept counters (plain dicts, a few keys: parse_smaps_kept) summed in one pass; a key
    no mapping has stays absent.  Summed lazily key by key (aggregate.Sums) the same cost 0.2 s
    of a 0.5 s report of a 1,500-process capture, and the report then summed them again."""
    totals = {}
    for mapping in mappings:
        for key, value in mapping.counters.items():
            before = totals.get(key)
            totals[key] = value if before is None else before if value is None else before + value
    return totals


class Process:
    """One process: identity, owner, and the memory data the report asked for.

    ``mappings`` is the list of mappings that passed the map filter, or None
    where only the kernel's rollup (smaps_rollup) was read; ``rollup`` holds
    those counters when read; ``status`` the parsed /proc/PID/status when read.
    """

    __slots__ = ("pid", "name", "cmdline", "uid", "user", "stat", "mappings", "rollup",
                 "status", "cgroup", "ksm_kib", "read_seconds", "_totals", "_mapped")

    def __init__(self, pid, name, cmdline, uid, user, stat, mappings=None):
        self.pid = pid
        self.name = name          # comm, from stat; "?" if unknown; None if stat was not read (Needs.stat)
        self.cmdline = cmdline    # arguments joined by spaces; "?" if unknown
        self.uid = uid            # None if unknown
        self.user = user          # user name, str(uid), or "?"
        self.stat = stat          # PidStat or None
        self.mappings = mappings
        self.rollup = None
        self.status = None
        self.cgroup = None        # memory cgroup path, when read
        self.ksm_kib = None       # pages KSM merged, from /proc/PID/ksm_merging_pages, when read
        self.read_seconds = None  # how long its smaps took to read (live sources)
        self._totals = None
        self._mapped = None       # whether it mapped anything, once its mappings are summed and let go

    def __reduce__(self):
        """Pickled as a flat tuple of its fields and its mappings as three flat lists (headers,
        names, counters): what a worker sends the parent (smem.collect).  Tuples and lists
        pickle in C, where copyreg's default for a slotted object, and a Mapping's own
        __reduce__, would be Python calls per process and per mapping."""
        mappings = self.mappings
        flat = None if mappings is None else ([m._header for m in mappings], [m.name for m in mappings],
                                              [m.counters for m in mappings])
        return _rebuilt_process, (tuple(getattr(self, name) for name in _PICKLED), flat)

    def let_go_of_mappings(self):
        """Drop the mappings once a view has folded them into its sums (the mapping view)."""
        if self.mappings is not None:
            self._mapped = bool(self.mappings)
            self.mappings = None
            self._totals = None  # (the sums over them)

    def keep_totals_only(self):
        """Sum the mappings into :attr:`totals` and let them go: what a report that shows
        no per-mapping figure keeps of a process read from smaps (a capture without
        smaps_rollup), so memory does not grow with every mapping of every process."""
        if self.mappings is None:
            return
        totals = self.totals
        self._totals = totals if isinstance(totals, dict) else {key: totals.get(key) for key in totals}
        self._mapped = bool(self.mappings)
        self.mappings = None

    @property
    def totals(self):
        """Every smaps counter summed over the mappings (KiB); absent keys stay absent.

        Without mappings, the kernel's own rollup of them.
        """
        if self._totals is None:
            if self.mappings is None:
                self._totals = self.rollup if self.rollup is not None else {}
            elif self.mappings and isinstance(self.mappings[0].counters, dict):
                self._totals = _sum_kept(self.mappings)
            else:
                self._totals = Sums([m.counters for m in self.mappings])
        return self._totals

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
        return len(self.mappings) if self.mappings is not None else None

    @property
    def command(self):
        """The command line as shown: the cmdline, or "[name]" where it is empty."""
        return self.cmdline if self.cmdline else f"[{self.name}]"

    def __repr__(self):
        return f"Process({self.pid}, {self.name!r})"


#: What pickling a Process keeps: every field but the mappings (sent flat beside them).
_PICKLED = tuple(name for name in Process.__slots__ if name != "mappings")


def _rebuilt_process(fields, flat):
    """The Process :meth:`Process.__reduce__` gave ``fields`` and ``flat`` mappings of."""
    process = Process.__new__(Process)
    for name, value in zip(_PICKLED, fields):
        setattr(process, name, value)
    process.mappings = None if flat is None else list(map(Mapping, *flat))
    return process


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

    def with_kinds(self, kinds):
        """These needs and ``kinds`` too."""
        return self if kinds in self.kinds else replace(self, kinds=self.kinds | kinds)

    mappings = property(lambda self: Need.MAPPINGS in self.kinds)
    rollup = property(lambda self: Need.ROLLUP in self.kinds)
    status = property(lambda self: Need.STATUS in self.kinds)
    cgroup = property(lambda self: Need.CGROUP in self.kinds)
    pools = property(lambda self: Need.POOLS in self.kinds)
    ksm = property(lambda self: Need.KSM in self.kinds)
    stat = property(lambda self: Need.STAT in self.kinds)
    exact = property(lambda self: Need.EXACT in self.kinds)
    split = property(lambda self: Need.SPLIT in self.kinds)


#: The time one match of a filter may take (-P, -U, -M), seconds: a pattern that
#: backtracks without end ('(a+)+$' against a long command line) is stopped and refused
#: rather than left to run for ever (smem 1.5 hangs).  Per match, not for all of them: a
#: sane -M over a million mappings takes longer in all, each match microseconds.
MATCH_SECONDS = 1.0


class _Pattern:
    """A compiled filter each of whose matches is bounded in time.

    The ``regex`` module (re's syntax, plus a ``timeout`` it checks while it
    backtracks) does the matching; without it, ``re``, unbounded.
    """

    __slots__ = ("pattern", "option", "_compiled", "_timed")

    def __init__(self, pattern, option):
        self.pattern = pattern
        self.option = option
        try:
            import regex
        except ImportError:  # pragma: no cover - a dependency; re works, unbounded
            regex = None
        errors = (re.error, OverflowError, RecursionError, ValueError, TypeError, MemoryError)
        if regex is not None:
            errors += (regex.error,)
        try:
            re.compile(pattern)  # re's syntax first: regex builds a{99999999} out in memory
            _check_repeats(pattern, option)
            self._compiled = (regex or re).compile(pattern)
        except errors as e:
            why = str(e) or type(e).__name__
            if isinstance(e, RecursionError):
                why = "nested too deeply"
            raise UsageError(f"invalid regular expression for {option} {_shown(pattern)}: {why}") from None
        self._timed = regex is not None

    def search(self, text):
        if not self._timed:
            return self._compiled.search(text)
        try:
            return self._compiled.search(text, timeout=MATCH_SECONDS)
        except TimeoutError:
            raise UsageError(f"{self.option} {_shown(self.pattern)}: matching took more than "
                             f"{MATCH_SECONDS:g} s (a pattern that backtracks without end?): simplify it") from None


#: The largest repeat count a filter may ask for ({n} or {m,n}): regex unrolls counted repeats
#: when it compiles them, and a{99999999} takes gigabytes.
MAX_REPEAT = 10000


def _check_repeats(pattern, option):
    """UsageError if ``pattern`` counts a repeat past MAX_REPEAT (an unbounded + or * is fine)."""
    from re import _parser as parser  # (sre_parse before Python 3.11)
    unbounded = parser.MAXREPEAT
    todo = [parser.parse(pattern)]
    while todo:
        for op, value in todo.pop():
            if op in (parser.MAX_REPEAT, parser.MIN_REPEAT, getattr(parser, "POSSESSIVE_REPEAT", None)):
                low, high, sub = value
                if max(low, 0 if high == unbounded else high) > MAX_REPEAT:
                    raise UsageError(f"invalid regular expression for {option} {_shown(pattern)}: "
                                     f"a repeat count over {MAX_REPEAT}")
                todo.append(sub)
            elif op == parser.SUBPATTERN:
                todo.append(value[-1])
            elif op == parser.BRANCH:
                todo.extend(value[1])
            elif op in (parser.ASSERT, parser.ASSERT_NOT):
                todo.append(value[1])


def _shown(pattern):
    return repr(pattern if len(pattern) <= 60 else pattern[:57] + "...")


class Selection:
    """The -P / -U / -M filters, compiled once (a bad regex is a usage error).

    Each filter's matching is bounded in time (MATCH_SECONDS): a runaway pattern is a
    usage error too, never a hang.
    """

    def __init__(self, process=None, user=None, mapping=None, pids=None):
        self.process = self._compile(process, "-P")
        self.user = self._compile(user, "-U")
        self.mapping = self._compile(mapping, "-M")
        self.pids = frozenset(pids) if pids else None  # --pid: only these processes

    @property
    def selects(self):
        """Whether --pid, -P or -U leaves processes out (-M selects mappings, not processes)."""
        return self.process is not None or self.user is not None or self.pids is not None

    def wants_pid(self, pid):
        """--pid: the process is one of those named (all are, without --pid)."""
        return self.pids is None or pid in self.pids

    def wants_process(self, name, cmdline):
        """-P: the regex is found in the name (from stat) or the command line."""
        return self.process is None or bool(self.process.search(name) or self.process.search(cmdline))

    def wants_user(self, user):
        """-U: the regex is found in the user name."""
        return self.user is None or bool(self.user.search(user))

    def wants(self, name, cmdline, user, pid=None):
        """Whether --pid, -P and -U all select a process."""
        return (pid is None or self.wants_pid(pid)) and self.wants_process(name, cmdline) and self.wants_user(user)

    @staticmethod
    def _compile(pattern, option):
        if pattern is None:
            return None
        return _Pattern(pattern, option)


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
    folded: object = None     # the view's sums, where the loader folded processes into them
    selected: bool = False    # -P, -U or --pid left processes out of what was read

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
    mem_total = property(lambda self: self.reading.mem_total)
    swap_total = property(lambda self: self.reading.swap_total)
    sizing = property(lambda self: self.derived.sizing)
    exact = property(lambda self: self.derived.exact)
    shared_memory = property(lambda self: self.derived.shared_memory)
    sharing = property(lambda self: self.derived.sharing)


def read_meminfo(source):
    try:
        meminfo = parse_meminfo(source.read("meminfo"))
    except FileNotFoundError:
        raise SourceError(f"{source.description}: no meminfo") from None
    except PermissionError:
        raise SourceError(f"{source.description}: meminfo is not readable") from None
    if "MemTotal" not in meminfo.kib:
        raise SourceError(f"{source.description}: meminfo holds no MemTotal (not a /proc/meminfo)")
    return meminfo


def _user_name(source, uid, cache):
    if uid is None:
        return "?"
    name = cache.get(uid)
    if name is None:
        name = cache[uid] = source.user_name(uid) or str(uid)
    return name


def load_reading(source, selection=None, *, with_processes=True, needs=None, jobs=None, fold=None):
    """The :class:`Reading` of every process of ``source`` that passes ``selection``.

    With ``with_processes=False`` only the system files are read (the -w view).
    Kernel threads and zombies (empty cmdline, and stat says so) are left out
    without reading their smaps; a process whose smaps is empty is kept with
    no mappings (views drop it).  ``jobs``: how many processes read
    (smem.collect: None decides by the number of pids and the CPUs, 1 is serial).
    ``fold``: the view's accumulator (``add(process)``), given each process as it is
    read, after which the process's mappings are let go (the mapping view sums them by
    name): memory then holds the sums, not every mapping of every process.  A source
    that streams (an archive read in one pass) is read so, each process as it comes.
    """
    selection = selection or Selection()
    needs = needs or Needs()
    if selection.mapping is not None:
        needs = needs.with_kinds(Need.MAPPINGS)  # -M filters mappings: every process's are read
    if source.has(STREAMED):
        try:
            return _load_streamed(source, selection, needs, fold, with_processes, jobs)
        except NeedHeld:  # out of order, or only tarfile reads it: read it whole, then as any source
            pass
        if fold is not None:  # (outside the handler, whose traceback holds what the stream read)
            fold.clear()
        source.hold()
    meminfo = read_meminfo(source)
    own_pid = own_invocation(source, selection)
    names = {}
    pids = [pid for pid in source.pids() if selection.wants_pid(pid)] if with_processes else []

    def one(pid):
        try:
            return _load_memory(source, pid, selection, own_pid, names, needs)
        except ProcessGone:
            return None
        except (ProcessUnreadable, ProcessSkipped) as e:
            return e

    # in worker processes, not threads: parsing holds the GIL, and 2 and 4 threads were
    # measured slower than one (docs/benchmarks.md)
    gathered = _Gathered(fold, needs)
    with _collector_paused():
        from .collect import each_result, workers_for
        for result in each_result(pids, one, workers_for(jobs, len(pids), needs.counters is None)):
            gathered.add(result)
    return gathered.reading(source, meminfo, selection.selects)


class _Gathered:
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

    def add(self, result):
        if result is None:
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
            process.let_go_of_mappings()
        elif self.totals_only:
            process.keep_totals_only()
        self.processes.append(process)

    def reading(self, source, meminfo, selected):
        processes = tuple(sorted(self.processes, key=lambda p: p.pid))
        unreadable = {}
        for pid, reason, name in sorted(self.unreadable, key=lambda u: u[0]):
            unreadable.setdefault(reason, []).append((pid, name))
        pools = None
        if self.needs.pools:
            from .kernel_pools import read_kernel_pools
            pools = read_kernel_pools(source, (p.cgroup for p in processes if p.cgroup))
        return Reading(source, processes, meminfo, MappingProxyType({r: tuple(u) for r, u in unreadable.items()}),
                       self.pss_missing, tuple(sorted(self.skipped, key=lambda s: s[0])), pools, self.fold,
                       selected)


def _load_streamed(source, selection, needs, fold, with_processes, jobs):
    """load_reading of a source read in one pass: each process as its files arrive.

    The -U filter needs the user's name, which a capture may give only at its end
    (its passwd member): a process whose name is not known yet when it arrives is read
    and kept aside (folded only once the name is known), the one case where what is
    held grows with the capture (-U on a capture whose directories name no users).

    With workers (:func:`_streamed_workers`), each walks the archive too, from its start
    (``source.replayed()``), and loads its share of the processes (every n-th): the stream is
    one (a gzip stream cannot be split), but the processes' parsing is shared.
    """
    gathered = _Gathered(fold, needs)
    pending = []  # (uid, result) whose -U verdict waits for the user's name
    unfiltered = copy.copy(selection)
    unfiltered.user = None
    none = frozenset()

    def shares(mine, n):
        """(None, result) of each process in the shares ``mine`` of n (the processes whose
        position in the archive is k modulo n, for k in mine), or (uid, result) where the -U
        verdict waits for the user's name; ``source`` itself walked for share 0."""
        walked = source if 0 in mine else source.replayed()
        for position, (pid, files) in enumerate(walked.each_process()):
            if position % n not in mine or not with_processes or not selection.wants_pid(pid):
                continue
            try:
                process = _load_process(files, pid, unfiltered, none, {}, needs.stat)
            except ProcessGone:
                continue
            if process is None:
                continue
            decided = selection.user is None or process.uid is None or walked.knows_user(process.uid)
            if selection.user is not None and decided and not selection.wants_user(process.user):
                continue
            try:
                result = _load_counters(files, process, selection, needs)
            except ProcessGone:
                continue
            except (ProcessUnreadable, ProcessSkipped) as e:
                if isinstance(e, ProcessUnreadable):
                    e.name = _name_of(files, process)
                result = e
            yield (None if decided else process.uid), result

    with _collector_paused():
        from .collect import each_of_shares
        workers = _streamed_workers(source, jobs, needs) if with_processes else 1
        for waiting_for, result in each_of_shares(shares, workers):
            if waiting_for is None:
                gathered.add(result)
            else:
                pending.append((waiting_for, result))
    meminfo = read_meminfo(source)
    names = {}
    for uid, result in pending:  # the whole capture read: every user name known
        if selection.wants_user(_user_name(source, uid, names)):
            gathered.add(result)
    for process in gathered.processes:
        process.user = _user_name(source, process.uid, names)
    return gathered.reading(source, meminfo, selection.selects)


#: Walkers of a streamed archive at most: each decompresses all of it (about 200 of the 246 ms
#: of a C smemcap capture of 1,500 processes), so only the parsing is shared; a third would
#: save little wall time for another walk's CPU.
MAX_WALKERS = 2


def _streamed_workers(source, jobs, needs):
    """Walkers of a streamed archive: as collect.workers_for decides for the processes its size
    suggests, at most MAX_WALKERS, and one where the report keeps each process's mappings (-m
    on a capture without rollups: sending them back costs what parsing them saved, measured)."""
    from .collect import workers_for
    if not source.replayable or needs.mappings:
        return 1
    return min(MAX_WALKERS, workers_for(jobs, source.processes_suggested(), needs.counters is None))


@contextlib.contextmanager
def _collector_paused():
    """Pause the cyclic garbage collector while processes are read.

    Loading allocates an object or two per mapping (30,000 on a busy desktop) and
    none of them form cycles, but every 700 allocations the collector walks the
    young objects and, now and then, the whole growing heap: 3-4% of a report's time.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def own_invocation(source, selection):
    """Pids whose command line holds our -P pattern only because they run us.

    smem itself, and the wrappers that started it with the option in their own
    command line (``sh -c 'smem -P x'``, ``timeout 5 smem -P x``): the
    ancestors whose command line holds "-P x" (or --processfilter) as typed.
    An interactive shell named like the pattern (``bash`` for ``-P bash``) is
    not one of them.
    """
    if not source.has(OWN_PID) or selection.process is None:
        return frozenset()
    mine = {os.getpid()}
    option = re.compile(r"(?:-P\s*|--processfilter[=\s])" + re.escape(selection.process.pattern))
    pid = os.getppid()
    while pid > 1 and pid not in mine:
        cmdline = source.read_optional(f"{pid}/cmdline")
        stat = source.read_optional(f"{pid}/stat")
        if cmdline is None or stat is None:
            break
        if option.search(parse_cmdline(cmdline)):
            mine.add(pid)
        try:
            pid = parse_stat(stat).ppid
        except ValueError:
            break
    return frozenset(mine)


#: A process whose smaps took longer than this to read is named in a warning (app.load_warnings):
#: the kernel walks its page tables to build smaps and the process stalls meanwhile.
SLOW_READ_SECONDS = 1.0

#: No machine has 2**64 bytes: a counter at or past this many KiB is a damaged or hostile file.
MAX_KIB = 1 << 54

#: What is checked against MAX_KIB where the report keeps every counter.
_CHECKED = ("Size", "Rss", "Pss", "Swap", "Private_Clean", "Private_Dirty")

#: The kernel's split of PSS in smaps_rollup (Linux 5.9+): anonymous, file, shmem.
ROLLUP_SPLIT = ("Pss_Anon", "Pss_File", "Pss_Shmem")


def _load_memory(source, pid, selection, own_pid, names, needs):
    """(Process, whether its smaps had Pss) or None if it is not to be reported."""
    process = _load_process(source, pid, selection, own_pid, names, needs.stat)
    if process is None:
        return None
    try:
        return _load_counters(source, process, selection, needs)
    except ProcessUnreadable as e:
        e.name = _name_of(source, process)  # so the warning can say which
        raise


def _load_counters(source, process, selection, needs):
    pid = process.pid
    status = None
    if needs.max_rss_kib is not None or needs.status:
        raw = source.read_optional(f"{pid}/status")
        status = parse_status(raw) if raw else None
        rss = status_kib(status, "VmRSS") if status is not None else None
        if needs.max_rss_kib is not None and rss is not None and rss > needs.max_rss_kib:
            raise ProcessSkipped(pid, _name_of(source, process), rss)
    started = time.monotonic()
    had_pss = True
    rollup_totals = not needs.mappings and source.prefer_rollup
    if needs.rollup or rollup_totals:
        raw = source.read_optional(f"{pid}/smaps_rollup")
        if needs.counters is not None:
            # only what the report reads, as a plain dict, the text let go; a garbled line among
            # them is found here
            try:
                parsed = parse_smaps_kept(raw, rollup_keys(needs))[0] if raw else []
            except ValueError:
                try:
                    parse_smaps(raw)
                except ValueError:  # no mapping in it: smaps says what it holds
                    parsed = []
                else:
                    raise ProcessUnreadable(pid, "malformed smaps_rollup") from None
        else:
            try:
                parsed = parse_smaps(raw) if raw else []
            except ValueError:
                parsed = []
        process.rollup = parsed[0].counters if parsed else None
    if rollup_totals and process.rollup is not None and needs.split and "Pss_Anon" not in process.rollup:
        rollup_totals = False  # a kernel before 5.9: the split is estimated per mapping
    if not rollup_totals or process.rollup is None:
        try:
            raw = source.read_process(pid, "smaps")
            search = selection.mapping.search if selection.mapping is not None else None
            if needs.counters is not None and not needs.mappings and not needs.split and search is None:
                # the report shows the process's sums only: no mapping is made (a capture by C
                # smemcap, a kernel before 4.14); without PSS it sorts by RSS (report.make_table)
                totals, had_pss, count = sum_smaps_kept(raw, needs.counters, needs.counters | {"Rss"})
                process._totals, process._mapped, mappings = totals, count > 0, None
            elif needs.counters is not None:
                mappings, had_pss = parse_smaps_kept(raw, needs.counters, needs.counters | {"Rss"}, search)
            else:
                mappings = parse_smaps(raw)
                if mappings and "Pss" not in mappings[0].counters:
                    had_pss = False
                if search is not None:
                    mappings = [m for m in mappings if search(m.name)]
        except ValueError:
            raise ProcessUnreadable(pid, "malformed smaps") from None
        process.mappings = mappings
    if source.local:
        process.read_seconds = time.monotonic() - started
        if process.read_seconds > SLOW_READ_SECONDS:
            _name_of(source, process)  # (the warning names it)
    totals = process.totals  # (the sums the report reads anyway: computed once, here)
    for key in needs.counters if needs.counters is not None else _CHECKED:
        value = totals.get(key)
        if value is not None and value >= MAX_KIB:
            raise ProcessUnreadable(pid, "malformed smaps: a figure no machine has")
    if needs.status:
        process.status = status
    if needs.ksm and totals.get("KSM") is None:
        process.ksm_kib = _ksm_merging_kib(source, pid)
    if needs.cgroup:
        from .parsers.cgroup import parse_cgroup  # (its patterns compiled for the cgroup view only)
        raw = source.read_optional(f"{pid}/cgroup")
        process.cgroup = parse_cgroup(raw) if raw else None
    return process, had_pss


def rollup_keys(needs):
    """The smaps_rollup counters a report with ``needs`` keeps (None: every one)."""
    return None if needs is None else needs.rollup_keys


def _ksm_merging_kib(source, pid):
    """/proc/PID/ksm_merging_pages in KiB (Linux 5.19+), or None (absent, or no page size known)."""
    raw = source.read_optional(f"{pid}/ksm_merging_pages")
    if raw is None:
        return None
    try:
        pages = parse_ksm_value(raw)
    except ValueError:
        return None
    from .kernel_pools import kib_of_pages
    return kib_of_pages(pages, source.machine().page_size)


def _load_process(source, pid, selection, own_pid, names, with_stat=True):
    """Identity and owner of ``pid``, or None if it is not to be reported.

    ``with_stat`` False (Needs.stat): stat is read only where it is needed anyway (an empty or
    missing cmdline, -P); the process's ``name`` and ``stat`` are then None.
    """
    raw_cmdline = source.read_optional(f"{pid}/cmdline")
    cmdline = parse_cmdline(raw_cmdline) if raw_cmdline is not None else "?"
    if with_stat or raw_cmdline is None or cmdline == "" or selection.process is not None:
        raw_stat = source.read_optional(f"{pid}/stat")
        with_stat = True
    else:
        raw_stat = None
    if raw_cmdline is None and raw_stat is None and source.has(VANISHING):
        raise ProcessGone(pid)
    stat = None
    if raw_stat:
        try:
            stat = parse_stat(raw_stat)
        except ValueError:
            stat = None
    if cmdline == "":
        # Kernel threads and zombies have no cmdline and no memory of their own.
        if stat is None or stat.is_kernel_thread or stat.is_zombie:
            return None
    name = stat.comm if stat is not None else "?" if with_stat else None
    if pid in own_pid:
        return None  # never match our own command line
    if not selection.wants_process(name, cmdline):
        return None  # before the owner lookup: most processes stop here
    uid = source.owner(pid)
    user = _user_name(source, uid, names)
    if not selection.wants_user(user):
        return None
    return Process(pid, name, cmdline, uid, user, stat)


def _name_of(source, process):
    """The process's name for a warning, reading stat now if the report did not (Needs.stat)."""
    if process.name is None:
        raw = source.read_optional(f"{process.pid}/stat")
        try:
            process.name = parse_stat(raw).comm if raw else "?"
        except ValueError:
            process.name = "?"
    return process.name
