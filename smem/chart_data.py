"""What smem 1.5's ``--pie`` and ``--bar`` show: the slices and bars of a table (charts.py draws them).

The meaning is smem 1.5's: a pie of the sort field, one slice per row labelled
by the ``--pie`` field, small slices folded into ``other`` and an ``unused``
slice for the RAM no process uses; bars of the view's memory columns for each
row, labelled by the ``--bar`` field.  What differs is what smem 1.5 got wrong:

- an empty result is an error ("nothing to chart"), not an IndexError;
- a sort field that is not an amount of memory (``-s name``, ``-s pid``, the
  ``-w`` view's ``order``) orders the rows but the slices show the view's own
  memory measure (PSS, RSS where the kernel has no PSS, ``used`` for ``-w``);
- ``unused`` (RAM minus the sum of the slices) is drawn only where it means
  something: process, user and program views charting USS or PSS, which count each
  page once.  RSS and VSS count shared pages many times, swap is not RAM,
  mappings overlap the processes, and the ``-w`` areas already add up to RAM;
- without ``unused`` the pie is the sum of its slices, and ``other`` folds the
  slices small relative to that sum; a lone small slice keeps its own name;
- bars have their axis in KiB, MiB or GiB by magnitude (``-p``: percent of RAM;
  swap of swap), use a colour cycle with no white, and fold as pies do: the rows
  too small to see, and those beyond the largest MAX_BARS, are one ``other`` bar;
- absent values (None) are left out and said to be missing, never drawn as 0;
- a row at 0 (every figure of it 0 or absent) is no slice and no bar: both charts leave it out
  and name it once in a note (a breakdown's empty pools, a process without swap).

No matplotlib here: these are values (PieData, BarData) a test or a drawing reads.
"""

from dataclasses import dataclass
from typing import List, Optional, Tuple

from .errors import SmemError
from .report import CONTROLS
from .units import human

__all__ = ["pie_data", "bar_data", "PieData", "BarData", "FOLD_TOGETHER", "FOLD_EACH", "MAX_BARS", "drawable",
           "literal", "sparse_series", "absent_marks"]

#: smem 1.5's folding rule: the smallest slices go into "other" while together
#: they are under 2% of the pie, or each is under 0.5% of it.
FOLD_TOGETHER = 0.02
FOLD_EACH = 0.005

#: Fields whose sum over disjoint rows of processes counts each page of RAM at
#: most once, so that RAM minus their sum is memory no row uses.
RAM_LIKE = ("uss", "pss")

#: "unused" is drawn while it is at most this share of RAM; beyond, the pie is the used part
UNUSED_DRAWN_UP_TO = 0.5

#: at most this many bars (rows) are drawn; the rest are one "other" bar
MAX_BARS = 25

LABEL_WIDTH = 40


def _label(value, column):
    """A readable label: control characters shown as ?, long ones cut with an ellipsis.

    Mapping names are paths, whose end says most, so they lose their start; so does a cgroup's
    path, as in the table (its column's keep_end: the services under one slice share its start).
    """
    if value is None:
        return "-"
    text = drawable(str(value))
    if len(text) > LABEL_WIDTH:
        if column.key == "map" or column.keep_end:
            text = "\u2026" + text[-(LABEL_WIDTH - 1):]
        else:
            text = text[:LABEL_WIDTH - 1] + "\u2026"
    return literal(text)


def drawable(text):
    """Bytes that are not UTF-8 (kept as surrogates) cannot be drawn: show U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace").translate(CONTROLS)


def literal(text):
    """A $ would start matplotlib's mathtext."""
    return text.replace("$", r"\$")


def _draw_order(table):
    """(shown values, sort value, row) as charts show them: amounts largest first (smem 1.5),
    other fields in order.

    The table is sorted as the user asked (ascending, -r descending); for an
    amount sort the chart shows it the other way round, so -r still flips it.
    """
    rows = list(zip(table.values, table.sort_values, table.rows))
    return rows[::-1] if table.sort.is_amount else rows


