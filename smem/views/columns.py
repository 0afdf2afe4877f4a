"""The column registry and the view description: everything a report shape knows about itself.

A column knows its header, how to get its raw value from a row, how smem 1.5
lays it out in the classic table (width, alignment, truncation), whether it
is an amount of memory (so ``-k``/``-p`` apply, against RAM or swap), how it
totals (and, under --exact, which exact figure its total is), and a line of
help for the known-fields list.

A :class:`View` holds its columns and answers every question the layers
above would otherwise ask by its name, in a few small records, one per layer that asks:
:class:`Reads` (what the loader reads for it), :class:`Accounting` (how its rows add up:
totals, --exact), :class:`Charting` (what a pie or bar draws), :class:`Metrics` (how its
rows are labelled in OpenMetrics and which tables a scrape carries beside it) and
:class:`Comparison` (how a row is the same row in two readings).  How the command line
chooses a view is declared beside it in the registry (smem.views), which must know every
view's flags without importing the views.
"""

import enum
from typing import Any, Callable, Dict, NamedTuple, Optional, Sequence, Tuple

__all__ = ["Column", "ColumnMetric", "amount", "text", "count", "View", "Reads", "Sizing", "Accounting", "Charting", "Metrics",
           "Comparison"]


class ColumnMetric(NamedTuple):
    """How a column is exported where it is not a gauge of its own (an amount or a count is
    ``smem_<view>_<column>``): one of the columns of one family ``smem_<view>_<name>``, its
    samples told apart by the column's ``labels`` ((label, value), ...) beside the row's."""

    name: str                   # with its unit suffix: "memory_pressure_ratio"
    help: str                   # the family's HELP (the view's title is added)
    labels: tuple = ()
    unit: str = ""              # "seconds", or "" (a ratio)
    scale: float = 1            # the column's value x this is the sample's (a % as 0-1: 0.01)
    type: str = "gauge"         # or "counter": a running total


class Column(NamedTuple):
    """One field of a view (a named tuple, as smem.options says why)."""

    key: str
    header: str
    getter: Callable[[Any], Any]
    help: str
    width: int = 8
    align: str = ">"            # ">" right, "<" left
    truncate: bool = False      # cut values to width (command, name, map)
    keep_end: bool = False      # cut, keep the end, not the start: a cgroup's path is told by its last part
    #: a list (--shm's name[pid]s), its items apart where this regular expression matches: cut
    #: at an item, ending with +N for the N left out, so a cut list does not read as the whole
    cut_words: Optional[str] = None
    is_amount: bool = False     # KiB: formatted by -k / -p
    percent_of: str = "ram"     # "ram" or "swap", for -p
    total: Optional[str] = None  # "sum", "rows", "distinct" or None (blank)
    needs: frozenset = frozenset()  # what must be read per process: "mappings", "rollup", "status"
    counters: frozenset = frozenset()  # the smaps counters (kernel keys) the getter reads
    #: under --exact, the -t total is this field of the rows' processes' ExactFigures taken as
    #: one group (distinct frames), not the sum of the rows
    exact_total: Optional[str] = None
    #: what the -t total of this column is called where a name is needed (JSON's totals object):
    #: "processes" for a count of pid rows, "users" for distinct users; the key by default
    total_key: Optional[str] = None
    #: the figure of a row its -t sum adds, where it is not the one shown (a change whose side lacks
    #: the figure shows "-", but the total of changes is still NEW's total minus OLD's)
    total_getter: Optional[Callable[[Any], Any]] = None
    #: which rows the -t total counts, where not every row has the column's figure to count (a
    #: comparison's OLD and NEW sides: the rows that side has; a side with none of them totals 0)
    total_rows: Optional[Callable[[Any], bool]] = None
    #: the -t total taken of the rows together, where a sum of rows would count one thing twice (a
    #: GPU client two rows hold, whose shared memory each row shows in full); None where absent
    total_of: Optional[Callable[[Sequence[Any]], Any]] = None
    #: last in a classic table on a terminal too narrow for it, the column wraps (at words) under
    #: itself rather than run past the edge; it is never padded (a breakdown's Source)
    wraps: bool = False
    #: a number of things (a group's processes, a process's mappings) that a comparison shows as it
    #: shows an amount, in OLD, in NEW and the change, not NEW's alone; no KiB, so no -k or -p
    compared: bool = False
    #: how -F openmetrics and smem serve export it where it is neither an amount nor a count
    metric: Optional[ColumnMetric] = None

    @property
    def changes(self):
        """Whether a comparison shows the column in OLD, in NEW and the change: an amount or a count."""
        return self.is_amount or self.compared

    @property
    def total_name(self):
        return self.total_key or self.key


