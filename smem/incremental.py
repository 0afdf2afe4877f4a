"""Collections that re-read only the processes that changed: smem serve, watch mode, a recorder.

Between two collections most processes have not changed, and reading a process's smaps_rollup
is what a collection costs (the kernel walks its page tables for it).  A :class:`Refresher` keeps
the figures of the last collection and each time reads, for every process, only what is cheap:
/proc/PID/stat (the start time, which with the pid names a process for good, so a reused pid is
a new process; the fault counters, the virtual size and the resident pages, which move when the
process's own memory does).  It re-reads the rollups of:

* the processes it has not seen (started, or a pid reused);
* the processes whose counters moved, but those whose every fault since their last read made
  a page of their own, whose figures the kernel's counters give (smem.private_growth), and at
  every collection those whose first thread exited while others run on (ps says "Zl"), whose
  stat says no size whatever their threads do;
* the processes whose figure others may have moved.  A shared page's PSS is its size over the
  number of processes mapping it: when a process starts, exits, or changes how much of its
  memory is shared (its PSS less its USS), its sharers' PSS moves by as much in all, the other
  way: divided (smem.sharers.Sharers) among those mapping one of its objects (device and inode,
  /proc/PID/maps) and, for what a fork shares, its parent and the parent's children.  One is
  re-read, in the same collection, once what may have reached it passes :data:`TOLERANCE` of
  its PSS;
* the processes whose pages KSM merged or unmerged while they need not run (smem.ksm_changes);
* the oldest figures, a few at every collection (as many as the time since the last one is a
  share of ``max_staleness``, less what collections take), so that the re-reads are spread out
  and no figure is older than ``max_staleness`` seconds.

A process read before that runs the same program (its name in stat unchanged: no exec) is
re-read for what moves (its rollup, its command line where the report shows it or -P matches
it, its cgroup; its device fds where its own memory moved), keeping, where the command line is
not shown, the one first read; the rest, and one whose owner changed (setuid), are read whole.

Only this machine's processes, for a report of their sums (no per-mapping figure, no -M, no
view that folds mappings), are read so; anything else is read whole every time. A process
left out of the report (-P, -U) is not read, so its changes move no one: with a filter the
PSS of processes sharing with others can be up to ``max_staleness`` old.
"""

import collections
import functools
import math
import os
import time
from dataclasses import replace

from .known_figures import Known, amounts, movers, remapped
from .ksm_changes import KsmChanges
from .loading import load_reading
from .loading.gathered import make_reading
from .loading.process import kernel_gives_no_smaps, read_meminfo
from .model import Need, rollup_keys
from .parsers import MAX_KIB
from .parsers.maps import parse_maps_objects
from .parsers.smaps import parse_smaps_kept
from .parsers.statm import parse_statm
from .private_growth import BASELINE_KEYS, CounterTrust, Payoff, agrees, baseline_of, estimable, large_folios, \
    grown as grown_counters
from .selection import Selection
from .sharers import Sharers, caps, sharing_keys
from .sources.folio_stats import mthp_counts
from .sources.held_files import MovingFiles
from .stat_changes import StatChanges

__all__ = ["Refresher", "DEFAULT_MAX_STALENESS", "TOLERANCE"]

#: seconds: no figure older than this (every process re-read at least so often)
DEFAULT_MAX_STALENESS = 60.0

#: what others may have moved a process's PSS by, as a share of it, before it is re-read: half
#: the 1% a collection's figures are held to, as the estimate divides a displacement evenly
#: among the sharers while one may take more (bench/incremental.py measures the error)
TOLERANCE = 0.005

#: what a reading has of the machine beside its processes: read once, for the collection's reading
_MACHINE_KINDS = Need.POOLS | Need.PRESSURE | Need.UPTIME


def _parse_cgroup(raw):
    from .parsers.cgroup import parse_cgroup  # (its patterns compiled for the cgroup view only)
    return parse_cgroup(raw)


