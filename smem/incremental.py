"""Collections that re-read only the processes that changed: smem serve, watch mode, a recorder.

Between two collections most processes have not changed, and reading a
process's smaps_rollup is what a collection costs (the kernel walks its page
tables for it).  A :class:`Refresher` keeps the figures of the last collection
and each time reads, for every process, only what is cheap: /proc/PID/stat (the
start time, which with the pid names a process for good, so a reused pid is a
new process; the fault counters, the virtual size and the resident pages, which
move when the process's own memory does).  It re-reads the rollups of:

* the processes it has not seen (started, or a pid reused);
* the processes whose counters moved;
* the processes whose figure others may have moved.  A shared page's PSS is its
  size over the number of processes mapping it: when a process starts, exits, or
  changes how much of its memory is shared (its PSS less its USS), its sharers'
  PSS moves by as much in all, the other way: divided (:meth:`Refresher._spread`)
  among those mapping one of its objects (device and inode, /proc/PID/maps) and,
  for what a fork shares, its parent and the parent's children.  One is re-read,
  in the same collection, once what may have reached it passes :data:`TOLERANCE`
  of its PSS;
* the oldest figures, a few at every collection (as many as the time since the
  last one is a share of ``max_staleness``), so that the re-reads are spread out
  and no figure is older than ``max_staleness`` seconds.

Only this machine's processes, for a report of their sums (no per-mapping
figure, no -M, no view that folds mappings), are read so; anything else is read
whole every time.  A process left out of the report (-P, -U) is not read, so its
changes move no one: with a filter the PSS of processes sharing with others can
be up to ``max_staleness`` old.
"""

import copy
import math
import time

from .loading import load_reading
from .loading.gathered import make_reading
from .model import Need, rollup_keys
from .parsers import MAX_KIB
from .parsers.maps import parse_maps_objects
from .parsers.smaps import parse_smaps_kept
from .parsers.stat import parse_stat
from .selection import Selection

__all__ = ["Refresher", "DEFAULT_MAX_STALENESS", "TOLERANCE"]

#: seconds: no figure older than this (every process re-read at least so often)
DEFAULT_MAX_STALENESS = 60.0

#: what others may have moved a process's PSS by, as a share of it, before it is re-read: half
#: the 1% a collection's figures are held to, as the estimate divides a displacement evenly
#: among the sharers while one may take more (bench/incremental.py measures the error)
TOLERANCE = 0.005


class _Known:
    """What the last read of one process found, and what may have moved it since."""

    __slots__ = ("start", "moved", "ppid", "read_at", "process", "unreadable", "skipped", "keys",
                 "pss", "shared", "split", "base")

    def __init__(self, stat, read_at):
        self.start = stat.start_time
        self.moved = _movers(stat)
        self.ppid = stat.ppid
        self.read_at = read_at
        self.process = None     # the Process, where the report has it
        self.unreadable = None  # (reason, name)
        self.skipped = None     # (name, VmRSS KiB)
        self.keys = {}          # what it may share pages through: (device, inode) -> KiB mapped, a fork's kin -> None
        self.pss = 0
        self.shared = 0         # PSS less USS, KiB: what others' changes can move
        self.split = None       # (anonymous PSS, PSS of files and shmem), KiB, where the kernel splits it
        self.base = 0.0         # the sum of Refresher._moved over its keys when it was read


def _movers(stat):
    """What moves when a process's own memory does."""
    return stat.minflt, stat.majflt, stat.vsize, stat.rss_pages


def _amounts(process):
    """(PSS, PSS less USS, (anonymous PSS, file and shmem PSS) or None) in KiB; where no PSS is
    known, RSS and its shared part."""
    totals = process.totals
    private = (totals.get("Private_Clean") or 0) + (totals.get("Private_Dirty") or 0)
    pss = totals.get("Pss")
    if pss is None:
        pss = totals.get("Rss") or 0
    anon = totals.get("Pss_Anon")
    split = None if anon is None else (anon, (totals.get("Pss_File") or 0) + (totals.get("Pss_Shmem") or 0))
    return pss, max(pss - private, 0), split


def _with_split(needs):
    """``needs`` keeping the rollup's PSS split too (Linux 5.9+): what says whether a change
    went through anonymous memory (a fork's kin) or through files and shmem."""
    return needs.with_kinds(Need.ROLLUP)


