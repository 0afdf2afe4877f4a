"""The one table builder: select columns, sort, total, and format a cell, for every format.

:func:`make_table` turns a view's rows into a :class:`Table` the way smem 1.5
does (its column selection, its sort order with ties broken by the shown
values, its totals); every output format (smem.formats) and chart
(smem.charts) lays out that same table, and :func:`format_value` is the one
place a cell becomes text (``-k``, ``-p``, ``-`` for an absent value).
"""

import re
from typing import Any, List, NamedTuple, Optional, Sequence

from .errors import UsageError
from .options import ChartOptions, SystemOptions, TableOptions
from .recommendation import Recommendation
from .table_memo import RowMemo
from .units import human, percent
from .views.columns import Column, View

__all__ = ["Table", "make_table", "build_table", "selected_columns", "sort_column", "format_value", "cell_formatter",
           "parse_columns", "UnknownField", "CONTROLS", "field_help", "plain_cell", "percent_base", "cut_to",
           "summed_uss_note", "SUMMED_USS_NOTE"]


# Control characters (a newline in a command line) would break the table, as in ps(1).  The C1
# ones (U+0080-U+009F: CSI and OSC among them) are escape sequences to a terminal that takes 8-bit
# controls, and so are the same bytes in a name that is not UTF-8 (surrogateescape's U+DC80-U+DC9F;
# its other bytes, 0xA0-0xFF, are no control in any character set and are kept as they are).
# U+2028 and U+2029 end a line for Python's splitlines (and docutils'), and for some terminals.
# The bidirectional controls (Unicode's Bidi_Control: embeddings, overrides, isolates and marks)
# reorder what follows them on the line in a terminal that lays text out both ways: a name ending
# in U+202E would show the row's figures reversed.
BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
CONTROLS = {c: "?" for c in [*range(32), *range(127, 160), 0x2028, 0x2029, *BIDI_CONTROLS, *range(0xDC80, 0xDCA0)]}


class UnknownField(UsageError):
    """A -c/-s/--pie/--bar field the view does not have; names the known ones, in one line."""

    def __init__(self, view, names, hint=""):
        self.view = view
        self.names = names
        plural = "s" if len(names) > 1 else ""
        shown = " ".join(n.translate(CONTROLS)[:40] for n in names[:5])
        changes = [n for n in names if n.startswith("d") and n[1:] in view.columns and view.columns[n[1:]].is_amount]
        if changes:  # dpss is a column of watch mode and smem diff, not of one reading
            super().__init__(f"{changes[0]} is the change of {changes[0][1:]} between two readings: "
                             "use it with --interval SECONDS, or compare two captures with smem diff")
            return
        super().__init__(f"unknown field{plural} for the {view.name} view: {shown}{hint or _suggestion(view, names[:5])}; "
                         f"known: {' '.join(sorted(view.columns))} (-c help says what each is)")


def _suggestion(view, names):
    """" (did you mean name?)" for a field misspelt (a close spelling of one the view has), as
    for an option; "" where none is close."""
    close = [(n, m) for n in names for m in [_meant(view, n)] if m]
    if not close:
        return ""
    if len(names) == 1:
        return f" (did you mean {close[0][1]}?)"
    return " (did you mean " + ", ".join(f"{m} for {n.translate(CONTROLS)[:40]}" for n, m in close) + "?)"


def _meant(view, name):
    """The field ``name`` was meant as: the one the tables head so (PSS, CPU%: the header is what a
    user sees, and difflib finds "pss" no close spelling of "PSS"), else a close spelling, else None."""
    import difflib
    headed = {c.header.lower(): key for key, c in view.columns.items()}
    headed.update({key.lower(): key for key in view.columns})
    if name.lower() in headed:
        return headed[name.lower()]
    close = difflib.get_close_matches(name, view.columns, n=1, cutoff=0.75)
    return close[0] if close else None


def field_help(view):
    """The fields of ``view``, one a line, aligned, with what each is (``smem -c help``)."""
    width = max(len(k) for k in view.columns)
    return "".join(f"{key:<{width}}  {column.help}\n" for key, column in sorted(view.columns.items()))


def parse_columns(text):
    """smem 1.5 takes "pid user pss"; "pid,user,pss" works too."""
    return tuple(c for c in text.replace(",", " ").split() if c)


