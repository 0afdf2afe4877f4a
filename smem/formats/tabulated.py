"""tabulate's table styles (github, grid, markdown, rst, html, ...): tables for people.

The cells are the classic table's (``-k``, ``-p``, ``-`` for absent, command
lines cut as in the classic table unless ``-a``).  The style names are
listed in the format registry (smem.formats.TABLE_FORMATS).
"""

from ..report import cut_to, format_value
from .cells import marker_column, totals_row
from .markup import escaper

__all__ = ["render", "tsv_frame"]

_ALIASES = {"markdown": "pipe"}


def render(rendering, style):
    import tabulate
    style = _ALIASES.get(style, style)
    literal = escaper(style)  # (a markup style: a name is its characters, never markup or a cell's end)
    headers, cells, aligns = _cells(rendering, literal, whole=style == "tsv")
    if style == "tsv":
        # for programs: tabulate pads each cell to its column's width (" 361", "head   "), which a
        # reader of tab-separated values keeps; and lines under the rows would be read as rows
        # (--recommend's answer goes to standard error, as CSV's)
        return "".join("\t".join(line) + "\n" for line in ([headers] if headers else []) + cells)
    text = tabulate.tabulate(cells, headers=headers, tablefmt=style, disable_numparse=True,
                             colalign=aligns)
    return text + "\n" + _notes(rendering.table.notes, style, literal)


def tsv_frame(rendering):
    """Watch mode's tsv: one header, then every frame's rows with its time and number first, as
    CSV's (a time line and a blank line between frames would be read as rows)."""
    headers, cells, _ = _cells(rendering, None, whole=True)
    info = rendering.frame
    lines = [["Timestamp", "Frame", *headers]] if headers and info.number == 1 else []
    lines += [[info.timestamp, str(info.number), *line] for line in cells]
    return "".join("\t".join(line) + "\n" for line in lines)


def _cells(rendering, literal, whole=False):
    """(headers, or () with --no-header; the rows' and totals' cells; each column's alignment);
    ``whole``: no value cut to its column's width (tsv, for programs, as CSV)."""
    table, options = rendering.table, rendering.options
    cut = not (whole or options.autosize)

    def cell(column, value):
        text = format_value(column, value, options, table)
        text = cut_to(column, text, column.width) if column.truncate and cut else text
        # a name, and the "-" of an absent figure (a list item in rst), not a figure
        return literal(text) if literal is not None and (value is None or isinstance(value, str)) else text

    extra = table.totals is not None and marker_column(table) is None
    cells = [[""] * extra + [cell(c, v) for c, v in zip(table.columns, row)] for row in table.values]
    if table.totals is not None:
        cells.append(totals_row(table, cell))
    headers = () if options.no_header else [""] * extra + [c.header for c in table.columns]
    aligns = ["left"] * extra + ["right" if c.align == ">" else "left" for c in table.columns]
    return headers, cells, aligns


def _notes(notes, style, literal):
    """The lines under the table: as they are in the styles read as they are; in a markup style
    each a paragraph of its own after a blank line, escaped as a name is, so that none is read as
    the table's next row (GitHub Markdown goes on with a table until a blank line; reStructuredText
    wants one) or as markup (LaTeX's ``%`` begins a comment, its ``_`` is an error)."""
    import html
    import tabulate
    if style == "html":
        return "".join(f"<p>{html.escape(note)}</p>\n" for note in notes)
    if style.startswith("latex"):
        def literal(note):
            return "".join(tabulate.LATEX_ESCAPE_RULES.get(c, c) for c in note)
    if literal is None:
        return "".join(note + "\n" for note in notes)
    return "".join("\n" + literal(note) + "\n" for note in notes)