def _with_rollup(process, rollup):
    """A copy of ``process`` (read from its rollup) with ``rollup`` instead."""
    fresh = copy.copy(process)
    fresh.rollup = rollup
    fresh._totals = None  # (Process.totals: the rollup, where no mapping was read)
    return fresh


def _with_stat(process, stat):
    """``process`` with ``stat`` (this collection's) where it was read with an older one."""
    if process.stat is None or stat is None or process.stat is stat:
        return process
    fresh = copy.copy(process)
    fresh.stat = stat
    return fresh


def _remapped(before, after):
    """Whether the objects a process maps may have changed in a way that moves its sharers:
    its file and shmem PSS changed (where the kernel splits PSS: an object mapped but not
    touched moves no one, and an anonymous region mapped or unmapped, what a process that
    allocates does, is no object), else its size."""
    if before.split is not None and after.split is not None:
        return before.split[1] != after.split[1]
    return before.moved[2] != after.moved[2]


def _caps(before, after):
    """How much of a displacement can have gone through anonymous memory and through objects."""
    if before is None or after is None:
        return None
    return abs(after[0] - before[0]), abs(after[1] - before[1])


class Refresher:
    """Reads processes as :func:`smem.loading.load_reading` does, re-reading only those that changed
    since the last call (see the module's docstring).  Its :meth:`load` takes load_reading's
    arguments, so ``app.read_snapshot(request, plan, load=refresher.load)`` is a collection."""

    def __init__(self, max_staleness=DEFAULT_MAX_STALENESS, tolerance=TOLERANCE, clock=time.monotonic):
        self.max_staleness = max_staleness
        self.tolerance = tolerance
        self.clock = clock
        self.reread = 0          # rollups the latest collection read
        self.reasons = {}        # of those, how many for each reason: new, moved, age, shared
        self._known = {}         # pid -> _Known
        self._sharers = {}       # key -> {pid}: who may share pages through it
        self._moved = {}         # key -> KiB each of its sharers may have been moved by, all along
        self._last_at = None
        self._due = 0.0          # processes owed a re-read for their age: the share of them the time is
        self._full_at = None     # when the latest collection that read everything ended
        self._pss_missing = False
        self._parsed = {}        # pid -> (its stat, parsed) at the last collection

    def oldest_age(self, now=None):
        """Seconds since the oldest figure of the latest collection was read."""
        now = self.clock() if now is None else now
        if self._known:
            return max(0.0, now - min(k.read_at for k in self._known.values()))
        return 0.0 if self._full_at is None else max(0.0, now - self._full_at)

    def load(self, source, selection=None, *, with_processes=True, needs=None, jobs=None, fold=None):
        """What load_reading gives for these arguments, from the figures kept and what changed."""
        if self.max_staleness <= 0 or not self._incremental(source, selection, with_processes, needs, fold):
            self._known.clear()
            self._sharers.clear()
            self._moved.clear()
            reading = load_reading(source, selection, with_processes=with_processes, needs=needs, jobs=jobs,
                                   fold=fold)
            self.reread = len(reading.processes)
            self.reasons = {"all": self.reread}
            self._full_at = self._last_at = self.clock()
            return reading
        selection = selection or Selection()
        now = self.clock()
        gap = now - self._last_at if self._last_at is not None else self.max_staleness
        self._last_at = now
        seen = self._stats(source, selection)
        events = []
        for pid in [pid for pid, known in self._known.items()
                    if pid not in seen or seen[pid].start_time != known.start]:
            events.append(self._forget(pid))  # exited, or its pid reused
        reasons = self.reasons = {"new": 0, "moved": 0, "age": 0, "shared": 0}
        first = set()
        for pid, stat in seen.items():
            reason = self._changed(pid, stat, now)
            if reason is not None:
                first.add(pid)
                reasons[reason] += 1
        oldest = self._oldest(seen, first, gap)
        reasons["age"] += len(oldest)
        first |= oldest
        self._spread(events)
        shared = self._past_tolerance(first)
        reasons["shared"] += len(shared)
        first |= shared
        meminfo, events = self._read(source, selection, needs, jobs, seen, first, now)
        self._spread(events)
        self._settle(first)  # (what they moved or were moved by is in what was read)
        again = self._past_tolerance(first)
        reasons["shared"] += len(again)
        if again:
            meminfo, _ = self._read(source, selection, needs, jobs, seen, again, now)
            self._settle(again)
        self.reread = len(first) + len(again)
        return self._reading(source, meminfo, needs, selection.selects, seen)

    @staticmethod
    def _incremental(source, selection, with_processes, needs, fold):
        return (with_processes and fold is None and source.local and needs is not None
                and not needs.mappings and needs.counters is not None
                and (selection is None or selection.mapping is None))

    def _stats(self, source, selection):
        """{pid: PidStat} of the processes (not kernel threads) there are now.  A process that
        has not run since the last collection has the same stat, byte for byte: parsed once."""
        seen, before, parsed = {}, self._parsed, {}
        for pid in source.pids():
            if not selection.wants_pid(pid):
                continue
            raw = source.read_optional(f"{pid}/stat")
            if not raw:
                continue
            known = before.get(pid)
            if known is not None and known[0] == raw:
                stat = known[1]
            else:
                try:
                    stat = parse_stat(raw)
                except ValueError:
                    continue
            parsed[pid] = raw, stat
            if not stat.is_kernel_thread:
                seen[pid] = stat
        self._parsed = parsed
        return seen

    def _changed(self, pid, stat, now):
        """Why ``pid`` is to be read ("new", "moved", "age": as old as max_staleness), or None."""
        known = self._known.get(pid)
        if known is None:
            return "new"
        if known.moved != _movers(stat):
            return "moved"
        return "age" if now - known.read_at >= self.max_staleness else None

    def _oldest(self, seen, chosen, gap):
        """The oldest figures, as many as ``gap`` is a share of max_staleness of them all (the
        fractions carried over to the next collection)."""
        self._due = min(self._due + len(seen) * gap / self.max_staleness, len(seen))
        count = math.floor(self._due)
        self._due -= count
        rest = [pid for pid in seen if pid not in chosen and pid in self._known]
        rest.sort(key=lambda pid: self._known[pid].read_at)
        return set(rest[:count])

    def _settle(self, pids):
        """Mark what others moved so far as in the figures of ``pids`` (just read)."""
        moved = self._moved
        for pid in pids:
            known = self._known.get(pid)
            if known is not None:
                known.base = sum(moved.get(key, 0.0) for key in known.keys)

    def _past_tolerance(self, exclude):
        """The processes (but ``exclude``) others may have moved by more than the tolerance."""
        tolerance, moved = self.tolerance, self._moved
        return {pid for pid, known in self._known.items()  # (what may have reached it since it was read)
                if pid not in exclude and known.process is not None
                and sum(moved.get(key, 0.0) for key in known.keys) - known.base > max(tolerance * known.pss, 1e-6)}

    def _spread(self, events):
        """Give each process that may share with an event's process its part of the displacement.

        The displacement is divided among what the process shares through: an object of
        ``size`` KiB that n processes map holds about size / (n + 1) of its PSS, a fork's kin
        (its parent, their children) may hold all of it.  Where the kernel splits PSS, what went
        through objects is at most the change of the file and shmem PSS, and what went through
        a fork's kin at most the change of the anonymous PSS; the estimates are scaled down
        together where they add up to more.  Each one's part is then divided among the others
        that share it: added to what that key moved each of its sharers by (the event's own
        process is read in the same collection, or gone)."""
        sharers, moved = self._sharers, self._moved
        for pid, displacement, keys, caps in events:
            if not displacement:
                continue
            through = {}
            held = [0.0, 0.0]  # through a fork's kin, through objects
            for key, size in keys.items():
                others = sharers.get(key, ())
                count = len(others) - (pid in others)
                if count > 0:
                    estimate = displacement if size is None else min(displacement, size / (count + 1))
                    through[key] = (estimate, count, size is not None)
                    held[size is not None] += estimate
            limits = (displacement, displacement) if caps is None else (min(displacement, caps[0]),
                                                                        min(displacement, caps[1]))
            scales = [min(1.0, limit / total) if total else 0.0 for limit, total in zip(limits, held)]
            for key, (estimate, count, of_object) in through.items():
                moved[key] = moved.get(key, 0.0) + estimate * scales[of_object] / count

    @staticmethod
    def _keys_of(pid, ppid, objects):
        """{what it may share pages through: KiB mapped of an object, None for a fork's kin}."""
        keys = dict(objects)
        keys[("children", ppid)] = keys[("children", pid)] = None
        return keys

    def _index(self, pid, known, add):
        for key in known.keys:
            if add:
                self._sharers.setdefault(key, set()).add(pid)
            else:
                group = self._sharers.get(key)
                if group is not None:
                    group.discard(pid)
                    if not group:
                        del self._sharers[key]
                        self._moved.pop(key, None)

    def _forget(self, pid):
        """Drop ``pid``'s figures: an event, (pid, what its exit displaces, who shared with it)."""
        known = self._known.pop(pid)
        self._index(pid, known, add=False)
        return pid, known.shared, known.keys, known.split

    def _read(self, source, selection, needs, jobs, seen, pids, now):
        """Read ``pids`` (load_reading, only those); (meminfo, the events of the processes read
        because their own memory moved)."""
        needs = _with_split(needs)
        loaded = self._rollups_again(source, needs, seen, pids)
        chosen = copy.copy(selection)
        chosen.pids = frozenset(pid for pid in pids if pid not in loaded)
        reading = load_reading(source, chosen, with_processes=bool(chosen.pids), needs=needs, jobs=jobs)
        self._pss_missing = self._pss_missing or reading.pss_missing
        loaded.update((p.pid, p) for p in reading.processes)
        unreadable = {pid: (reason, name) for reason, listed in reading.unreadable.items() for pid, name in listed}
        skipped = {pid: (name, rss) for pid, name, rss in reading.skipped}
        events = []
        for pid in pids:
            before = self._known.get(pid)
            stat = seen[pid]
            known = _Known(stat, now)
            known.process = loaded.get(pid)
            known.unreadable = unreadable.get(pid)
            known.skipped = skipped.get(pid)
            if known.process is not None:
                known.pss, known.shared, known.split = _amounts(known.process)
                if before is None or before.process is None or _remapped(before, known):
                    raw = source.read_optional(f"{pid}/maps")
                    known.keys = self._keys_of(pid, known.ppid, parse_maps_objects(raw) if raw else {})
                elif before.ppid != known.ppid:
                    known.keys = {**{k: v for k, v in before.keys.items() if v is not None},
                                  **self._keys_of(pid, known.ppid, {})}
                else:
                    known.keys = before.keys
            if before is not None:
                self._index(pid, before, add=False)
            self._index(pid, known, add=True)
            self._known[pid] = known
            if before is None:
                events.append((pid, known.shared, known.keys, known.split))
            elif before.moved != known.moved:
                events.append((pid, abs(known.shared - before.shared), {**before.keys, **known.keys},
                               _caps(before.split, known.split)))
        return reading.meminfo, events

    def _rollups_again(self, source, needs, seen, pids):
        """{pid: Process} of the processes of ``pids`` whose own memory did not move (re-read for
        their age, or what others moved), each its figure before with its smaps_rollup read
        again, all the report needs of it (its command line, owner and cgroup are as before);
        the others, and any whose rollup says more than its counters (gone, malformed), are read
        whole by load_reading."""
        if needs.status or needs.ksm or needs.max_rss_kib is not None or needs.mappings or needs.split:
            return {}
        keys = rollup_keys(needs)
        again = {}
        for pid in pids:
            known = self._known.get(pid)
            if (known is None or known.process is None or known.process.rollup is None
                    or known.moved != _movers(seen[pid])):
                continue
            raw = source.read_optional(f"{pid}/smaps_rollup")
            try:
                parsed = parse_smaps_kept(raw, keys)[0] if raw else None
            except ValueError:
                continue
            if not parsed or any(v is not None and v >= MAX_KIB for v in parsed[0].counters.values()):
                continue
            again[pid] = _with_rollup(known.process, parsed[0].counters)
        return again

    def _reading(self, source, meminfo, needs, selected, seen):
        """The Reading of every process known now, as load_reading would make it; each with the
        stat read at this collection, so its CPU time (and state, threads) is now's, not when its
        memory was last read."""
        known = sorted(self._known.items())
        unreadable = [(pid, *k.unreadable) for pid, k in known if k.unreadable is not None]
        processes = tuple(_with_stat(k.process, seen.get(pid)) for pid, k in known if k.process is not None)
        return make_reading(source, needs, processes, meminfo, unreadable, self._pss_missing,
                            tuple((pid, *k.skipped) for pid, k in known if k.skipped is not None), None, selected)