def _labels(entries, column):
    """Labels for (label value, row) entries of ``column``; a label shown twice gets its row's pid: postgres (1234)."""
    labels = [_label(value, column) for value, _ in entries]
    seen = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    result = []
    for label, (_, row) in zip(labels, entries):
        pids = getattr(row, "member_pids", ())
        if seen[label] > 1 and len(pids) == 1:
            label = f"{label} ({pids[0]})"
        result.append(label)
    return result


def _source_line(snapshot):
    source = snapshot.source
    machine = source.machine()
    parts = [drawable(source.description or "unknown source")]
    if machine.hostname:
        parts.append(f"host {drawable(machine.hostname)}")
    if machine.time:
        parts.append(drawable(machine.time))
    return literal(", ".join(parts))


def _amount_text(kib, column, table, options):
    """An amount as a chart writes it: -p a percentage; else human units (23.5G)."""
    if options.percent:
        total = table.swap_kib if column.percent_of == "swap" else table.ram_kib
        return "%.2f%%" % (100.0 * kib / total) if total else "-"
    return human(kib)


@dataclass(frozen=True)
class PieData:
    """What a pie draws: made once by pie_data, its sequences tuples (a drawing reads, none changes)."""
    title: str
    subtitle: str
    labels: Tuple[str, ...]       # slice labels in drawing order ("unused" first, "other" last)
    values: Tuple[int, ...]       # KiB, same order
    kinds: Tuple[str, ...]        # "row", "unused" or "other" per slice
    legend: Tuple[str, ...]
    notes: Tuple[str, ...]
    colours: Optional[Tuple[Optional[str], ...]] = None  # per slice: an area's colour; None: the drawing's own


def _pie_values(table, snapshot):
    """(value column, [(value, label value, row) in drawing order]) for the pie."""
    if table.sort.is_amount:
        return table.sort, [(sort_value, values[-1], row) for values, sort_value, row in _draw_order(table)]
    # the rows keep their order; the slices show the view's own measure, shown or not
    column = table.view.columns[table.view.charting.measure_for(snapshot.pss_missing)]
    return column, [(value, values[-1], row)
                    for values, value, row in zip(table.values, table.column_values(column), table.rows)]


def _smallest(values, whole):
    """The indices of the smallest ``values`` smem 1.5 folds into "other": while together under
    FOLD_TOGETHER of ``whole``, or each under FOLD_EACH of it; never a lone one."""
    by_size = sorted(range(len(values)), key=lambda i: values[i], reverse=True)
    folded, total = [], 0
    while by_size:
        value = values[by_size[-1]]
        if total + value < whole * FOLD_TOGETHER or value < whole * FOLD_EACH:
            total += value
            folded.append(by_size.pop())
        else:
            break
    return set(folded) if len(folded) > 1 else set()


#: at most this many rows at 0 are named in the note that leaves them out; more are counted
ZERO_NAMED = 12


def _zero_note(labels, noun, count=None):
    """The note that names the rows left out at 0 (``labels``, as drawn), or counts them (``count``
    rows: more than the labels where one stands for many)."""
    count = len(labels) if count is None else count
    named = ", ".join(label.replace("\\$", "$") for label in labels)  # (notes are made literal when drawn)
    return f"zero, not drawn: {named if count <= ZERO_NAMED else f'{count} {noun}'}"


