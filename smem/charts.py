"""Charts: smem 1.5's ``--pie`` and ``--bar``, drawn with matplotlib (what they show: chart_data.py).

matplotlib is imported only inside the drawing functions: text reports never
pay for it.  Files are written through :class:`matplotlib.figure.Figure`
without pyplot (no GUI backend is touched); pyplot is used only to open a
window, and only when there is a display.
"""

import math
import os

from .area_colours import series_colours
from .chart_data import absent_marks, bar_data, literal, pie_data
from .errors import SmemError, UsageError
from .extras import require
from .output import output_file

__all__ = ["show_chart", "draw_pie", "draw_bar", "slice_colours", "supported_formats"]

#: the tallest bar chart, in inches (1,600 px at 100 dpi)
MAX_BAR_HEIGHT = 16
#: where the pie sits in the figure (left, bottom, width, height); the legend is to its right
PIE_BOX = (0.04, 0.06, 0.54, 0.76)
#: the size of the slices' names, in points
LABEL_POINTS = 9
#: points between two lines of notes at a chart's foot
NOTE_POINTS = 10
#: the longest line of a note, in characters (the 11 in of a chart hold about 180 at 7 points)
NOTE_CHARS = 150
#: -o's name of standard output: the chart written there as a PNG (a pipe's; never a terminal's)
STANDARD_OUTPUT = "-"
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
    for kind, colour in zip(data.kinds, data.colours or [None] * len(data.kinds)):
        row = rows.pop(0) if kind == "row" else None
        colours.append(UNUSED_COLOUR if kind == "unused" else OTHER_COLOUR if kind == "other" else colour or row)
    whole = sum(data.values)
    # Name the slices big enough to hold a name, apart from each other; the legend names them all.
    shown = [label if value >= whole * 0.02 or kind != "row" else ""
             for label, value, kind in zip(data.labels, data.values, data.kinds)]
    explode = [0.05 if kind == "unused" else 0 for kind in data.kinds]
    # 11 x 7 inches, taller by what the notes' lines need under the pie's box beyond its margin
    notes = _note_lines(data.notes)
    bottom, width, height = PIE_BOX[1] * 7, PIE_BOX[2] * 11, PIE_BOX[3] * 7
    taller = max((NOTE_POINTS * len(notes) + 8) / 72 - bottom, 0) if notes else 0
    figure.set_size_inches(11, 7 + taller)
    box = (PIE_BOX[0], (bottom + taller) / (7 + taller), PIE_BOX[2], height / (7 + taller))
    line = LABEL_POINTS * 1.3 / 72 / (min(width, height) / 2.5)  # (in radii: ax.pie spans 1.25 each way)
    shown = _names_apart(shown, data.values, explode, line)
    ax = figure.add_axes(box)
    wedges, names, _ = ax.pie(
        data.values, labels=shown, colors=colours, explode=explode, startangle=90,
        counterclock=False, autopct=lambda p: f"{p:.1f}%" if p >= 3 else "", pctdistance=0.75,
        wedgeprops=dict(linewidth=0.8, edgecolor="white"), textprops=dict(fontsize=LABEL_POINTS))
    ax.set_aspect("equal")
    legend = figure.legend(wedges, data.legend, loc="center left", bbox_to_anchor=(0.6, box[1] + box[3] * 0.54),
                           fontsize=8, frameon=False, title=None)  # (level with the pie's middle)
    _legend_clear_of(figure, legend, names)
    _titles(figure, data, notes, centre=PIE_BOX[0] + PIE_BOX[2] / 2)  # over the pie, not pie and legend