def amount(key, header, getter, help, width=8, percent_of="ram", needs=(), counters=(), exact_total=None,
           total_of=None):
    return Column(key, header, getter, help, width=width, is_amount=True, percent_of=percent_of,
                  total="sum", needs=frozenset(needs), counters=frozenset(counters), exact_total=exact_total,
                  total_of=total_of)


def count(key, header, getter, help, width=5, total="sum", needs=(), total_key=None, compared=None):
    """A number of things, or an identity (a pid); ``compared`` by default where it totals as a sum
    (a number of processes changes between two readings; a pid, a ppid, an inode name a row)."""
    return Column(key, header, getter, help, width=width, total=total, needs=frozenset(needs), total_key=total_key,
                  compared=total == "sum" if compared is None else compared)


def text(key, header, getter, help, width, truncate=False, total=None, align="<", needs=(), total_key=None,
         keep_end=False, wraps=False, cut_words=None):
    return Column(key, header, getter, help, width=width, align=align, truncate=truncate, keep_end=keep_end,
                  cut_words=cut_words,
                  total=total, needs=frozenset(needs), total_key=total_key, wraps=wraps)


class Sizing(enum.Enum):
    """Whether a view needs installed RAM and the kernel image sized (smem.sizing)."""

    NEVER = "never"
    ALWAYS = "always"        # the -w view: its first two rows are the sizing's
    ASKED = "asked"          # only when -R or -K is given (--breakdown then starts with those rows)


class Reads(NamedTuple):
    """What the loader reads for a view, whatever columns are shown."""

    #: what must be read per process ("mappings", "cgroup"; "pools": zram, KSM)
    needs: frozenset = frozenset()
    #: the smaps counters the rows read (the breakdown sums PSS, the shm view's attribution)
    counters: frozenset = frozenset()
    #: what reading ``Comparison.row_key`` and ``Metrics.labels`` needs per process beyond the
    #: columns' needs (the process view's start time and name: "stat"); asked for only where
    #: they are read (a comparison, a scrape, OpenMetrics)
    identity: frozenset = frozenset()
    #: the view reads processes (the -w view reads only system files)
    processes: bool = True
    sizing: Sizing = Sizing.NEVER
    #: the app reads the shared-memory objects (smem.shared_memory) into snapshot.shared_memory
    shared_memory: bool = False
    #: -P, -U, -M and --pid apply (a view that attributes to every process refuses them)
    selection: bool = True
    #: (Needs) -> an accumulator the loader gives each process as it is read (``add``), after
    #: which the process's mappings are let go; ``rows`` then reads the snapshot's ``folded``,
    #: the value its ``result()`` made once every process was read
    fold: Optional[Callable[[Any], Any]] = None


class Accounting(NamedTuple):
    """How a view's rows add up: what -t counts, and whether --exact applies."""

    #: rows are sets of processes (``row.member_pids``): exact accounting applies
    process_groups: bool = False
    #: the rows are disjoint sets of processes, so their USS or PSS count each page once
    #: and RAM minus their sum is memory no row uses (a pie's "unused" slice)
    disjoint: bool = False
    #: --exact is refused (rows are not sets of processes) unless the view is built on it
    requires_exact: bool = False
    #: rows the -t totals count (None: all); a row that is part of another is left out
    counted: Optional[Callable[[Any], bool]] = None


