"""The mapping view (-m): one row per mapping name, summed over processes."""

from ..aggregate import Sums, pss_split_of_mappings
from .columns import View, amount, count, text
from .memory_columns import memory_columns

__all__ = ["MAPPING_VIEW"]


class MappingRow:
    __slots__ = ("name", "count", "process_count", "totals", "mappings", "_split")

    def __init__(self, name):
        self.name = name
        self.count = 0          # mappings with this name
        self.process_count = 0  # processes that map it
        self.mappings = []
        self.totals = Sums([])
        self._split = False

    def average(self, value):
        return None if value is None else value // self.process_count

    @property
    def split(self):
        if self._split is False:
            self._split = pss_split_of_mappings(self.mappings)
        return self._split


def rows(snapshots, options):
    by_name = {}
    for process in snapshots[0].processes:
        seen = set()
        for m in process.mappings or ():
            name = m.name
            row = by_name.get(name)
            if row is None:
                row = by_name[name] = MappingRow(name)
            row.mappings.append(m)
            if name not in seen:
                seen.add(name)
                row.process_count += 1
    for row in by_name.values():
        row.count = len(row.mappings)
        row.totals = Sums([m.counters for m in row.mappings])
    return list(by_name.values())


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
    default_sort="pss", rows=rows, needs=frozenset({"mappings"}), flowing_column="map", row_key=lambda r: r.name,
    labels=(("map", lambda r: r.name),),
)
