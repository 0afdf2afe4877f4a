"""The mapping view (-m): one row per mapping name, summed over processes."""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Optional

from ..aggregate import anonymous_pss, is_shmem_mapping
from .columns import Comparison, Metrics, Reads, View, amount, count, text
from .memory_columns import memory_columns

__all__ = ["MAPPING_VIEW", "MappingFold", "MappingRow", "MappingSums", "MappingTally"]


@dataclass(frozen=True, eq=False)
class MappingRow:
    """One name's sums over every process that maps it: a value, made once they are all read."""

    __slots__ = ("name", "count", "process_count", "totals", "first", "split")
    name: str
    count: int                  # mappings with this name
    process_count: int          # processes that map it
    totals: Mapping             # counter -> KiB summed over those mappings; a key none has is absent
    first: tuple                # (pid, index) of its first mapping: the rows' order, whatever the reading order
    split: Optional[tuple]      # (anon, file, shmem) PSS estimated per mapping, summed; None without

    def average(self, value):
        return None if value is None else value // self.process_count


@dataclass(frozen=True, eq=False)
class MappingSums:
    """The mapping view's rows (what the loader's fold made of every process's mappings, in the
    order of their first mapping): one value every reader of the reading shares."""

    rows: tuple


class MappingTally:
    """One name's sums while the fold reads (its own, mutable; the reading gets a MappingRow)."""

    __slots__ = ("first", "count", "process_count", "totals", "last_pid", "split_parts")

    def __init__(self, first, last_pid=None, split_parts=None):
        self.first = first      # (pid, index) of its first mapping
        self.count = 0          # mappings with this name
        self.process_count = 0  # processes that map it
        self.totals = {}        # counter -> KiB summed
        self.last_pid = last_pid  # the process last counted in process_count
        self.split_parts = split_parts  # [anon, file, shmem PSS, whether any mapping had Pss], or None

    def row(self, name):
        """The value the reading holds: its totals a copy, which a fold that goes on cannot change."""
        parts = self.split_parts
        split = None if parts is None or not parts[3] else (parts[0], parts[1], parts[2])
        return MappingRow(name, self.count, self.process_count, MappingProxyType(dict(self.totals)), self.first, split)


class MappingFold:
    """Sums the mapping view's rows as processes are read (the loader gives each to :meth:`add`,
    then lets its mappings go): per name, the mappings' count, the processes mapping it, the
    counters summed and, with ``split``, the PSS split summed (what
    aggregate.pss_split_of_mappings gives for the name's mappings).  The sums stay in here, the
    loader's while it reads; :meth:`result` is the value the reading holds."""

    def __init__(self, split=True):
        self.split = split
        self.by_name = {}  # name -> MappingTally

    def clear(self):
        self.by_name = {}

    def add(self, process):
        by_name = self.by_name
        split = self.split
        pid = process.pid
        for index, m in enumerate(process.mappings or ()):
            name = m.name
            tally = by_name.get(name)
            if tally is None:
                tally = by_name[name] = MappingTally((pid, index), None, [0, 0, 0, False])
            elif pid < tally.first[0]:  # (a later mapping of the same process comes after its first)
                tally.first = (pid, index)
            tally.count += 1
            if tally.last_pid != pid:  # (a process's mappings are added together)
                tally.last_pid = pid
                tally.process_count += 1
            totals = tally.totals
            counters = m.counters
            if type(counters) is dict:  # the counters kept (parse_smaps_kept): all present
                for key, value in counters.items():
                    totals[key] = totals.get(key, 0) + value
            else:
                for key in counters:
                    value = counters.get(key)
                    if value is not None:
                        totals[key] = totals.get(key, 0) + value
            if split and tally.split_parts is not None:
                _add_split(tally, m)

    def result(self):
        """The sums as the reading's value (:class:`MappingSums`)."""
        return MappingSums(self._rows())

    def _rows(self):
        rows = [tally.row(name) for name, tally in self.by_name.items()]
        rows.sort(key=_first)
        return tuple(rows)


def _first(row):
    return row.first


def _add_split(tally, m):
    """One mapping's part of the PSS split (as aggregate.pss_split_of_mappings counts it)."""
    c = m.counters
    pss = c.get("Pss")
    if pss is None:
        return
    anon_part = anonymous_pss(c)
    if anon_part is None:
        tally.split_parts = None  # the kernel gives no Anonymous: no estimate (absent is not zero)
        return
    parts = tally.split_parts
    parts[3] = True
    parts[0] += anon_part
    parts[2 if is_shmem_mapping(m) else 1] += pss - anon_part


def rows(snapshots, options):
    sums = snapshots[0].folded
    if not isinstance(sums, MappingSums):  # a snapshot loaded without the fold: sum it now
        fold = MappingFold()
        for process in snapshots[0].processes:
            fold.add(process)
        sums = fold.result()
    return sums.rows


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
    reads=Reads(needs=frozenset({"mappings"}), fold=lambda needs: MappingFold(split=needs.split)),
    metrics=Metrics(labels=(("map", lambda r: r.name),)),
    comparison=Comparison(row_key=lambda r: r.name),
    smem15_table=True,
)