def _legend_clear_of(figure, legend, names):
    """Move ``legend`` right of the slices' ``names`` that reach into it (a long name on the
    pie's right half), as far as the figure has room; a name it still covers is not drawn (the
    legend names every slice)."""
    from matplotlib.backends.backend_agg import RendererAgg  # (measures text on any canvas, a window's too)
    width = figure.bbox.width
    renderer = RendererAgg(width, figure.bbox.height, figure.dpi)
    box = legend.get_window_extent(renderer)
    reaching = [t.get_window_extent(renderer) for t in names if t.get_text() and t.get_visible()]
    reaching = [e for e in reaching if e.overlaps(box)]
    if reaching:
        right = max(e.x1 for e in reaching) + 6
        shift = min(right - box.x0, width - 4 - box.x1)
        if shift > 0:
            anchor = legend.get_bbox_to_anchor().transformed(figure.transFigure.inverted())
            legend.set_bbox_to_anchor((anchor.x0 + shift / width, anchor.y0 + anchor.height / 2), figure.transFigure)
            box = legend.get_window_extent(renderer)
    for text in names:
        if text.get_text() and text.get_window_extent(renderer).overlaps(box):
            text.set_visible(False)


def _names_apart(shown, values, explode, line):
    """``shown`` less the names that would be drawn over a bigger slice's.  ax.pie puts a slice's
    name 1.1 radii out at the middle of its arc (clockwise from the top here), starting there on
    the right half of the pie and ending there on the left: two names on one side meet where their
    heights differ by less than a ``line`` (in radii)."""
    whole = sum(values) or 1
    places, done = [], 0
    for value, out in zip(values, explode):
        middle = math.radians(90 - 360 * (done + value / 2) / whole)
        done += value
        places.append((math.cos(middle) > 0, (1.1 + out) * math.sin(middle)))
    kept = []
    for i in sorted(range(len(values)), key=lambda i: -values[i]):  # (the bigger slice first)
        side, y = places[i]
        if shown[i] and all(places[j][0] != side or abs(places[j][1] - y) >= line for j in kept):
            kept.append(i)
    return [label if i in kept else "" for i, label in enumerate(shown)]


def draw_bar(figure, data):
    """Draw ``data`` (a :class:`BarData`) as grouped horizontal bars on a matplotlib Figure."""
    import numpy
    rows, count = len(data.labels), len(data.series)
    height = 0.8 / count
    figure.set_size_inches(11, min(max(2.2 + rows * max(0.32, 0.16 * count), 4.5), MAX_BAR_HEIGHT))
    ax = figure.add_subplot(1, 1, 1)
    positions = numpy.arange(rows)
    # a row with no figure (but a sparse series's) is marked n/a once, in its middle, not once a bar
    marked_rows, marked_bars = absent_marks(data.values)
    for i in marked_rows:
        ax.text(0, i, " n/a", va="center", ha="left", fontsize=7, color="#555555")
    # one column of areas: each bar in its area's colour (the axis names them); else a colour a column
    by_area = count == 1 and data.colours is not None
    for n, (header, values, colour) in enumerate(zip(data.series, data.values, series_colours(count))):
        offsets = positions - 0.4 + height * (n + 0.5)
        widths = [numpy.nan if v is None else v for v in values]
        colour = [c or colour for c in data.colours] if by_area else colour
        ax.barh(offsets, widths, height, color=colour, label=header)
        for i, y in enumerate(offsets):
            if (n, i) in marked_bars:
                ax.text(0, y, " n/a", va="center", ha="left", fontsize=7, color="#555555")
    ax.set_yticks(positions)
    ax.set_yticklabels(data.labels, fontsize=8)
    ax.set_ylim(rows - 0.5, -0.5)  # first row on top
    ax.set_xlabel(data.axis_label)
    ax.grid(axis="x", color="#e0e0e0", linewidth=0.6)
    ax.set_axisbelow(True)
    if not by_area:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    notes = _note_lines(data.notes)
    _titles(figure, data, notes)
    inches = figure.get_size_inches()[1]
    # the notes' lines (_titles puts them 10 points apart from 4 up) under the axis and its label
    foot = (NOTE_POINTS * len(notes) + 8) / 72 if notes else 0.05
    figure.tight_layout(rect=(0, foot / inches, 1, 1 - 0.75 / inches))


