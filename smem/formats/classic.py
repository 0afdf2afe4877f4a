"""smem 1.5's table, byte for byte, with two fixes.

A value wider than its column widens the column instead of breaking the
alignment, and ``-a`` counts the totals row too.  Each cell is followed by a
space; a totals row comes under a line of dashes as wide as the header.
"""

from ..report import cell_formatter

__all__ = ["render"]


def _autosize(table, options, terminal_columns):
    """smem 1.5's -a: fit each column to its values, the flowing column to the terminal
    (``terminal_columns`` None: no terminal, so nothing is cut)."""
    sizes = {}
    for i, column in enumerate(table.columns):
        candidates = [1]
        if not options.no_header:
            candidates.append(len(column.header))
        if column.is_amount and (options.abbreviate or options.percent):
            candidates.append(7)
        else:
            candidates.extend(len("-" if v[i] is None else str(v[i])) for v in table.values)
        sizes[column.key] = max(candidates)
    flowing = table.view.flowing_column
    if flowing in sizes and terminal_columns is not None:
        others = sum(sizes.values()) - sizes[flowing]
        room = max(terminal_columns - others - len(table.columns), 10)
        sizes[flowing] = min(sizes[flowing], room)
    return sizes


def render(rendering):
    """The classic table, as text (one line per row, each cell followed by a space)."""
    table, options = rendering.table, rendering.options
    formatters = [cell_formatter(c, options, table) for c in table.columns]
    cells = [[f(v) for f, v in zip(formatters, row)] for row in table.values]
    total_cells = None
    if table.totals is not None:
        total_cells = [f(v) for f, v in zip(formatters, table.totals)]
    sizes = {}
    if options.autosize:
        sizes = _autosize(table, options, options.terminal_columns)
    widths = []
    for i, column in enumerate(table.columns):
        width = sizes.get(column.key, column.width)
        if not column.truncate or (options.autosize and options.terminal_columns is None):
            needed = [len(r[i]) for r in cells]
            if total_cells is not None:
                needed.append(len(total_cells[i]))
            width = max([width] + needed)
        widths.append(width)

    def line(texts):
        out = []
        for column, width, s in zip(table.columns, widths, texts):
            if column.truncate:
                s = s[:width]
            out.append(s.rjust(width) if column.align == ">" else s.ljust(width))
            out.append(" ")
        return "".join(out)

    header = line([c.header for c in table.columns])
    for i, r in enumerate(cells):  # each row's cells let go as its line takes their place
        cells[i] = line(r)
    lines = [] if options.no_header else [header]
    lines += cells
    del cells
    if total_cells is not None:
        lines.append("-" * len(header))
        lines.append(line(total_cells))
    lines.extend(table.notes)
    lines.append("")
    return "\n".join(lines)