class Refresher:
    """Reads processes as :func:`smem.loading.load_reading` does, re-reading only those that changed
    since the last call (see the module's docstring).  Its :meth:`load` takes load_reading's
    arguments, so ``app.read_snapshot(request, plan, load=refresher.load)`` is a collection."""

    def __init__(self, max_staleness=DEFAULT_MAX_STALENESS, tolerance=TOLERANCE, clock=time.monotonic,
                 trust_after=CounterTrust.NEEDED):
        self.max_staleness = max_staleness
        self.tolerance = tolerance
        self.clock = clock
        self.reread = 0          # rollups the latest collection read
        self.reasons = {}        # of those, how many for each reason: new, moved, age, shared
        self.counted = 0         # processes the latest collection gave figures from their counters
        self._known = {}         # pid -> Known
        self._aged = {}          # pid -> None, the oldest figure first (in the order they were read)
        self._limits = {}        # pid -> its Known.limit, for Sharers.drifted
        self._sharers = Sharers()
        self._last_at = None
        self._due = 0.0          # processes owed a re-read for their age: the share of them the time is
        self._took = 0.0         # the longest of the latest collections: a figure that old less is re-read
        self._durations = collections.deque(maxlen=8)  # (one longer than the last must not overshoot)
        self._full_at = None     # when the latest collection that read everything ended
        self._pss_missing = False
        self._stats = StatChanges()
        # parse_cgroup of the bytes of /proc/PID/cgroup: once for all the processes in one cgroup
        self._cgroup = functools.lru_cache(maxsize=4096)(_parse_cgroup)
        self._leaderless = set()  # pids whose first thread exited (ps: Zl): their stat has no size
        self._payoff = Payoff(2 * max(max_staleness, 1.0))  # (whether they are read: smem.private_growth)
        self._counting = True  # whether this collection reads them
        self._reads = self._tries = 0  # statm reads of this collection; of them, tries of moved processes
        self._large = None  # smem.private_growth.large_folios() at this collection's start
        self._trust = CounterTrust(trust_after)  # whether statm's counters agree with the walks (smem.private_growth)
        self._page_kib = os.sysconf("SC_PAGE_SIZE") // 1024  # (this machine's: the source is local)
        self._files = MovingFiles()  # the rollups and statms of the processes that move, held open
        self._ksm = KsmChanges()  # what KSM merged since the last collection, in whose pages

    def oldest_age(self, now=None):
        """Seconds since the oldest figure of the latest collection was read."""
        now = self.clock() if now is None else now
        if self._known:
            return max(0.0, now - min(k.read_at for k in self._known.values()))
        return 0.0 if self._full_at is None else max(0.0, now - self._full_at)

    def load(self, source, selection=None, *, with_processes=True, needs=None, jobs=None, fold=None):
        """What load_reading gives for these arguments, from the figures kept and what changed."""
        if self.max_staleness <= 0 or not self._incremental(source, selection, with_processes, needs, fold):
            for kept in (self._known, self._aged, self._limits, self._sharers, self._ksm):
                kept.clear()
            self._files.close()
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
        seen, touched = self._stats.read(source, selection, fresh=not self._known)
        known = self._known
        # exited, or its pid reused (a new process's stat is one that changed)
        reused = [pid for pid in (seen if touched is None else touched)
                  if pid in known and pid in seen and seen[pid].start_time != known[pid].start]
        events = [self._forget(pid) for pid in sorted(known.keys() - seen.keys() | set(reused))]
        reasons = self.reasons = {"new": 0, "moved": 0, "age": 0, "shared": 0, "ksm": 0}
        first, moved, forked = set(), [], set()
        # (a process whose stat did not change has the counters it was last read with)
        for pid, stat in seen.items() if touched is None else ((p, seen[p]) for p in touched if p in seen):
            self._leaderless.add(pid) if stat.leader_exited else self._leaderless.discard(pid)
            reason = self._changed(pid, stat)
            if reason is not None:
                first.add(pid)
                reasons[reason] += 1
                moved.append(pid) if reason == "moved" else forked.add(stat.ppid)
        self._leaderless.intersection_update(seen)
        self._files.collection(source.proc if self._stats.holding else None, self._stats.listed, set(moved))
        self._counting, self._reads, self._tries = self._payoff.reading(now), 0, 0
        self._large = large_folios(self._stats.vmstat, mthp_counts()) if self._counting else None
        # (a process with a new child shares its pages with it now: walked)
        grown = self._grow(source, selection, needs, seen, moved, forked | self._leaderless, now)
        reasons["moved"] -= len(grown)
        first -= grown
        reasons["moved"] += len(self._leaderless - first)
        first |= self._leaderless
        oldest = self._oldest(seen, first | grown, gap, now)
        first |= oldest
        self._ksm.ran(seen.keys() if touched is None else touched | self._stats.ran)  # (a region given: no fault, no tick)
        merged = self._ksm.moved(source, seen, first, self._limits, self._page_kib)
        reasons["age"], reasons["ksm"] = len(oldest), len(merged)
        first |= merged
        sharers = self._sharers
        sharers.spread(events)
        shared = sharers.drifted(self._limits, first)
        reasons["shared"] += len(shared)
        first |= shared
        self.counted = len(grown - first)  # (a figure its sharers may have moved is walked instead)
        meminfo, events = self._read(source, selection, needs, jobs, seen, first, now)
        sharers.spread(events)
        sharers.settle(first)  # (what they moved or were moved by is in what was read)
        again = sharers.drifted(self._limits, first)
        reasons["shared"] += len(again)
        if again:
            meminfo, _ = self._read(source, selection, needs, jobs, seen, again, now)
            sharers.settle(again)
        self.reread = len(first) + len(again)
        self._ksm.read(first | again)
        self._payoff.collected(self._reads, self._tries, self.counted, now)
        reading = self._reading(source, meminfo, needs, selection.selects, seen)
        self._durations.append(max(self.clock() - now, 0.0))
        self._took = min(max(self._durations), self.max_staleness)
        self._stats.ended()
        return reading

    @staticmethod
    def _incremental(source, selection, with_processes, needs, fold):
        return (with_processes and fold is None and source.local and needs is not None
                and not needs.mappings and needs.counters is not None
                and (selection is None or selection.mapping is None))

    def _changed(self, pid, stat):
        """Why ``pid`` is to be read ("new", "moved"), or None."""
        known = self._known.get(pid)
        if known is None:
            return "new"
        return "moved" if known.moved != movers(stat) else None

    def _oldest(self, seen, chosen, gap, now):
        """The oldest figures of those not ``chosen``: as many as ``gap`` is a share of the time a
        figure may wait (max_staleness less what the latest collections took: a figure kept is
        served when the collection ends), the fractions carried over, and every one older.  Those
        read for their own changes are left out of the count (they are read anyway), those the
        age forces counted in it: the re-reads stay even, not a burst a minute after the first
        read, nor waves of figures read together after a slow collection."""
        known = self._known  # (every process seen and not chosen is known: one not known is new)
        rest = len(known) - len(known.keys() & chosen)
        self._due = min(self._due + rest * gap / max(self.max_staleness - self._took, gap, 1e-9), rest)
        count = max(math.floor(self._due), 0)
        late = now - self.max_staleness + self._took
        oldest = []
        for pid in self._aged:  # (the oldest first: no sort of every process at each collection)
            if pid in chosen:
                continue
            if len(oldest) >= count and known[pid].read_at > late:
                break  # (as old as max_staleness: read whatever is due)
            oldest.append(pid)
        self._due -= len(oldest)
        return set(oldest)

    def _forget(self, pid):
        """Drop ``pid``'s figures: an event, (pid, what its exit displaces, who shared with it)."""
        known = self._known.pop(pid)
        del self._aged[pid]
        self._limits.pop(pid, None)
        self._files.forget(pid)
        self._ksm.forget(pid)
        return pid, known.shared, self._sharers.remove(pid), known.split

    def _read(self, source, selection, needs, jobs, seen, pids, now):
        """Read ``pids`` (load_reading, only those); (meminfo, the events of the processes read
        because their own memory moved)."""
        needs = needs.with_kinds(Need.ROLLUP)  # (its PSS split: through a fork's kin, or objects)
        loaded, resident, bases = self._rollups_again(source, needs, seen, pids, selection)
        chosen = selection.only_pids(pid for pid in pids if pid not in loaded)
        if not chosen.pids:  # (all read again above: of the rest of a whole read, only meminfo)
            return read_meminfo(source), self._known_again(source, seen, pids, loaded, resident, bases, {}, {}, now)
        # the machine's figures (pools, pressure, clock) are the final reading's (_reading), not these
        reading = load_reading(source, chosen, with_processes=True, jobs=jobs, listed=sorted(chosen.pids),
                               needs=replace(needs, kinds=needs.kinds & ~_MACHINE_KINDS))
        self._pss_missing = self._pss_missing or reading.pss_missing
        for process in reading.processes:
            stat = seen[process.pid]
            loaded[process.pid] = process if process.stat is None else process.replaced(stat=stat)
        unreadable = {pid: (reason, name) for reason, listed in reading.unreadable.items() for pid, name in listed}
        skipped = {pid: (name, rss) for pid, name, rss in reading.skipped}
        return reading.meminfo, self._known_again(source, seen, pids, loaded, resident, bases, unreadable, skipped,
                                                  now)

    def _known_again(self, source, seen, pids, loaded, resident, bases, unreadable, skipped, now):
        """Keep what was read of ``pids``: their figures, their keys in the sharer index; the
        events of those read because their own memory moved."""
        events, sharers, aged = [], self._sharers, self._aged
        for pid in sorted(pids):  # (in pid order: those read together are as old, and aged so)
            before = self._known.get(pid)
            before_keys = sharers.keys(pid)
            known = Known(seen[pid], now)
            known.process = loaded.get(pid)
            known.unreadable = unreadable.get(pid)
            known.skipped = skipped.get(pid)
            keys = {}
            if known.process is not None:
                known.pss, known.shared, known.split = amounts(known.process)
                known.file_rss = resident.get(pid)
                known.base = bases.get(pid)
                known.limit = max(self.tolerance * known.pss, 1e-6)
                if before is None or before.process is None or remapped(before, known):
                    raw = source.read_optional(f"{pid}/maps")
                    keys = sharing_keys(pid, known.ppid, parse_maps_objects(raw) if raw else {})
                elif before.ppid != known.ppid:
                    keys = {**{k: v for k, v in before_keys.items() if v is not None},
                            **sharing_keys(pid, known.ppid, {})}
                else:
                    keys = before_keys
            sharers.place(pid, keys)
            self._known[pid] = known
            aged.pop(pid, None)
            aged[pid] = None  # (the newest figure now)
            if known.limit is None:
                self._limits.pop(pid, None)
            else:
                self._limits[pid] = known.limit
            if before is None:
                events.append((pid, known.shared, keys, known.split))
            elif before.moved != known.moved:
                moved_keys = keys if keys is before_keys else {**before_keys, **keys}
                events.append((pid, abs(known.shared - before.shared), moved_keys, caps(before.split, known.split)))
        return events

    @staticmethod
    def _again_possible(needs):
        """Whether a process read before can be read again by what moves (else it is read whole)."""
        return not (needs.status or needs.ksm or needs.max_rss_kib is not None or needs.mappings or needs.split)

    def _statm(self, source, pid, stat):
        raw = self._files.read(source, pid, "statm", stat)
        try:
            return parse_statm(raw) if raw else None
        except ValueError:
            return None

    def _grow(self, source, selection, needs, seen, moved, walked, now):
        """The pids of ``moved`` (but ``walked``) whose figures their counters give, each one's Known
        made now's (smem.private_growth); the rest are walked.  One whose figure is as old as
        max_staleness less what a collection takes is walked (_oldest's limit)."""
        needs = needs.with_kinds(Need.ROLLUP)
        if not moved or not self._counting or not self._trust.trusted or not self._again_possible(needs) \
                or not estimable(rollup_keys(needs)):
            return set()
        late = now - self.max_staleness + self._took
        grown = set()
        for pid in moved:
            known, stat = self._known[pid], seen[pid]
            if known.base is None or pid in walked or known.read_at <= late or known.ppid != stat.ppid:
                continue
            statm = self._statm(source, pid, stat)
            self._reads, self._tries = self._reads + 1, self._tries + 1
            counters = None if statm is None else grown_counters(known.base, stat, statm, self._page_kib, self._large)
            process = None if counters is None or not known.same_program(source, pid, stat) else \
                known.refreshed(source, pid, stat, counters, known.file_rss, needs, selection, self._cgroup)
            if process is not None:
                known.grown(stat, process, self.tolerance)
                self._limits[pid] = known.limit
                grown.add(pid)
        return grown

    def _rollups_again(self, source, needs, seen, pids, selection):
        """({pid: Process}, {pid: its resident KiB of files and shmem}, {pid: Baseline}) of the
        processes of ``pids`` read before and running the same program (Known.same_program), each its
        figure before with what moves read again (Known.refreshed) and its smaps_rollup walked, with
        its statm where a baseline may serve (smem.private_growth).  The others, and any whose files
        say more than that (gone, a zombie now, malformed), are read whole by load_reading."""
        if not self._again_possible(needs):
            return {}, {}, {}
        kept = rollup_keys(needs)
        extra = tuple(key for key in BASELINE_KEYS if key not in kept)
        keys = kept + extra
        trust, page_kib = self._trust, self._page_kib
        counted = self._counting and estimable(kept) and not trust.hopeless
        again, resident, bases = {}, {}, {}
        for pid in pids:
            known = self._known.get(pid)
            stat = seen[pid]
            if known is None or not known.same_program(source, pid, stat):
                continue
            statm = None
            if counted:
                statm = self._statm(source, pid, stat)  # (read first: a walk is slower)
                self._reads += 1
            raw = self._files.read(source, pid, "smaps_rollup", stat)
            try:
                parsed = parse_smaps_kept(raw, keys)[0] if raw else None
            except ValueError:
                continue
            if not parsed or any(v is not None and v >= MAX_KIB for v in parsed[0].counters.values()):
                continue
            counters = parsed[0].counters
            walked = {key: counters.get(key) for key in BASELINE_KEYS}
            for key in extra:
                counters.pop(key, None)
            if walked["Anonymous"] is not None and walked["Rss"] is not None:
                resident[pid] = walked["Rss"] - walked["Anonymous"]
            if statm is not None:
                trust.checked(agrees(statm, walked, page_kib))
                base = baseline_of(stat, statm, walked, counters, page_kib, self._large)
                if base is not None:
                    bases[pid] = base
            process = known.refreshed(source, pid, stat, counters, resident.get(pid), needs, selection, self._cgroup)
            if process is not None:
                again[pid] = process
        return again, resident, bases

    def _reading(self, source, meminfo, needs, selected, seen):
        """The Reading of every process known now, as load_reading would make it; each with the stat
        read at this collection, so its CPU time (and state, threads) is now's, not its last read's."""
        processes, unreadable, skipped = [], [], []
        for pid, k in sorted(self._known.items()):
            process = k.process
            if process is not None:
                stat = seen.get(pid)
                if process.stat is not None and stat is not None and process.stat is not stat:
                    process = k.process = process.replaced(stat=stat)  # (once: an unchanged stat is the same object)
                processes.append(process)
            if k.unreadable is not None:
                unreadable.append((pid, *k.unreadable))
            if k.skipped is not None:
                skipped.append((pid, *k.skipped))
        no_smaps = not processes and not unreadable and bool(seen) and kernel_gives_no_smaps(source)  # (none measured)
        return make_reading(source, needs, tuple(processes), meminfo, unreadable, self._pss_missing, tuple(skipped),
                            None, selected, no_smaps)
