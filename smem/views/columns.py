"""The column registry: one description per column, for every view and format.

A column knows its header, how to get its raw value from a row, how smem 1.5
lays it out in the classic table (width, alignment, truncation), whether it
is an amount of memory (so ``-k``/``-p`` apply, against RAM or swap), how it
totals, and a line of help for the known-fields list.
"""

from dataclasses import dataclass
from typing import Any, Callable, Optional

__all__ = ["Column", "amount", "text", "count", "View"]


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    getter: Callable[[Any], Any]
    help: str
    width: int = 8
    align: str = ">"            # ">" right, "<" left
    truncate: bool = False      # cut values to width (command, name, map)
    is_amount: bool = False     # KiB: formatted by -k / -p
    percent_of: str = "ram"     # "ram" or "swap", for -p
    total: Optional[str] = None  # "sum", "rows", "distinct" or None (blank)
    needs: frozenset = frozenset()  # what must be read per process: "mappings", "rollup", "status"
    counters: frozenset = frozenset()  # the smaps counters (kernel keys) the getter reads


def amount(key, header, getter, help, width=8, percent_of="ram", needs=(), counters=()):
    return Column(key, header, getter, help, width=width, is_amount=True,
                  percent_of=percent_of, total="sum", needs=frozenset(needs), counters=frozenset(counters))


def count(key, header, getter, help, width=5, total="sum", needs=()):
    return Column(key, header, getter, help, width=width, total=total, needs=frozenset(needs))


def text(key, header, getter, help, width, truncate=False, total=None, align="<", needs=()):
    return Column(key, header, getter, help, width=width, align=align,
                  truncate=truncate, total=total, needs=frozenset(needs))


@dataclass(frozen=True)
class View:
    """A report shape: its columns (in known-fields order), defaults and row builder."""

    name: str
    title: str
    columns: dict
    default_columns: tuple
    default_sort: str
    rows: Callable  # (snapshot, options) -> list of rows
    #: (snapshot, options, rows) -> (RAM KiB for -p or None, lines to print under the table)
    summary: Optional[Callable] = None
    #: the view reads per-mapping smaps whatever its columns (the mapping view)
    needs: frozenset = frozenset()
    #: OpenMetrics labels that name a row: (label, getter)
    labels: tuple = ()
    #: rows are sets of processes (``row.member_pids``): exact accounting applies
    process_groups: bool = False

    def default_columns_for(self, exact):
        """The default columns; under --exact with group USS after USS."""
        columns = list(self.default_columns)
        if exact and "guss" in self.columns and "uss" in columns and "guss" not in columns:
            columns.insert(columns.index("uss") + 1, "guss")
        return columns
