"""Charts: smem 1.5's ``--pie`` and ``--bar``, drawn with matplotlib.

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
- absent values (None) are left out and said to be missing, never drawn as 0.

matplotlib is imported only inside the drawing functions: text reports never
pay for it.  Files are written through :class:`matplotlib.figure.Figure`
without pyplot (no GUI backend is touched); pyplot is used only to open a
window, and only when there is a display.
"""

import os
from dataclasses import dataclass
from typing import List, Optional

from .errors import SmemError, UsageError
from .extras import require
from .output import output_file
from .report import CONTROLS
from .units import human

__all__ = ["show_chart", "pie_data", "bar_data", "PieData", "BarData", "supported_formats",
           "FOLD_TOGETHER", "FOLD_EACH"]

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
#: the tallest bar chart, in inches (1,600 px at 100 dpi)
MAX_BAR_HEIGHT = 16

LABEL_WIDTH = 40
#: where the pie sits in the figure (left, bottom, width, height); the legend is to its right
PIE_BOX = (0.04, 0.06, 0.54, 0.76)
UNUSED_COLOUR = "#d9d9d9"
OTHER_COLOUR = "#8c8c8c"


def supported_formats():
    """The file formats matplotlib can write here, as {extension: description}."""
    from matplotlib.figure import Figure
    return dict(sorted(Figure().canvas.get_supported_filetypes().items()))


def _output_format(path):
    extension = os.path.splitext(path)[1][1:].lower()
    formats = supported_formats()
    if extension not in formats:
        what = f"unknown chart format {extension!r}" if extension else "no file extension"
        raise UsageError(f"cannot save a chart as {path!r}: {what}; "
                         f"use one of: {', '.join(formats)}")
    return extension


def _label(value, key):
    """A readable label: control characters shown as ?, long ones cut with an ellipsis.

    Mapping names are paths, whose end says most, so they lose their start.
    """
    if value is None:
        return "-"
    text = _drawable(str(value))
    if len(text) > LABEL_WIDTH:
        if key == "map":
            text = "\u2026" + text[-(LABEL_WIDTH - 1):]
        else:
            text = text[:LABEL_WIDTH - 1] + "\u2026"
    return _literal(text)


def _drawable(text):
    """Bytes that are not UTF-8 (kept as surrogates) cannot be drawn: show U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace").translate(CONTROLS)


def _literal(text):
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


def _labels(entries, key):
    """Labels for (label value, row) entries; a label shown twice gets its row's pid: postgres (1234)."""
    labels = [_label(value, key) for value, _ in entries]
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
    parts = [_drawable(source.description or "unknown source")]
    if machine.hostname:
        parts.append(f"host {_drawable(machine.hostname)}")
    if machine.time:
        parts.append(_drawable(machine.time))
    return _literal(", ".join(parts))


def _amount_text(kib, column, table, options):
    """An amount as a chart writes it: -p a percentage; else human units (23.5G)."""
    if options.percent:
        total = table.swap_kib if column.percent_of == "swap" else table.ram_kib
        return "%.2f%%" % (100.0 * kib / total) if total else "-"
    return human(kib)


@dataclass
class PieData:
    title: str
    subtitle: str
    labels: List[str]       # slice labels in drawing order ("unused" first, "other" last)
    values: List[int]       # KiB, same order
    kinds: List[str]        # "row", "unused" or "other" per slice
    legend: List[str]
    notes: List[str]


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