def pie_data(table, options, snapshot):
    """The slices of smem 1.5's pie, with its bugs fixed (see the module docstring)."""
    view = table.view
    if not table.values:
        raise SmemError(f"nothing to chart: no {view.title} match")
    column, pairs = _pie_values(table, snapshot)
    label_column = table.columns[-1]
    notes = []
    if options.sort and not table.sort.is_amount:
        notes.append(f"sorted by {table.sort.key}, which is not an amount: slices show {column.header}")
    missing = sum(1 for value, _, _ in pairs if value is None)
    if missing:
        notes.append(f"{missing} of {len(pairs)} without {column.header} (absent) left out")
    below = [(label, value) for value, label, _ in pairs if value is not None and value < 0]
    if below:  # (a breakdown's remainder: the table's note says why; a slice cannot be below zero)
        notes.append("below zero, not drawn: " + ", ".join(
            f"{label} ({'-' + _amount_text(-value, column, table, options)})" for label, value in below))
    drawn = [(value, label, row) for value, label, row in pairs if value is not None and value > 0]
    zero = [(label, row) for value, label, row in pairs if value == 0]
    if zero and drawn:
        notes.append(_zero_note(_labels(zero, label_column), view.row_noun))
    if not drawn:
        why = "absent from this source" if missing == len(pairs) else "0 for all of them"
        raise SmemError(f"nothing to chart: the {view.whose} {column.header} is {why}")
    rows = list(zip((value for value, _, _ in drawn), _labels([(label, row) for _, label, row in drawn], label_column)))
    used = sum(value for value, _ in rows)
    ram = table.ram_kib
    unused = 0
    not_read = sum(map(len, snapshot.unreadable.values()))
    if view.accounting.disjoint and column.key in RAM_LIKE and ram and ram > used:
        unused = ram - used
        if unused > ram * UNUSED_DRAWN_UP_TO or not_read:
            # a lightly loaded machine: a slice of 99% would leave the rows unreadable (not "unused":
            # it is free memory, page cache and the kernel's, which free(1) counts apart; a desktop
            # user read 21.7G "unused" beside free's 18.3G), and so would the processes not read
            read = " read" if not_read else ""
            held = (f"free memory, page cache, the kernel's and the {not_read} process{'es' * (not_read > 1)} not read"
                    if not_read else "free memory, page cache and the kernel's")
            notes.append(f"RAM not in {'the ' * bool(not_read)}processes{read} {_amount_text(unused, column, table, options)}"
                         f" ({100.0 * unused / ram:.1f}% of {human(ram)}: {held}) not drawn: the pie is the "
                         f"{human(used)} the processes{read} hold")
            unused = 0
    whole = used + unused

    # Fold the smallest slices, as smem 1.5 does, but never the five -w areas (each is part of
    # the answer to "where does the RAM go").
    folded = _smallest([value for value, _ in rows], whole) if view.charting.folds_small_slices else set()

    slices = [("unused", unused, "unused", None)] if unused else []
    slices += [(label, value, "row", _colour(view, drawn[i][2]))
               for i, (value, label) in enumerate(rows) if i not in folded]
    if folded:
        slices.append(("other", sum(rows[i][0] for i in folded), "other", None))
        notes.append(f"other: {len(folded)} {view.row_noun} under {FOLD_EACH:.1%} each "
                     f"or {FOLD_TOGETHER:.0%} together")
    labels, values, kinds, colours = (list(t) for t in zip(*slices))
    legend = [f"{label}  {_amount_text(value, column, table, options)}"
              for label, value in zip(labels, values)]
    title = f"{view.title.capitalize()}: {column.header} by {table.columns[-1].header.lower()}"
    notes.extend(drawable(n) for n in getattr(table, "notes", ()))
    return PieData(title, _source_line(snapshot), tuple(labels), tuple(values), tuple(kinds), tuple(legend),
                   tuple(notes), tuple(colours) if view.charting.areas else None)


def _colour(view, row):
    """The colour a row is drawn in: its area's (smem.area_colours) in the views of areas, else None."""
    if not view.charting.areas:
        return None
    from .area_colours import area_colour
    return area_colour(row.area)


def _bars_folded(table, rows, snapshot):
    """The indices of ``rows`` (in drawing order) that one "other" bar stands for: those a pie
    would fold (of the sort field if an amount, else the view's measure), and those beyond the
    largest MAX_BARS.  The -w areas are never folded."""
    view = table.view
    if not view.charting.folds_small_slices:
        return set()
    measure = table.sort if table.sort.is_amount else view.columns[view.charting.measure_for(snapshot.pss_missing)]
    sizes = [abs(measure.getter(row) or 0) for _, _, row in rows]
    folded = _smallest(sizes, sum(sizes))
    by_size = sorted((i for i in range(len(rows)) if i not in folded), key=lambda i: sizes[i], reverse=True)
    folded.update(by_size[MAX_BARS:])
    return folded if len(folded) > 1 else set()


