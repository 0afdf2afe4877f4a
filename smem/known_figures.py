"""What a collection that re-reads only what changed (smem.incremental) keeps of each process,
and how it tells what moved: the figures of its last walk, and what its stat said then."""

from .parsers.cmdline import parse_cmdline

__all__ = ["Known", "movers", "amounts", "remapped", "holds_devices"]


class Known:
    """What the last read of one process found."""

    __slots__ = ("start", "comm", "moved", "ppid", "read_at", "process", "unreadable", "skipped",
                 "pss", "limit", "shared", "split", "file_rss", "base")

    def __init__(self, stat, read_at):
        self.start = stat.start_time
        self.comm = stat.comm   # a new one is an exec: the process is read whole again
        self.moved = movers(stat)
        self.ppid = stat.ppid
        self.read_at = read_at
        self.process = None     # the Process, where the report has it
        self.unreadable = None  # (reason, name)
        self.skipped = None     # (name, VmRSS KiB)
        self.pss = 0
        self.limit = None       # KiB others may move its PSS by before it is read again
        self.shared = 0         # PSS less USS, KiB: what others' changes can move
        self.split = None       # (anonymous PSS, PSS of files and shmem), KiB, where the kernel splits it
        self.file_rss = None    # its resident pages of files and shmem, KiB (Rss - Anonymous), where read
        self.base = None        # smem.private_growth.Baseline: its counters at the walk, where they agreed

    def grown(self, stat, process, tolerance):
        """Now's ``stat`` and ``process``, its figures from its counters since the walk
        (smem.private_growth): the walk's time and baseline kept, and what others' changes
        can move (what it shares) as it was, since it only faulted in pages of its own."""
        self.comm = stat.comm
        self.moved = movers(stat)
        self.process = process
        self.pss, _, self.split = amounts(process)
        self.limit = max(tolerance * self.pss, 1e-6)

    def same_program(self, source, pid, stat):
        """Whether ``pid`` runs the program it ran when read, as the same user (no exec: its name in
        stat is the same; no setuid: its user, -U's verdict, would be a whole read's)."""
        return self.process is not None and self.process.rollup is not None and self.comm == stat.comm \
            and source.owner(pid) == self.process.uid

    def refreshed(self, source, pid, stat, counters, file_rss, needs, selection, cgroup_of):
        """Its Process with these smaps_rollup ``counters`` and what moves read again: its command
        line (where shown, or -P matches it) and cgroup (``cgroup_of`` the bytes of
        /proc/PID/cgroup), its device fds where its own memory moved; None where it is to be read
        whole (gone, a zombie now, its new command line out of -P: load_reading leaves it out)."""
        process, filtered = self.process, selection.process is not None
        changes = {} if counters == process.rollup else {"rollup": counters, "_totals": None}
        if needs.command or filtered:
            raw = source.read_optional(f"{pid}/cmdline")
            cmdline = parse_cmdline(raw) if raw else ""
            if not cmdline:
                return None
            if cmdline != process.cmdline:
                if filtered and not selection.wants_process(process.name, cmdline):
                    return None
                changes["cmdline"] = cmdline
        if needs.cgroup:
            raw = source.read_optional(f"{pid}/cgroup")
            cgroup = cgroup_of(raw) if raw else None
            if cgroup != process.cgroup:
                changes["cgroup"] = cgroup
        if needs.devices and self.moved != movers(stat) and (
                holds_devices(process.devices) or self.file_rss is None or file_rss != self.file_rss):
            from .device_memory import read_device_handles
            changes["devices"] = read_device_handles(source, pid)
        if changes and process.stat is not None:
            changes["stat"] = stat
        # (nothing moved, as for most of those re-read for their age: the same Process, its stat
        # made now's by Refresher._reading)
        return process.replaced(**changes) if changes else process


def movers(stat):
    """What moves when a process's own memory does."""
    return stat.minflt, stat.majflt, stat.vsize, stat.rss_pages


def amounts(process):
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


def remapped(before, after):
    """Whether the objects a process maps may have changed in a way that moves its sharers:
    its resident pages of files and shmem changed (an object mapped but not touched moves no
    one, and an anonymous region mapped or unmapped, what a process that allocates does, is no
    object; unlike their PSS, they do not move when others map the same files), else their PSS
    (where the kernel splits PSS), else its size."""
    if before.file_rss is not None and after.file_rss is not None:
        return before.file_rss != after.file_rss
    if before.split is not None and after.split is not None:
        return before.split[1] != after.split[1]
    return before.moved[2] != after.moved[2]


def holds_devices(handles):
    """Whether a process held device fds or mapped dma-bufs when last read (one that held none and
    moved only its anonymous memory has none now: opening a DRM node or a dma-buf and using it
    maps the buffers, pages of files)."""
    return handles is None or bool(handles.clients or handles.dmabufs or handles.mapped)