def _note_lines(notes):
    """The notes' lines: a long one (a list of areas below zero, of processes left out) wrapped,
    not cut off at the chart's right edge."""
    import textwrap
    return [line for note in notes for line in textwrap.wrap(note, NOTE_CHARS, subsequent_indent="  ") or [""]]


def _titles(figure, data, notes, centre=0.5):
    """Title, source line under it, ``notes`` (_note_lines) at the foot: placed in points, whatever
    the height."""
    from matplotlib.transforms import offset_copy
    figure.text(centre, 1, data.title, ha="center", va="top", fontsize=13,
                transform=offset_copy(figure.transFigure, fig=figure, y=-8, units="points"))
    figure.text(centre, 1, data.subtitle, ha="center", va="top", fontsize=9, color="#444444",
                transform=offset_copy(figure.transFigure, fig=figure, y=-30, units="points"))
    for n, note in enumerate(reversed(notes)):
        figure.text(0.01, 0, literal(note), ha="left", va="bottom", fontsize=7, color="#555555",
                    transform=offset_copy(figure.transFigure, fig=figure, y=4 + NOTE_POINTS * n, units="points"))


def _quiet_matplotlib():
    """matplotlib logs warnings of its own on importing (a home it cannot make its config
    directory in, the font cache being built): lines on stderr that are not smem's one-line
    messages, about nothing the user asked.  Its errors still show."""
    import logging
    logging.getLogger("matplotlib").setLevel(logging.ERROR)


def _has_display():
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def show_chart(table, options, chart, snapshot):
    """Draw ``chart`` (--pie or --bar) of ``table``: save it to ``-o FILE``, or open a window; with
    ``-o -``, the PNG's bytes, for the caller to write to standard output (None otherwise)."""
    _quiet_matplotlib()
    require("matplotlib", "--pie and --bar")
    fmt = "png" if chart.output == STANDARD_OUTPUT else _output_format(chart.output) if chart.output else None
    if fmt is None and not _has_display():
        raise UsageError("no display to show the chart on ($DISPLAY and $WAYLAND_DISPLAY are unset): "
                         "save it with -o FILE instead, e.g. -o chart.png or -o chart.svg")
    if chart.kind == "pie":
        data, draw = pie_data(table, options, snapshot), draw_pie
    else:
        data, draw = bar_data(table, options, snapshot), draw_bar
    if chart.output == STANDARD_OUTPUT:
        return _png(data, draw)
    if fmt is not None:
        _save(data, draw, chart.output, fmt, chart.force)
    else:
        _show(data, draw)
    return None


#: How a file of each chart format starts; a file -o names is replaced without --force only where
#: it also holds the mark of a chart smem drew (below): a photo is a JPEG, a paper a PDF.
_SIGNATURES = {
    "png": (b"\x89PNG",), "pdf": (b"%PDF",), "eps": (b"%!PS",), "ps": (b"%!PS",),
    "jpg": (b"\xff\xd8\xff",), "jpeg": (b"\xff\xd8\xff",), "tif": (b"II*\x00", b"MM\x00*"),
    "tiff": (b"II*\x00", b"MM\x00*"), "pgf": (b"%% Creator: ",), "gif": (b"GIF8",),
}

#: What smem writes into a chart of a format Pillow writes, where matplotlib marks none (a JPEG's
#: comment, a TIFF's ImageDescription, a WebP's or AVIF's XMP), as Pillow's keyword for it
_MARK = b"smem chart (matplotlib)"
_MARKED = {"jpg": {"comment": _MARK}, "jpeg": {"comment": _MARK}, "gif": {"comment": _MARK},
           "tif": {"description": _MARK.decode()}, "tiff": {"description": _MARK.decode()},
           "webp": {"xmp": b"<x:xmpmeta>" + _MARK + b"</x:xmpmeta>"},
           "avif": {"xmp": b"<x:xmpmeta>" + _MARK + b"</x:xmpmeta>"}}

