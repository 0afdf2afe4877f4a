"""Every process's /proc/PID/stat, read through descriptors held from one collection to the next.

A collection that re-reads only what changed (smem.incremental) still reads every process's
stat to learn what did: opening, reading and closing 1,500 files a frame.  :class:`HeldStats`
keeps each stat's file open and reads it again at offset 0 (the kernel makes its text anew),
and hands back only the stats whose bytes changed: most processes have not run since.  The
loop is the optional C extension smem.sources._stat_fds; without it (or with
SMEM_PURE_PYTHON=1) :func:`held_stats` gives None and the caller reads each file as before.

A held descriptor stays bound to the process it was opened for: once that one exits, reading
it fails, whatever process has its number since, and the file is opened again by its path.
The descriptors are moved to :data:`FLOOR` or over, and the soft limit on open files raised
for them where the hard one allows (else the rest are read and closed each time); each costs
the kernel about a page while held.

The kernel makes a stat's text anew at each read, at a cost; /proc/PID/schedstat (the
nanoseconds a task ran: Documentation/scheduler/sched-stats.rst) is three numbers, cheaper.  A process
of one thread whose schedstat is the same has not run since, so it made no fault and no mapping:
its stat is not read.  A process's pages can be taken while it does not run, by reclaim, swap,
a lazily freed page reclaimed, or a huge page assembled (khugepaged): where /proc/vmstat says
any of that happened since the last scan (:data:`PASSIVE`), or cannot be read, every stat is.
Some changes move no such counter, and its figure waits for ``--max-staleness``: a page another
process unmaps from it through process_madvise(MADV_PAGEOUT), or a DAMON scheme whose action
is pageout (DAMOS_PAGEOUT, DAMON_RECLAIM: the same path, which counts no pgsteal); its pages of
a file or shmem that another process truncates or punches a hole in (ftruncate, fallocate,
MADV_REMOVE); pages another writes into it (process_vm_writev, /proc/PID/mem, ptrace,
userfaultfd's UFFDIO_COPY).
One whose schedstat moved ran, even where its stat is the same (awake for less than a clock
tick, no fault): it may have given ksmd a region (smem.ksm_changes), and :attr:`HeldStats.ran`
says so.  A scan that reads every stat reads no schedstat: what ran then shows at the next that
does, against the schedstat read before.
Where the kernel keeps no run time (no /proc/PID/schedstat: CONFIG_SCHED_INFO off; or "0 0 0"),
as this process's own schedstat says, nothing is gated: a schedstat read would only add to the
stat's.
"""

import os
import resource

from ..parsers.stat import parse_stat
from ..parsers.vmstat import parse_vmstat

__all__ = ["HeldStats", "held_stats", "room", "FLOOR", "PASSIVE"]

#: held descriptors are numbered from here: the program's own stay below, where select() takes them
FLOOR = 1024

#: /proc/vmstat counters of pages taken from (or given to) processes that need not run for it:
#: reclaim (every pgsteal_*), swap out (zswap's too), lazily freed pages reclaimed, huge pages
#: collapsed (which may fill holes)
PASSIVE = ("pgsteal", "pswpout", "zswpout", "pglazyfreed", "thp_collapse_alloc")


def _passive(counters):
    """The PASSIVE counters of /proc/vmstat's (parsed), or None where it has none of them."""
    moves = tuple(sorted((name, value) for name, value in counters.items() if name.startswith(PASSIVE)))
    return moves or None


def _run_time_kept(proc):
    """Whether the kernel keeps the time each task ran, by this process's own schedstat (it has run)."""
    try:
        with open(f"{proc}/self/schedstat", "rb") as f:
            return not f.read().startswith(b"0")
    except OSError:
        return False


_c = None
if not os.environ.get("SMEM_PURE_PYTHON"):
    try:
        from . import _stat_fds as _c
    except ImportError:  # not built (no compiler where it was installed)
        _c = None


