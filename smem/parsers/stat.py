"""Parser for /proc/PID/stat (Documentation/filesystems/proc.rst, Table 1-4).

The second field is the command name in parentheses, and the name itself may
contain spaces and parentheses ("(sd-pam)", "a) b"), so it runs from the first
"(" to the *last* ")"; the numbered fields follow.
"""

from typing import NamedTuple, Optional

from . import plausible

__all__ = ["PidStat", "parse_stat", "PF_KTHREAD"]

#: include/linux/sched.h: the task is a kernel thread.
PF_KTHREAD = 0x00200000


class PidStat(NamedTuple):
    pid: int
    comm: str
    state: str
    ppid: int
    flags: Optional[int]
    num_threads: Optional[int]
    vsize: Optional[int]   # bytes
    rss_pages: Optional[int]
    start_time: Optional[int] = None  # clock ticks after boot: with the pid, names a process for good
    utime: Optional[int] = None       # clock ticks it ran in user mode
    stime: Optional[int] = None       # clock ticks it ran in the kernel
    minflt: Optional[int] = None      # faults that mapped a page without I/O (it grows as memory is touched)
    majflt: Optional[int] = None      # faults that read a page in
    start_stack: Optional[int] = None  # where its stack starts: an exec sets it anew (0 where not permitted)

    @property
    def cpu_ticks(self):
        """Clock ticks it ran (utime + stime), or None where either is unknown."""
        return None if self.utime is None or self.stime is None else self.utime + self.stime

    @property
    def is_kernel_thread(self):
        return self.flags is not None and bool(self.flags & PF_KTHREAD)

    @property
    def is_zombie(self):
        return self.state in ("Z", "X", "x")

    @property
    def leader_exited(self):
        """Whether the process's first thread exited while others run on (ps says "Zl"): its
        memory is its live threads' (smem.sources.proc_files)."""
        return self.state == "Z" and (self.num_threads or 0) > 1


def _int(fields, index):
    """The field as an int in [0, 2**64), else None (absent, garbage or absurd)."""
    try:
        field = fields[index]
        return plausible(int(field)) if len(field) <= 20 else None
    except (IndexError, ValueError):
        return None


def parse_stat(data):
    """Parse stat bytes; raises ValueError if there is no "(comm)" field."""
    open_ = data.find(b"(")
    close = data.rfind(b")")
    if open_ < 0 or close < open_:
        raise ValueError("malformed stat: no (comm) field")
    pid = int(data[:open_]) if len(data[:open_]) <= 24 else None
    if pid is None or plausible(pid) is None:
        raise ValueError("malformed stat: no pid")
    comm = data[open_ + 1:close].decode("utf-8", "surrogateescape")
    # fields after comm, numbered from 3 (state) in proc.rst's Table 1-4
    rest = data[close + 1:].split()
    state = rest[0].decode("ascii", "replace") if rest else "?"
    return PidStat(
        pid=pid, comm=comm, state=state,
        ppid=_int(rest, 1) or 0,
        flags=_int(rest, 6),
        num_threads=_int(rest, 17),
        vsize=_int(rest, 20),
        rss_pages=_int(rest, 21),
        start_time=_int(rest, 19),
        utime=_int(rest, 11),
        stime=_int(rest, 12),
        minflt=_int(rest, 7),
        majflt=_int(rest, 9),
        start_stack=_int(rest, 25),
    )
