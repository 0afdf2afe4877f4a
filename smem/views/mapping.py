"""The mapping view (-m): one row per mapping name, summed over processes."""

from ..aggregate import anonymous_pss, is_shmem_mapping
from .columns import Comparison, Metrics, Reads, View, amount, count, text
from .memory_columns import memory_columns

__all__ = ["MAPPING_VIEW", "MappingSums"]


class MappingRow:
    __slots__ = ("name", "count", "process_count", "totals", "first", "last_pid", "_split", "_split_parts")

    def __init__(self, name, first):
        self.name = name
        self.count = 0          # mappings with this name
        self.process_count = 0  # processes that map it
        self.totals = {}        # counter -> KiB summed over those mappings; a key none has is absent
        self.first = first      # (pid, index) of its first mapping: the rows' order, whatever the reading order
        self.last_pid = None    # the process last counted in process_count
        self._split = None
        self._split_parts = [0, 0, 0, False]  # anon, file, shmem PSS, and whether any mapping had Pss

    def average(self, value):
        return None if value is None else value // self.process_count

    @property
    def split(self):
        """(anon, file, shmem) PSS estimated per mapping (aggregate.pss_split_of_mappings), summed."""
        if self._split_parts is None:
            return None
        anon, file, shmem, seen = self._split_parts
        return (anon, file, shmem) if seen else None


class MappingSums:
    """The mapping view's rows, summed as processes are read (smem.model folds each into
    it, then lets its mappings go): per name, the mappings' count, the processes mapping
    it, the counters summed and, with ``split``, the PSS split summed (what
    aggregate.pss_split_of_mappings gives for the name's mappings)."""

    def __init__(self, split=True):
        self.split = split
        self.by_name = {}

    def clear(self):
        self.by_name = {}

    def add(self, process):
        by_name = self.by_name
        split = self.split
        pid = process.pid
        for index, m in enumerate(process.mappings or ()):
            name = m.name
            row = by_name.get(name)
            if row is None:
                row = by_name[name] = MappingRow(name, (pid, index))
            elif pid < row.first[0]:  # (a later mapping of the same process comes after its first)
                row.first = (pid, index)
            row.count += 1
            if row.last_pid != pid:  # (a process's mappings are added together)
                row.last_pid = pid
                row.process_count += 1
            totals = row.totals
            counters = m.counters
            if type(counters) is dict:  # the counters kept (parse_smaps_kept): all present
                for key, value in counters.items():
                    totals[key] = totals.get(key, 0) + value
            else:
                for key in counters:
                    value = counters.get(key)
                    if value is not None:
                        totals[key] = totals.get(key, 0) + value
            if split and row._split_parts is not None:
                _add_split(row, m)

    def rows(self):
        return sorted(self.by_name.values(), key=lambda r: r.first)


def _add_split(row, m):
    """One mapping's part of the PSS split (as aggregate.pss_split_of_mappings counts it)."""
    c = m.counters
    pss = c.get("Pss")
    if pss is None:
        return
    anon_part = anonymous_pss(c)
    if anon_part is None:
        row._split_parts = None  # the kernel gives no Anonymous: no estimate (absent is not zero)
        return
    parts = row._split_parts
    parts[3] = True
    parts[0] += anon_part
    parts[2 if is_shmem_mapping(m) else 1] += pss - anon_part


def rows(snapshots, options):
    snapshot = snapshots[0]
    sums = snapshot.folded
    if not isinstance(sums, MappingSums):  # a snapshot loaded without the fold: sum it now
        sums = MappingSums()
        for process in snapshot.processes:
            sums.add(process)
    return sums.rows()


def _memory():
    columns = memory_columns(lambda r: r.totals, lambda r: r.split)
    pss = next(c for c in columns if c.key == "pss")
    uss = next(c for c in columns if c.key == "uss")
    rss = next(c for c in columns if c.key == "rss")
    index = next(i for i, c in enumerate(columns) if c.key == "vss") + 1
    averages = [
        amount("avgpss", "AVGPSS", lambda r: r.average(pss.getter(r)), "average PSS per process",
               counters=pss.counters),
        amount("avguss", "AVGUSS", lambda r: r.average(uss.getter(r)), "average USS per process",
               counters=uss.counters),
        amount("avgrss", "AVGRSS", lambda r: r.average(rss.getter(r)), "average RSS per process",
               counters=rss.counters),
    ]
    return columns[:index] + averages + columns[index:]


COLUMNS = {c.key: c for c in (
    text("map", "Map", lambda r: r.name, "mapping name", 40, truncate=True, total="rows", total_key="mappings"),
    count("count", "Count", lambda r: r.count, "number of mappings with this name"),
    count("pids", "PIDs", lambda r: r.process_count, "number of processes mapping it"),
    *_memory(),
)}

MAPPING_VIEW = View(
    name="mapping", title="mappings", columns=COLUMNS,
    default_columns=("map", "pids", "avgpss", "pss"),
    default_sort="pss", rows=rows, flowing_column="map",
    reads=Reads(needs=frozenset({"mappings"}), fold=lambda needs: MappingSums(split=needs.split)),
    metrics=Metrics(labels=(("map", lambda r: r.name),)),
    comparison=Comparison(row_key=lambda r: r.name),
    smem15_table=True,
)