class HeldStats:
    """The stats of the processes under ``proc``, with their files kept open."""

    def __init__(self, proc):
        self.proc = proc
        self._fds = {}    # pid -> descriptor held
        self._last = {}   # pid -> its stat as last read
        self._seen = {}   # pid -> its stat as last read, parsed, where it is no kernel thread's
        self._sched_fds = {}   # pid -> descriptor of its schedstat held
        self._sched_last = {}  # pid -> its schedstat as last read
        self._passive = None   # PASSIVE counters at the last scan
        self.vmstat = None     # /proc/vmstat's counters as the last scan read them (None: unreadable)
        self.listed = 0        # the pids the last scan listed, kernel threads too (each a stat held)
        self.ran = frozenset()  # the pids the last scan found ran (schedstat moved), their stat the same or not
        self._timed = _run_time_kept(proc)  # (else no schedstat is read)

    def stats(self):
        """({pid: PidStat} of the processes (not kernel threads) there are now, in the order first
        seen (ascending, but where a pid was reused or the numbers wrapped); the pids whose stat changed
        since the last call, the others' PidStat being the same object)."""
        pids, changed = self.scan()
        seen, touched = self._seen, set()
        for pid, raw in changed:
            touched.add(pid)
            try:
                if raw is None:  # (no longer readable)
                    raise ValueError(pid)
                stat = parse_stat(raw)
            except ValueError:
                seen.pop(pid, None)
                continue
            if stat.is_kernel_thread:
                seen.pop(pid, None)
            else:
                seen[pid] = stat
        return dict(seen), touched

    def scan(self):
        """(every pid, ascending; [(pid, stat bytes, or None where it is no longer readable)] of
        those whose stat is not what the last scan read)."""
        room(2 * len(self._last) + 512 if self._last else len(os.listdir(self.proc)) + 512)
        passive = self._passive_now()
        gated = None
        if self._sched_fds:  # (one that has threads now is gated no more, whether or not this scan gates)
            seen = self._seen
            for pid in [pid for pid in self._sched_fds if pid in seen and seen[pid].num_threads != 1]:
                os.close(self._sched_fds.pop(pid))
                self._sched_last.pop(pid, None)
        if self._timed and passive is not None and passive == self._passive:
            gated = {pid for pid, stat in self._seen.items() if stat.num_threads == 1}
        self._passive = passive
        sched_before = dict(self._sched_last) if gated is not None else None
        pids, changed = _c.scan(self.proc, self._fds, self._last, FLOOR, gated, self._sched_fds, self._sched_last)
        # (the scan puts a new bytes object where a schedstat moved: an identity pass finds them)
        self.ran = frozenset() if sched_before is None else \
            frozenset(pid for pid, now in self._sched_last.items() if sched_before.get(pid) is not now)
        listed = set(pids)
        self.listed = len(pids)
        for pid in [pid for pid in self._last if pid not in listed]:  # (exited)
            del self._last[pid]
            self._seen.pop(pid, None)
        for pid in [pid for pid in self._sched_last if pid not in listed]:
            del self._sched_last[pid]
        for fds in (self._fds, self._sched_fds):
            for pid in [pid for pid in fds if pid not in listed]:
                os.close(fds.pop(pid))
        return pids, changed

    def _passive_now(self):
        try:
            with open(f"{self.proc}/vmstat", "rb") as f:
                self.vmstat = parse_vmstat(f.read())
        except OSError:
            self.vmstat = None
            return None
        return _passive(self.vmstat)

    def close(self):
        fds, sched_fds = self._fds, self._sched_fds
        self._fds, self._last, self._seen, self._sched_fds, self._sched_last = {}, {}, {}, {}, {}
        for fd in [*fds.values(), *sched_fds.values()]:
            os.close(fd)

    def __del__(self):
        self.close()


def room(wanted):
    """Raise the soft limit on open files to hold ``wanted`` descriptors over FLOOR, where the
    hard limit allows; how many it holds over FLOOR now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = FLOOR + wanted
    if soft != resource.RLIM_INFINITY and soft < need:
        new = need if hard == resource.RLIM_INFINITY else min(need, hard)
        if new > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
            soft = new
    return wanted if soft == resource.RLIM_INFINITY else max(soft - FLOOR, 0)


def held_stats(proc):
    """A HeldStats of ``proc``, or None where the C step is not built."""
    return HeldStats(proc) if _c is not None else None