class Table(NamedTuple):
    """A view's rows made into a table: what every format lays out (smem.formats)."""

    view: View
    columns: List[Column]    # in display order (a chart's label field last)
    sort: Column             # the column sorted on
    values: List[list]       # one list of raw values per row, sorted
    rows: List[Any]          # the row objects, in the same order
    sort_values: list        # the raw sort value of each row, same order
    totals: Optional[list]   # raw totals per column, or None
    ram_kib: Optional[int]   # what -p takes amounts as a share of
    swap_kib: Optional[int]  # what -p takes swap as a share of
    notes: List[str]         # lines printed under the table
    #: --recommend's answer (a recommendation.Recommendation; its line is among the notes), for the
    #: formats that carry figures rather than lines
    recommendation: Optional[Recommendation] = None

    def column_values(self, column):
        """``column``'s raw value for each row, in the table's order (shown or not)."""
        return [column.getter(row) for row in self.rows]


def selected_columns(view: View, options: TableOptions, chart: Optional[ChartOptions] = None) -> List[Column]:
    """The Column objects to show: -c (or ``all``, or the defaults), then the chart's label field;
    an unknown field, or bars of no amount, a UsageError (app.plan: before anything is read)."""
    if options.columns == ("all",):
        # every column, the defaults first in their order; the exact ones only under --exact
        # (they cost a pagemap scan), the working set only under --wss (it is measured)
        keys = list(dict.fromkeys([*view.default_columns_for(options.exact, options.working_set), *view.columns]))
        keys = [k for k in keys if (options.exact or "exact" not in view.columns[k].needs)
                and (options.working_set or "wss" not in view.columns[k].needs)]
    else:
        keys = (list(options.columns) if options.columns
                else view.default_columns_for(options.exact, options.working_set))
    if chart is not None:
        keys.append(chart.label)
    missing = [k for k in dict.fromkeys(keys) if k not in view.columns]
    if missing:
        raise UnknownField(view, missing)
    _measured_by_wss(view, keys, options)
    columns = [view.columns[k] for k in keys]
    if chart is not None and chart.kind == "bar" and not any(c.is_amount for c in columns[:-1]):
        amounts = " ".join(k for k, c in view.columns.items() if c.is_amount)  # (bars are the amounts shown)
        raise UsageError(f"nothing to draw bars of: no memory column among the columns shown "
                         f"({' '.join(c.key for c in columns[:-1]) or 'none'}); add some with -c, from: {amounts}")
    return columns


def _measured_by_wss(view, keys, options):
    """wss and wsspss only under --wss: without it they would be smaps' Referenced, pages referenced
    since the bits were last cleared (by anyone, at any time), which is no working set."""
    if not options.working_set:
        for key in keys:
            if "wss" in view.columns[key].needs:
                raise UsageError(f"{key} is measured by --wss SECONDS (this machine's processes, once, as root): "
                                 "without it there is no working set to show")


def sort_column(view: View, options: TableOptions, default: Optional[str] = None) -> Column:
    key = options.sort or default or view.default_sort
    if key not in view.columns:
        raise UnknownField(view, [key], _source_hint(key))
    _measured_by_wss(view, [key], options)
    return view.columns[key]


def _source_hint(key):
    """" (... did you mean -S KEY ...)" where -s was given what -S reads (an existing file or
    directory, a URL: the shift key missed), else ""."""
    import os
    if "://" not in key and not os.path.exists(key):
        return ""
    return f" (-s sorts by a field; did you mean -S {key.translate(CONTROLS)}, a source to read?)"


def _order(value):
    # None sorts first; numbers before strings, so mixed columns never raise.
    if value is None:
        return (0,)
    if isinstance(value, str):
        return (2, value)
    return (1, value)


def _total(column, values):
    kind = column.total
    if kind == "sum":
        present = [v for v in values if v is not None]
        total = sum(present) if present or not values else None
        return round(total, 6) if isinstance(total, float) else total  # (no 0.30000000000000004)
    if kind == "rows":
        return len(values)
    if kind == "distinct":
        return len(set(values))
    return ""


def _column_total(column, index, entries):
    """The -t total of the ``index``-th column over (sort value, shown values, row) ``entries``."""
    if column.total_of is not None and column.total is not None:
        return column.total_of([e[2] for e in entries])
    getter = column.total_getter
    return _total(column, [getter(e[2]) for e in entries] if getter is not None else [e[1][index] for e in entries])