def pie_data(table, options, snapshot):
    """The slices of smem 1.5's pie, with its bugs fixed (see the module docstring)."""
    view = table.view
    if not table.values:
        raise SmemError(f"nothing to chart: no {view.title} match")
    column, pairs = _pie_values(table, snapshot)
    label_key = table.columns[-1].key
    notes = []
    if options.sort and not table.sort.is_amount:
        notes.append(f"sorted by {table.sort.key}, which is not an amount: slices show {column.header}")
    missing = sum(1 for value, _, _ in pairs if value is None)
    if missing:
        notes.append(f"{missing} of {len(pairs)} without {column.header} (absent) left out")
    drawn = [(value, label, row) for value, label, row in pairs if value is not None and value > 0]
    if not drawn:
        why = "absent from this source" if missing == len(pairs) else "0 for all of them"
        raise SmemError(f"nothing to chart: the {view.title}' {column.header} is {why}")
    rows = list(zip((value for value, _, _ in drawn), _labels([(label, row) for _, label, row in drawn], label_key)))
    used = sum(value for value, _ in rows)
    ram = table.ram_kib
    unused = 0
    if view.accounting.disjoint and column.key in RAM_LIKE and ram and ram > used:
        unused = ram - used
        if unused > ram * UNUSED_DRAWN_UP_TO:
            # a lightly loaded machine: a slice of 99% would leave the rows unreadable
            notes.append(f"unused {_amount_text(unused, column, table, options)} "
                         f"({100.0 * unused / ram:.1f}% of {human(ram)} RAM) not drawn: "
                         f"the pie is the {human(used)} in use")
            unused = 0
    whole = used + unused

    # Fold the smallest slices, as smem 1.5 does, but never the five -w areas (each is part of
    # the answer to "where does the RAM go").
    folded = _smallest([value for value, _ in rows], whole) if view.charting.folds_small_slices else set()

    slices = [("unused", unused, "unused")] if unused else []
    slices += [(label, value, "row") for i, (value, label) in enumerate(rows) if i not in folded]
    if folded:
        slices.append(("other", sum(rows[i][0] for i in folded), "other"))
        notes.append(f"other: {len(folded)} {view.row_noun} under {FOLD_EACH:.1%} each "
                     f"or {FOLD_TOGETHER:.0%} together")
    labels, values, kinds = (list(t) for t in zip(*slices))
    legend = [f"{label}  {_amount_text(value, column, table, options)}"
              for label, value in zip(labels, values)]
    title = f"{view.title.capitalize()}: {column.header} by {table.columns[-1].header.lower()}"
    notes.extend(_drawable(n) for n in getattr(table, "notes", ()))
    return PieData(title, _source_line(snapshot), labels, values, kinds, legend, notes)


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


@dataclass
class BarData:
    title: str
    subtitle: str
    labels: List[str]                   # one per row, in drawing order
    series: List[str]                   # column headers
    values: List[List[Optional[float]]]  # per series, per row; None where absent
    axis_label: str
    notes: List[str]


_UNITS = (("KiB", 1), ("MiB", 1024), ("GiB", 1024 ** 2), ("TiB", 1024 ** 3), ("PiB", 1024 ** 4))


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
    if not series:
        shown = " ".join(c.key for c in table.columns[:-1]) or "none"
        amounts = " ".join(k for k, c in view.columns.items() if c.is_amount)
        raise UsageError(f"nothing to draw bars of: no memory column among the columns shown ({shown}); "
                         f"add some with -c, from: {amounts}")
    rows = _draw_order(table)
    folded = _bars_folded(table, rows, snapshot)
    kept = [entry for i, entry in enumerate(rows) if i not in folded]
    labels = _labels([(values[-1], row) for values, _, row in kept], label_column.key)
    raw = [[values[index] for values, _, _ in kept] for index, _ in series.values()]
    notes = []
    if folded:
        labels.append(f"other ({len(folded)} {view.row_noun})")
        for column_values, (index, column) in zip(raw, series.values()):  # their total, as -t's
            known = [rows[i][0][index] for i in folded if rows[i][0][index] is not None]
            column_values.append(sum(known) if known and column.total == "sum" else None)
        notes.append(f"other: {len(folded)} {view.row_noun} under {FOLD_EACH:.1%} each or {FOLD_TOGETHER:.0%} "
                     f"together, or beyond the largest {MAX_BARS}")
    absent = sum(1 for values in raw for v in values if v is None)
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
    notes.extend(_drawable(n) for n in getattr(table, "notes", ()))
    return BarData(title, _source_line(snapshot), labels, headers, values, axis, notes)


