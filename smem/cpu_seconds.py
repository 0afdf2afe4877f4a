"""CPU time as Prometheus counters: ``smem_<view>_cpu_seconds_total`` of smem serve.

The cpu column is a % over the interval since the collection before: a gauge, which two
Prometheus servers scraping one smem serve split between them, each seeing the interval since the
other's scrape.  A counter is what ``rate()`` takes over any window
(https://prometheus.io/docs/concepts/metric_types/#counter).

A process's own count is its utime + stime (/proc/PID/stat fields 14 and 15, in clock ticks:
Documentation/filesystems/proc.rst, Table 1-4), which only grows while it lives.  A program's,
user's or cgroup's cannot be the sum of its live processes' (it would fall when one exits, which
Prometheus reads as a reset): each collection adds to a group what each of its processes ran
since the collection before (all it ran, for one not seen before), so a process that exits keeps
what it was seen to run.  A group with no process left is dropped; one that comes back starts from
0 again, a reset ``rate()`` allows for.  What a process ran between the last collection and its
exit is not seen, as with every exporter that reads /proc.

A process missing from a collection is not known to have exited: -P may leave it out a while (a
server that retitles itself), or --max-rss, or a read that failed.  What it had run is kept for
REMEMBERED collections, so that back, it adds what it ran since, not all it ran once more (a rise
``rate()`` reads as CPU time spent in one interval).
"""

from .formats.families import cpu_seconds_family
from .formats.cells import label_value

__all__ = ["CpuSeconds", "REMEMBERED"]

#: collections a process missing from them is remembered (its clock ticks, as last seen)
REMEMBERED = 100


class CpuSeconds:
    """The counters of one smem serve: what each group of each view ran, kept between collections."""

    def __init__(self):
        self._ticks = {}   # (pid, start time) -> (clock ticks it had run when last seen, that collection)
        self._collections = 0
        self._totals = {}  # view name -> {label values: ticks counted}

    def families(self, snapshot, tables):
        """A counter family for each table of ``tables`` (made from ``snapshot``) whose rows are
        processes or groups of them; none where the source has no clock (a capture without
        /proc/uptime) to say what a tick is."""
        if snapshot.clock is None:
            return []
        hz = snapshot.clock[1]
        self._collections += 1
        seen, now, ran = self._collections, {}, {}
        for process in snapshot.processes:
            stat = process.stat
            ticks = stat.cpu_ticks if stat is not None else None
            if ticks is None:
                continue
            key = (process.pid, stat.start_time)
            now[key] = ticks
            ran[process.pid] = max(ticks - self._ticks.get(key, (0, seen))[0], 0)
        self._ticks = {key: last for key, last in self._ticks.items() if seen - last[1] < REMEMBERED}
        self._ticks.update((key, (ticks, seen)) for key, ticks in now.items())
        result = []
        for table in tables:
            counted = self._counted(table, ran, now)
            if counted is not None:
                result.append(cpu_seconds_family(table, counted, hz, of_processes=hasattr(table.rows[0], "process")))
        return result

    def _counted(self, table, ran, now):
        """{label values: ticks} of ``table``'s rows, or None for a table that is not of processes."""
        labels = table.view.metrics.labels
        if not labels or not table.rows:
            return None
        first = table.rows[0]
        if hasattr(first, "processes"):  # a group: what its processes ran since the collection before, added up
            before = self._totals.get(table.view.name, {})
            totals = {}
            for row in table.rows:
                key = tuple(label_value(str(get(row))) for _, get in labels)
                added = sum(ran.get(p.pid, 0) for p in row.processes)
                totals[key] = totals.get(key, before.get(key, 0)) + added
            self._totals[table.view.name] = totals
            return totals
        if hasattr(first, "process"):  # a process: its own count, which only grows while it runs
            counted = {}
            for row in table.rows:
                stat = row.process.stat
                ticks = now.get((row.process.pid, stat.start_time)) if stat is not None else None
                if ticks is not None:
                    counted[tuple(label_value(str(get(row))) for _, get in labels)] = ticks
            return counted
        return None
