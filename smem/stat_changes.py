"""Every process's /proc/PID/stat at each collection, and which of them changed since the last.

smem.incremental decides from the stats which rollups to read again: a process whose stat is
the same, byte for byte, has not run since (its fault counters and sizes are those it was read
with), so it is parsed once and not looked at again.  On this machine's /proc the stat files are
kept open between collections (smem.sources.held_stats) and only the changed ones come back;
elsewhere each file is read and compared with the last bytes.  proc(5) documents the fields.
"""

import os

from .parsers.stat import parse_stat
from .parsers.vmstat import parse_vmstat
from .sources.held_stats import held_stats
from .sources.live import LiveSource

__all__ = ["StatChanges"]


class StatChanges:
    """The stats of one collection after another (kept between them: what the last one read)."""

    def __init__(self):
        self._parsed = {}     # pid -> (its stat, parsed) at the last collection
        self._held = None     # smem.sources.held_stats.HeldStats: the stat files kept open
        self._ended = False   # whether the collection that last scanned them ended
        self.vmstat = None    # /proc/vmstat's counters, read with the latest stats (None: unreadable)

    def read(self, source, selection, fresh):
        """({pid: PidStat} of the processes (not kernel threads) there are now, the pids whose
        stat changed since the last collection, or None: any may have).  ``fresh``: nothing read
        before counts (the caller knows no process)."""
        held = self._held_for(source, selection, fresh)
        if held is not None:
            stats = held.stats()
            self.vmstat = held.vmstat  # (read and parsed once: the held stats' gate and smem.private_growth)
            return stats
        raw = source.read_optional("vmstat")
        self.vmstat = parse_vmstat(raw) if raw else None
        seen, before, parsed, touched = {}, self._parsed, {}, set()
        read, wanted = source.read_optional, selection.pids
        for pid in source.pids():
            if wanted is not None and pid not in wanted:
                continue
            raw = read(f"{pid}/stat")
            if not raw:
                continue
            known = before.get(pid)
            if known is not None and known[0] == raw:
                stat = known[1]
                parsed[pid] = known
            else:
                try:
                    stat = parse_stat(raw)
                except ValueError:
                    continue
                parsed[pid] = raw, stat
                touched.add(pid)
            if not stat.is_kernel_thread:
                seen[pid] = stat
        self._parsed = parsed
        return seen, None if fresh else touched

    @property
    def holding(self):
        """Whether the latest read was through descriptors held (this machine's /proc, every process)."""
        return self._held is not None

    @property
    def ran(self):
        """The pids the latest read through held descriptors found ran since the one before (their
        schedstat moved), their stat the same or not; empty where none was read (smem.ksm_changes:
        a region given to ksmd in less than a clock tick moves no stat)."""
        return self._held.ran if self._held is not None else frozenset()

    @property
    def listed(self):
        """The pids the latest read through held descriptors listed, kernel threads too (0: none held)."""
        return self._held.listed if self._held is not None else 0

    def ended(self):
        """The collection that read the stats ended: the next one's changes are since this one."""
        self._ended = True

    def _held_for(self, source, selection, fresh):
        """The HeldStats of this machine's /proc (kept while collections follow one another
        whole), or None: another tree, a selection of pids, or no C step."""
        if selection.pids is not None or not isinstance(source, LiveSource) \
                or os.path.realpath(source.proc) != "/proc":
            self._held = None
            return None
        if self._held is None or fresh or not self._ended:
            self._held = held_stats(source.proc)  # (what it says changed is since the last collection)
        self._ended = False
        return self._held