def _sort_entries(entries, width, reverse):
    """Sort (sort value, shown values, row) entries by the sort value, ties by the shown values
    in order, as one stable sort by all of them would: sorted once by the sort value, then only
    each run of tied values by the next key, and so on (a table has few ties, and sorting every
    row by every shown column each frame is most of what a watched table costs).  The runs are
    kept on a stack, not recursed into: a table of rows tied in every column but the last goes
    as deep as it has columns, and -c takes any number."""
    runs = [(0, len(entries), -1)] if entries else []
    while runs:
        lo, hi, level = runs.pop()
        part = entries[lo:hi]
        values = [e[0] for e in part] if level < 0 else [e[1][level] for e in part]
        order = _sorted_indexes(values, reverse)
        entries[lo:hi] = [part[i] for i in order]
        if level + 1 >= width:
            continue
        start, first, size = 0, values[order[0]], len(order)
        for n in range(1, size + 1):
            value = values[order[n]] if n < size else None
            if n == size or value != first:  # (equal as _order has it: None is only None, 1 is 1.0)
                if n - start > 1:
                    runs.append((lo + start, lo + n, level + 1))
                start, first = n, value


def _sorted_indexes(values, reverse):
    """The indexes of ``values`` in the order _order gives them (a stable sort, reversed or not),
    keyed by the values themselves where they are of one kind, so that no row holds a tuple."""
    kinds = set(map(type, values))
    if kinds <= {int, float} or (len(kinds) == 1 and kinds <= {str}):
        return sorted(range(len(values)), key=values.__getitem__, reverse=reverse)
    present = kinds - {type(None)}
    if type(None) in kinds and (present <= {int, float} or present <= {str}):
        # None first as _order has it, in their order (a stable sort of equal keys, reversed or
        # not), the rest by their values: no tuple per value (an amount absent for a few rows)
        nones = [i for i, v in enumerate(values) if v is None]
        order = sorted([i for i, v in enumerate(values) if v is not None], key=values.__getitem__, reverse=reverse)
        return order + nones if reverse else nones + order
    keys = [_order(v) for v in values]
    return sorted(range(len(values)), key=keys.__getitem__, reverse=reverse)


def build_table(view: View, rows: list, options: TableOptions, ram_kib: Optional[int], swap_kib: Optional[int],
                default_sort: Optional[str] = None, chart: Optional[ChartOptions] = None,
                notes: Sequence[str] = (), memo: Optional[RowMemo] = None) -> Table:
    """Sort as smem 1.5 does: by the sort field, ties by the row's shown values in order.
    ``memo``: the cells of the last table's rows, kept for rows whose inputs are the same
    (smem.table_memo: watch mode)."""
    columns = selected_columns(view, options, chart)
    sort = sort_column(view, options, default_sort)
    if memo is not None:
        entries = memo.entries(view, rows, columns, sort)
    else:
        # column by column (each getter mapped over the rows in C), then turned into rows
        cells = list(map(list, zip(*[map(c.getter, rows) for c in columns]))) if columns else [[] for _ in rows]
        entries = list(zip(map(sort.getter, rows), cells, rows))
    _sort_entries(entries, len(columns), options.reverse)
    if options.limit is not None:
        entries = entries[:options.limit]
    values = [e[1] for e in entries]
    totals = None
    if options.totals:
        counted_in_totals = view.accounting.counted
        summed = entries if counted_in_totals is None else [e for e in entries if counted_in_totals(e[2])]
        totals = [_column_total(c, i, summed if c.total_rows is None else [e for e in summed if c.total_rows(e[2])])
                  for i, c in enumerate(columns)]
    return Table(view, columns, sort, values, [e[2] for e in entries], [e[0] for e in entries],
                 totals, ram_kib, swap_kib, list(notes))


def make_table(snapshots: Sequence[Any], view: View, options: TableOptions, system: SystemOptions = SystemOptions(),
               chart: Optional[ChartOptions] = None, memo: Optional[RowMemo] = None) -> Table:
    """Rows of ``view`` from ``snapshots`` (a sequence; the newest last), selected, sorted, totalled;
    ``memo`` keeps the cells of rows that did not change from one table to the next (watch mode)."""
    snapshots = tuple(snapshots)
    snapshot = snapshots[-1]
    rows = view.rows(snapshots, options)
    ram = system.ram_kib if system.ram_kib is not None else snapshot.mem_total
    notes = []
    if view.summary is not None:
        view_ram, notes = view.summary(snapshot, rows, options, system)
        ram = view_ram if view_ram is not None else ram
    if chart is not None and view.charting.rows is not None:
        rows, notes = view.charting.rows(rows, notes)
    recommendation = next((n for n in notes if isinstance(n, Recommendation)), None)
    table = build_table(view, rows, options, ram, snapshot.swap_total, view.sort_for(snapshot.pss_missing), chart,
                        [str(n) for n in notes], memo)
    if recommendation is not None:
        table = table._replace(recommendation=recommendation)
    if snapshot.no_smaps and table.totals is not None and view.reads.processes:
        # no process could be measured (a kernel without smaps): the sums are unknown, not 0
        table = table._replace(totals=[None if c.total == "sum" else t for c, t in zip(table.columns, table.totals)])
    if snapshot.exact is not None and table.totals is not None and view.accounting.process_groups:
        table = _exact_totals(table, snapshot.exact)
    return table