def _colours(name, count, skip=()):
    from matplotlib import colormaps
    palette = [c for i, c in enumerate(colormaps[name].colors) if i not in skip]
    return [palette[i % len(palette)] for i in range(count)]


def slice_colours(count):
    """``count`` distinct colours for pie slices: tab20, tab20b and tab20c without their greys
    (they stand for "other" and "unused"), then evenly spaced hues; never one twice."""
    from matplotlib import colormaps
    palette = [c for i, c in enumerate(colormaps["tab20"].colors) if i not in (14, 15)]
    palette += list(colormaps["tab20b"].colors)
    palette += [c for i, c in enumerate(colormaps["tab20c"].colors) if i < 16]
    if count <= len(palette):
        return palette[:count]
    hsv = colormaps["hsv"]
    return [tuple(hsv(i / count)[:3]) for i in range(count)]


def draw_pie(figure, data):
    """Draw ``data`` (a :class:`PieData`) on a matplotlib Figure."""
    rows = slice_colours(data.kinds.count("row"))
    colours = []
    for kind in data.kinds:
        colours.append(UNUSED_COLOUR if kind == "unused" else OTHER_COLOUR if kind == "other" else rows.pop(0))
    whole = sum(data.values)
    # Name the slices big enough to hold a name; the legend names them all.
    shown = [label if value >= whole * 0.02 or kind != "row" else ""
             for label, value, kind in zip(data.labels, data.values, data.kinds)]
    explode = [0.05 if kind == "unused" else 0 for kind in data.kinds]
    figure.set_size_inches(11, 7)
    ax = figure.add_axes(PIE_BOX)
    wedges, _, _ = ax.pie(
        data.values, labels=shown, colors=colours, explode=explode, startangle=90,
        counterclock=False, autopct=lambda p: f"{p:.1f}%" if p >= 3 else "", pctdistance=0.75,
        wedgeprops=dict(linewidth=0.8, edgecolor="white"), textprops=dict(fontsize=9))
    ax.set_aspect("equal")
    figure.legend(wedges, data.legend, loc="center left", bbox_to_anchor=(0.6, 0.47),
                  fontsize=8, frameon=False, title=None)
    _titles(figure, data, centre=PIE_BOX[0] + PIE_BOX[2] / 2)  # over the pie, not pie and legend


