"""The ``cpu`` column: how much of one core a process ran, beside its memory.

From /proc/PID/stat's utime + stime (clock ticks) and starttime against /proc/uptime
(Documentation/filesystems/proc.rst, Table 1-4).  A table of one snapshot shows the average
since the process started, as ``ps`` does; a table of two (watch mode, ``smem serve``'s scrapes,
``smem diff OLD NEW``: views with ``interval_rows``) the rate over the interval between them,
as ``top`` does, for a process in both (one started since: since it started).  100 is one core
busy; a process with threads on several cores shows more.
"""

__all__ = ["process_cpu", "cpu_readings", "cpu_column", "CPU_NEEDS"]

#: what the column reads: each process's stat, and the snapshot's uptime and clock rate
CPU_NEEDS = frozenset({"stat", "uptime"})


def cpu_readings(snapshot):
    """{(pid, start time): (ticks, uptime)} of ``snapshot``'s processes: the earlier side of an
    interval."""
    if snapshot.clock is None:
        return {}
    uptime = snapshot.clock[0]
    return {(p.pid, p.stat.start_time): (p.stat.cpu_ticks, uptime) for p in snapshot.processes
            if p.stat is not None and p.stat.cpu_ticks is not None}


def process_cpu(process, clock, earlier=None):
    """% of one core ``process`` ran: over the interval since ``earlier`` (cpu_readings of an
    earlier snapshot) where it is in it, else since it started; None where unknown."""
    stat = process.stat
    ticks = stat.cpu_ticks if stat is not None else None
    if ticks is None or clock is None:
        return None
    uptime, hz = clock
    before = earlier.get((process.pid, stat.start_time)) if earlier else None
    if before is not None and uptime > before[1] and ticks >= before[0]:
        return round(100.0 * (ticks - before[0]) / hz / (uptime - before[1]), 1)
    if stat.start_time is None:
        return None
    ran_for = uptime - stat.start_time / hz
    return round(100.0 * ticks / hz / ran_for, 1) if ran_for > 0 else None


def cpu_column(getter):
    from .columns import Column
    return Column("cpu", "CPU%", getter, "% of one core it ran: since it started (as ps), or in watch mode, smem "
                  "serve and smem diff over the interval between the two readings (as top)", width=6, total="sum",
                  needs=CPU_NEEDS, total_key="cpu_percent")