#: said (on standard error) under a table of groups whose USS is summed (smem.views.groups)
SUMMED_USS_NOTE = ("a group's USS sums its processes' USS, which leaves out memory they share only with each "
                   "other; --exact (root) adds GUSS, what quitting the whole group frees")


#: added to it under a table of a capture: a board's (smemcap.sh's, C smemcap's) has no frames
CAPTURED_FRAMES = " (of a capture, one smem capture --exact made as root: smemcap.sh's have no page frames)"


def summed_uss_note(table: Table, exact: bool, captured: bool = False) -> Optional[str]:
    """:data:`SUMMED_USS_NOTE` where ``table`` shows USS of a row of several processes and ``exact``
    (--exact, asked or implied) is not: its GUSS would count what that sum leaves out (``captured``:
    of a capture, which must hold the frames)."""
    if exact or not table.view.accounting.process_groups or not any(c.key == "uss" for c in table.columns):
        return None
    several = any(len(row.member_pids) > 1 for row in table.rows)
    return SUMMED_USS_NOTE + (CAPTURED_FRAMES if captured else "") if several else None


def _exact_totals(table, exact):
    """``table`` with, under --exact, the totals of all the rows' processes as one group: distinct
    frames, not sums (a new Table: the one made is a value)."""
    pids = sorted({pid for row in table.rows for pid in row.member_pids})
    figures = exact.groups({"all": pids})["all"]
    totals = list(table.totals)
    for i, column in enumerate(table.columns):
        if column.exact_total is not None:
            value = getattr(figures, column.exact_total)
            totals[i] = int(round(value)) if isinstance(value, float) else value
    return table._replace(totals=totals, notes=[*table.notes, "totals: the processes of all rows as one group, "
                                                "each frame counted once (--exact)"])




def format_value(column: Column, value: Any, options: TableOptions, table: Table) -> str:
    """A cell as people read it: ``-`` when absent, ``?`` for control characters, -k / -p on amounts."""
    return cell_formatter(column, options, table)(value)


def cell_formatter(column: Column, options: TableOptions, table: Table):
    """:func:`format_value` for one column, its choices made once (a table of 1,500 rows formats
    10,000 cells)."""
    if column.is_amount and options.abbreviate:
        return lambda value: "-" if value is None else value.translate(CONTROLS) if isinstance(value, str) \
            else human(value)
    if column.is_amount and options.percent:
        of = percent_base(column, table)
        return lambda value: "-" if value is None else value.translate(CONTROLS) if isinstance(value, str) \
            else percent(value, of)
    return plain_cell


def percent_base(column: Column, table: Table):
    """What -p takes ``column``'s amounts as a share of (KiB): swap's of SwapTotal, the rest of
    RAM; None or 0 when unknown or absent (no swap), and then a share is no figure at all."""
    return table.swap_kib if column.percent_of == "swap" else table.ram_kib


#: where a value cut to its column's width lost its start (a column that keeps the end)
CUT_MARK = "..."


def cut_to(column: Column, text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: its start, as smem 1.5 cuts a command or a map; its
    end after :data:`CUT_MARK` where ``column`` keeps the end (a cgroup's last part names it: cut at
    the end, a service's cgroup and the cgroups under it would look the same)."""
    if len(text) <= width:
        return text
    if column.cut_words:
        return _cut_words(text, width, column.cut_words)
    if not column.keep_end:
        return text[:width]
    if width <= len(CUT_MARK):
        return text[len(text) - width:]
    return CUT_MARK + text[len(text) - width + len(CUT_MARK):]


def _cut_words(text, width, between):
    """The first items of ``text`` (apart where ``between`` matches) that fit in ``width`` with
    ``+N``, N the items left out."""
    words = re.split(between, text)
    for kept in range(len(words) - 1, -1, -1):
        cut = " ".join(words[:kept] + [f"+{len(words) - kept}"])
        if len(cut) <= width:
            return cut
    return text[:width]


def plain_cell(value):
    """A cell without -k or -p: ``-`` when absent, ``str`` of it, control characters as ``?``."""
    if value is None:
        return "-"
    if type(value) is str:
        return value.translate(CONTROLS)
    if type(value) is int:
        return str(value)
    return value.translate(CONTROLS) if isinstance(value, str) else str(value)