class Charting(NamedTuple):
    """What a chart (--pie, --bar) of the view draws."""

    #: what a chart shows when the sort field is not an amount: PSS, or this without PSS
    measure: str = "pss"
    measure_without_pss: str = "rss"
    #: small pie slices may be folded into "other" (never the -w areas)
    folds_small_slices: bool = True
    #: what a row is called in chart notes ("processes", "areas"); the title by default
    noun: str = ""
    #: (rows, the summary's notes) -> (the rows a chart draws, its notes): where some rows are
    #: parts of others (a file in its tmpfs mount), rows that count each page once; None: the rows
    rows: Optional[Callable[[Any, Any], Any]] = None
    #: the rows are areas of RAM (their ``area``), drawn in the areas' colours (smem.area_colours)
    areas: bool = False

    def measure_for(self, pss_missing):
        """The column a chart measures when the sort column is not an amount."""
        return self.measure_without_pss if pss_missing and self.measure == "pss" else self.measure


class Metrics(NamedTuple):
    """The view as OpenMetrics samples (-F openmetrics, smem serve)."""

    #: the labels that name a row: (label, getter)
    labels: tuple = ()
    #: views whose tables an OpenMetrics scrape of this view carries too
    companions: Tuple[str, ...] = ()


class Comparison(NamedTuple):
    """How the view's rows are matched across two readings (smem diff, watch mode)."""

    #: what names a row across two snapshots: a process is its pid and start time; None: the
    #: view cannot be compared
    row_key: Optional[Callable[[Any], Any]] = None
    #: rows of two snapshots are the later one's, with rates over the interval between them (cpu):
    #: a comparison and a server's scrapes hand it the earlier one too
    interval_rows: bool = False


class View(NamedTuple):
    """A report shape: its columns (in known-fields order), defaults, row builder, and a record
    for each layer that asks something of it."""

    #: what the outputs call it (JSON's "view", metric families, -c help); --breakdown's is
    #: "system", as it is the system view broken down
    name: str
    title: str
    columns: Dict[str, Column]
    default_columns: Tuple[str, ...]
    default_sort: str
    #: (snapshots, TableOptions) -> rows; one snapshot for a report, two for a comparison
    rows: Callable[[Sequence[Any], Any], list]
    #: (snapshot, rows, TableOptions, SystemOptions) -> (RAM KiB for -p or None, lines under the table)
    summary: Optional[Callable] = None
    #: the column -a fits to what the terminal leaves (the command line, the mapping name)
    flowing_column: Optional[str] = None
    reads: Reads = Reads()
    accounting: Accounting = Accounting()
    charting: Charting = Charting()
    metrics: Metrics = Metrics()
    comparison: Comparison = Comparison()
    #: the classic table as smem 1.5 printed this view: every cell padded to its width and followed
    #: by a space, the last one too; a view smem 1.5 lacked ends its lines with no whitespace
    smem15_table: bool = False

    def default_columns_for(self, exact, working_set=False):
        """The default columns; under --exact with group USS after USS, under --wss with the
        working set last."""
        columns = list(self.default_columns)
        if exact and "guss" in self.columns and "uss" in columns and "guss" not in columns:
            columns.insert(columns.index("uss") + 1, "guss")
        if working_set:
            columns += [k for k in ("wss", "wsspss") if k in self.columns and k not in columns]
        return columns

    def sort_for(self, pss_missing):
        """The default sort: PSS, or RSS where the kernel has no PSS (as smem 1.5)."""
        return "rss" if pss_missing and self.default_sort == "pss" else self.default_sort

    @property
    def row_noun(self):
        return self.charting.noun or self.title

    @property
    def whose(self):
        """The title as the owner of the view's figures: the processes' RSS, the shared memory's."""
        return self.title + ("'" if self.title.endswith("s") else "'s")