@dataclass(frozen=True)
class BarData:
    """What a bar chart draws: made once by bar_data, its sequences tuples."""
    title: str
    subtitle: str
    labels: Tuple[str, ...]                     # one per row, in drawing order
    series: Tuple[str, ...]                     # column headers
    values: Tuple[Tuple[Optional[float], ...], ...]  # per series, per row; None where absent
    axis_label: str
    notes: Tuple[str, ...]
    colours: Optional[Tuple[Optional[str], ...]] = None  # per row: an area's colour; None: the series'


def sparse_series(values):
    """The series (indexes into ``values``: per series, per row) that have a figure on fewer than
    half the rows that have any: a column most rows have no part in (-w's Saved, on KSM's row
    only, or on none without KSM), whose absence is no news on each row.  None of them where
    every series would be."""
    rows = [i for i in range(len(values[0]) if values else 0) if any(v[i] is not None for v in values)]
    sparse = {n for n, v in enumerate(values) if len(values) > 1 and sum(v[i] is not None for i in rows) < len(rows) / 2}
    return sparse if len(sparse) < len(values) else set()


def absent_marks(values):
    """Where a bar chart says n/a: ``(rows, bars)``, the rows marked once (no series but the sparse
    ones has a figure there: every bar but theirs absent) and the (series, row) of each other
    absent bar; a sparse series's absences are not marked (:func:`sparse_series`)."""
    sparse = sparse_series(values)
    kept = [n for n in range(len(values)) if n not in sparse]
    count = len(values[0]) if values else 0
    rows = {i for i in range(count) if len(values) > 1 and all(values[n][i] is None for n in kept)}
    bars = {(n, i) for n in kept for i in range(count) if values[n][i] is None and i not in rows}
    return rows, bars


def _not_zero(labels, raw, headers, view, notes, folded):
    """The indexes of the rows (``labels``; ``raw`` per series, per row) not at 0: a row at 0 (a
    figure 0, none other than 0: empty bars under a label) is named in ``notes`` as the pie names
    its own; a row with no figure at all stays, marked n/a (:func:`absent_marks`).  ``folded``:
    the labels of the rows the last, "other", stands for (none: no such bar); at 0 it goes too, and so
    does its note, and the note names those rows, not "other (4 mappings)", which says not which."""
    zero = [i for i in range(len(labels)) if any(v[i] == 0 for v in raw) and all(v[i] in (0, None) for v in raw)]
    if not zero:
        return list(range(len(labels)))
    if len(zero) == len(labels):
        verb = "is" if len(headers) == 1 else "are"
        raise SmemError(f"nothing to chart: the {view.whose} {', '.join(headers)} {verb} 0 for all of them")
    named = [labels[i] for i in zero]
    if folded and zero[-1] == len(labels) - 1:
        notes.pop()  # (the "other" note: that bar is not drawn)
        named[-1:] = folded
    notes.append(_zero_note(named, view.row_noun))
    return [i for i in range(len(labels)) if i not in set(zero)]


_UNITS = (("KiB", 1), ("MiB", 1024), ("GiB", 1024 ** 2), ("TiB", 1024 ** 3), ("PiB", 1024 ** 4))


def _zero_columns_dropped(series, raw, notes):
    """(series, raw) less the columns that are 0 on every row (Swap on a machine without swap):
    a legend entry with no bar; named in ``notes``.  A chart of nothing but such columns keeps them
    (the rows at 0 were refused before)."""
    zero = [n for n, values in enumerate(raw) if values and all(v == 0 for v in values)]
    if not zero or len(zero) == len(raw):
        return series, raw
    columns = list(series.items())
    notes.append(", ".join(columns[n][1][1].header for n in zero) + ": 0 on every row, not drawn")
    return ({key: entry for n, (key, entry) in enumerate(columns) if n not in zero},
            [values for n, values in enumerate(raw) if n not in zero])