#: the words by which matplotlib names itself in a file of each format it writes itself, and
#: where: in the first bytes, or (a PDF's Info dictionary, its Producer) in the last
_WRITER = {"png": (b"software\x00matplotlib", "head"), "svg": (b"matplotlib", "head"),
           "eps": (b"%%creator: matplotlib", "head"), "ps": (b"%%creator: matplotlib", "head"),
           "pgf": (b"matplotlib", "head"), "pdf": (b"matplotlib pdf backend", "tail")}


def _holds_chart(fmt):
    """Whether a file's first and last bytes (``head``, ``tail``) are of a ``fmt`` chart smem drew."""
    if fmt == "avif":  # an ISO media file: the brand follows the box size
        starts = lambda head: head[4:12] == b"ftypavif"  # noqa: E731
    elif fmt == "webp":  # RIFF holds WAV and AVI too: the form type says which
        starts = lambda head: head[:4] == b"RIFF" and head[8:12] == b"WEBP"  # noqa: E731
    elif fmt == "svg":  # any XML starts <?xml: an SVG has its element in the first bytes
        starts = lambda head: head.lstrip().startswith((b"<?xml", b"<svg")) and b"<svg" in head  # noqa: E731
    elif fmt == "svgz":  # any gzip file starts so: look inside
        return lambda head, tail: (head.startswith(b"\x1f\x8b") and b"<svg" in (inner := _inflated_start(head))
                                   and b"matplotlib" in inner.lower())
    else:
        signatures = _SIGNATURES.get(fmt, ())
        starts = lambda head: bool(signatures) and head.lstrip().startswith(signatures)  # noqa: E731
    if fmt in _MARKED:
        return lambda head, tail: starts(head) and (_MARK in head or _MARK in tail)
    words, where = _WRITER.get(fmt, (None, None))
    if words is None:  # (raw, rgba: nothing says what they are)
        return lambda head, tail: False
    return lambda head, tail: starts(head) and words in (head if where == "head" else tail).lower()


def _inflated_start(head):
    import zlib
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 4096)
    except zlib.error:
        return b""


def _save(data, draw, path, fmt, force=False):
    figure = _drawn(data, draw)
    try:
        with output_file(path, _holds_chart(fmt), force=force, what=f"{fmt} chart") as out:
            _write(figure, out, fmt)
    except (OSError, RuntimeError, ValueError) as e:
        raise SmemError(f"cannot save the chart as {path}: {e}") from None


def _png(data, draw):
    """The chart as a PNG's bytes, as -o FILE.png writes them (-o -)."""
    import io
    figure, out = _drawn(data, draw), io.BytesIO()
    try:
        _write(figure, out, "png")
    except (RuntimeError, ValueError) as e:  # (as _save says them)
        raise SmemError(f"cannot draw the chart: {e}") from None
    return out.getvalue()


def _drawn(data, draw):
    from matplotlib.figure import Figure
    figure = Figure()
    draw(figure, data)
    return figure


def _write(figure, out, fmt):
    """``figure`` written to ``out`` as ``fmt``: one routine, so that a file and standard output
    get the same bytes."""
    import matplotlib
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # (labels stay text, searchable and small)
        figure.savefig(out, format=fmt, dpi=100, bbox_inches="tight",
                       **({"pil_kwargs": _MARKED[fmt]} if fmt in _MARKED else {}))


def _show(data, draw):
    import matplotlib.pyplot as pyplot
    backend = pyplot.get_backend().lower()
    if backend in ("agg", "cairo", "pdf", "pgf", "ps", "svg", "template"):
        raise UsageError(f"cannot open a chart window (matplotlib found no GUI backend for the display, "
                         f"only {backend!r}): save it with -o FILE instead, e.g. -o chart.png")
    figure = pyplot.figure()
    draw(figure, data)
    pyplot.show()
