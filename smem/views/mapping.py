"""The mapping view (-m): one row per mapping name, summed over processes."""

from ..model import uss_of
from .columns import View, amount, count, text

__all__ = ["MAPPING_VIEW"]


class MappingRow:
    __slots__ = ("name", "count", "pids", "totals")

    def __init__(self, name):
        self.name = name
        self.count = 0   # mappings with this name
        self.pids = 0    # processes that map it
        self.totals = {}

    def average(self, value):
        return None if value is None else value // self.pids


def rows(snapshot, options):
    by_name = {}
    for process in snapshot.processes:
        seen = set()
        for m in process.mappings:
            row = by_name.get(m.name)
            if row is None:
                row = by_name[m.name] = MappingRow(m.name)
            row.count += 1
            if m.name not in seen:
                seen.add(m.name)
                row.pids += 1
            totals = row.totals
            for key, value in m.counters.items():
                totals[key] = totals.get(key, 0) + value
    return list(by_name.values())


def _total(key):
    return lambda r: r.totals.get(key)


COLUMNS = {c.key: c for c in (
    text("map", "Map", lambda r: r.name, "mapping name", 40, truncate=True, total="rows"),
    count("count", "Count", lambda r: r.count, "number of mappings with this name"),
    count("pids", "PIDs", lambda r: r.pids, "number of processes mapping it"),
    amount("swap", "Swap", _total("Swap"), "swap space used (ignoring sharing)", percent_of="swap"),
    amount("uss", "USS", lambda r: uss_of(r.totals), "unique set size"),
    amount("rss", "RSS", _total("Rss"), "resident set size (ignoring sharing)"),
    amount("pss", "PSS", _total("Pss"), "proportional set size (shared pages divided among their users)"),
    amount("vss", "VSS", _total("Size"), "virtual set size (all virtual memory mapped)"),
    amount("avgpss", "AVGPSS", lambda r: r.average(r.totals.get("Pss")), "average PSS per process"),
    amount("avguss", "AVGUSS", lambda r: r.average(uss_of(r.totals)), "average USS per process"),
    amount("avgrss", "AVGRSS", lambda r: r.average(r.totals.get("Rss")), "average RSS per process"),
)}

MAPPING_VIEW = View(
    name="mapping", title="mappings", columns=COLUMNS,
    default_columns=("map", "pids", "avgpss", "pss"),
    default_sort="pss", rows=rows,
)