def bar_data(table, options, snapshot):
    """smem 1.5's bars: every memory column shown, for each row, labelled by --bar's field."""
    view = table.view
    if not table.values:
        raise SmemError(f"nothing to chart: no {view.title} match")
    label_column = table.columns[-1]
    series = {}
    for index, column in enumerate(table.columns[:-1]):
        if column.is_amount and column.key not in series:
            series[column.key] = (index, column)
    rows = _draw_order(table)
    folded = _bars_folded(table, rows, snapshot)
    kept = [entry for i, entry in enumerate(rows) if i not in folded]
    labels = _labels([(values[-1], row) for values, _, row in kept], label_column)
    raw = [[values[index] for values, _, _ in kept] for index, _ in series.values()]
    notes = []
    if folded:
        labels.append(f"other ({len(folded)} {view.row_noun})")
        for column_values, (index, column) in zip(raw, series.values()):  # their total, as -t's
            known = [rows[i][0][index] for i in folded if rows[i][0][index] is not None]
            column_values.append(sum(known) if known and column.total == "sum" else None)
        notes.append(f"other: {len(folded)} {view.row_noun} under {FOLD_EACH:.1%} each or {FOLD_TOGETHER:.0%} "
                     f"together, or beyond the largest {MAX_BARS}")
    colours = [_colour(view, row) for _, _, row in kept] + ([None] if folded else [])
    folded_labels = _labels([(rows[i][0][-1], rows[i][2]) for i in sorted(folded)], label_column)
    shown = _not_zero(labels, raw, [c.header for _, c in series.values()], view, notes, folded_labels)
    labels, colours, raw = [labels[i] for i in shown], [colours[i] for i in shown], [[v[i] for i in shown] for v in raw]
    series, raw = _zero_columns_dropped(series, raw, notes)
    sparse = sparse_series(raw)
    for n in sorted(sparse):
        rows_with = [label for label, v in zip(labels, raw[n]) if v is not None]
        only = ", ".join(rows_with) if len(rows_with) <= 3 else f"{len(rows_with)} of {len(labels)} rows"
        header = list(series.values())[n][1].header
        notes.append(f"{header}: drawn only for {only}" if rows_with else f"{header}: no figure on any row")
    absent = sum(1 for n, values in enumerate(raw) if n not in sparse for v in values if v is None)
    if absent:
        notes.append(f"{absent} absent value{'s' if absent > 1 else ''} not drawn (n/a)")
    headers = [column.header for _, column in series.values()]
    if options.percent:
        values = []
        for (_, column), column_values in zip(series.values(), raw):
            total = table.swap_kib if column.percent_of == "swap" else table.ram_kib
            if not total:
                notes.append(f"{column.header}: no {column.percent_of} total, not drawn")
            values.append([None if v is None or not total else 100.0 * v / total for v in column_values])
        has_swap = any(c.percent_of == "swap" for _, c in series.values())
        has_ram = any(c.percent_of != "swap" for _, c in series.values())
        if has_swap and has_ram:
            axis = "% of RAM (Swap: % of swap)"
        else:
            axis = "% of swap" if has_swap else "% of RAM"
    else:
        largest = max((abs(v) for values in raw for v in values if v is not None), default=0)
        for unit, factor in _UNITS:  # in human units, as the pie's legend: 117.2 MiB, not 120000
            if largest < factor * 1024:
                break
        values = [[None if v is None else v / factor for v in column_values] for column_values in raw]
        axis = f"memory ({unit})"
    title = f"{view.title.capitalize()}: {', '.join(headers)} by {label_column.header.lower()}"
    if table.sort.key not in series and (options.sort or table.sort.is_amount):
        title += f" (sorted by {table.sort.header.lower()})"
    notes.extend(drawable(n) for n in getattr(table, "notes", ()))
    return BarData(title, _source_line(snapshot), tuple(labels), tuple(headers), tuple(map(tuple, values)), axis,
                   tuple(notes), tuple(colours) if view.charting.areas else None)