def draw_bar(figure, data):
    """Draw ``data`` (a :class:`BarData`) as grouped horizontal bars on a matplotlib Figure."""
    import numpy
    rows, count = len(data.labels), len(data.series)
    height = 0.8 / count
    figure.set_size_inches(11, min(max(2.2 + rows * max(0.32, 0.16 * count), 4.5), MAX_BAR_HEIGHT))
    ax = figure.add_subplot(1, 1, 1)
    positions = numpy.arange(rows)
    for n, (header, values, colour) in enumerate(zip(data.series, data.values, _colours("tab10", count))):
        offsets = positions - 0.4 + height * (n + 0.5)
        widths = [numpy.nan if v is None else v for v in values]
        ax.barh(offsets, widths, height, color=colour, label=header)
        for y, v in zip(offsets, values):
            if v is None:
                ax.text(0, y, " n/a", va="center", ha="left", fontsize=7, color="#555555")
    ax.set_yticks(positions)
    ax.set_yticklabels(data.labels, fontsize=8)
    ax.set_ylim(rows - 0.5, -0.5)  # first row on top
    ax.set_xlabel(data.axis_label)
    ax.grid(axis="x", color="#e0e0e0", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    _titles(figure, data)
    inches = figure.get_size_inches()[1]
    figure.tight_layout(rect=(0, (0.3 if data.notes else 0.05) / inches, 1, 1 - 0.75 / inches))


def _titles(figure, data, centre=0.5):
    """Title, source line under it, notes at the foot: placed in points, whatever the height."""
    from matplotlib.transforms import offset_copy
    figure.text(centre, 1, data.title, ha="center", va="top", fontsize=13,
                transform=offset_copy(figure.transFigure, fig=figure, y=-8, units="points"))
    figure.text(centre, 1, data.subtitle, ha="center", va="top", fontsize=9, color="#444444",
                transform=offset_copy(figure.transFigure, fig=figure, y=-30, units="points"))
    for n, note in enumerate(reversed(data.notes)):
        figure.text(0.01, 0, _literal(note), ha="left", va="bottom", fontsize=7, color="#555555",
                    transform=offset_copy(figure.transFigure, fig=figure, y=4 + 10 * n, units="points"))


def _has_display():
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def show_chart(table, options, chart, snapshot):
    """Draw ``chart`` (--pie or --bar) of ``table``: save it to ``-o FILE``, or open a window."""
    require("matplotlib", "--pie and --bar")
    fmt = _output_format(chart.output) if chart.output else None
    if fmt is None and not _has_display():
        raise UsageError("no display to show the chart on ($DISPLAY and $WAYLAND_DISPLAY are unset): "
                         "save it with -o FILE instead, e.g. -o chart.png or -o chart.svg")
    if chart.kind == "pie":
        data, draw = pie_data(table, options, snapshot), draw_pie
    else:
        data, draw = bar_data(table, options, snapshot), draw_bar
    if fmt is not None:
        _save(data, draw, chart.output, fmt, chart.force)
    else:
        _show(data, draw)


#: How a file of each chart format starts, so that -o replaces an old chart but nothing else
#: without --force (raw and rgba have no signature: they need --force).
_SIGNATURES = {
    "png": (b"\x89PNG",), "pdf": (b"%PDF",), "eps": (b"%!PS",), "ps": (b"%!PS",),
    "jpg": (b"\xff\xd8\xff",), "jpeg": (b"\xff\xd8\xff",), "tif": (b"II*\x00", b"MM\x00*"),
    "tiff": (b"II*\x00", b"MM\x00*"), "pgf": (b"%% Creator: ",),
    "gif": (b"GIF8",),
}


def _holds_chart(fmt):
    signatures = _SIGNATURES.get(fmt, ())
    if fmt == "avif":  # an ISO media file: the brand follows the box size
        return lambda head: head[4:12] == b"ftypavif"
    if fmt == "webp":  # RIFF holds WAV and AVI too: the form type says which
        return lambda head: head[:4] == b"RIFF" and head[8:12] == b"WEBP"
    if fmt == "svg":  # any XML starts <?xml: an SVG has its element in the first bytes
        return lambda head: head.lstrip().startswith((b"<?xml", b"<svg")) and b"<svg" in head
    if fmt == "svgz":  # any gzip file starts so: look inside
        return lambda head: head.startswith(b"\x1f\x8b") and b"<svg" in _inflated_start(head)
    return lambda head: bool(signatures) and head.lstrip().startswith(signatures)


def _inflated_start(head):
    import zlib
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 4096)
    except zlib.error:
        return b""


def _save(data, draw, path, fmt, force=False):
    import matplotlib
    from matplotlib.figure import Figure
    figure = Figure()
    draw(figure, data)
    try:
        with output_file(path, _holds_chart(fmt), force=force, what=f"{fmt} chart") as out, \
                matplotlib.rc_context({"svg.fonttype": "none"}):
            # svg.fonttype none: labels stay text, searchable and small.
            figure.savefig(out, format=fmt, dpi=100, bbox_inches="tight")
    except (OSError, RuntimeError, ValueError) as e:
        raise SmemError(f"cannot save the chart as {path}: {e}") from None


def _show(data, draw):
    import matplotlib.pyplot as pyplot
    backend = pyplot.get_backend().lower()
    if backend in ("agg", "cairo", "pdf", "pgf", "ps", "svg", "template"):
        raise UsageError(f"cannot open a chart window (matplotlib found no GUI backend for the display, "
                         f"only {backend!r}): save it with -o FILE instead, e.g. -o chart.png")
    figure = pyplot.figure()
    draw(figure, data)
    pyplot.show()
