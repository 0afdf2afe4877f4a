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
    """The classic table, as text (one line per row, each cell followed by a space).

    A column that widens to its values is measured in a first pass and each row laid out in
    a second, so no row's cells are held beside the lines (10,000 strings at 1,500 rows).
    """
    table, options = rendering.table, rendering.options
    formatters = [cell_formatter(c, options, table) for c in table.columns]
    total_cells = None
    if table.totals is not None:
        total_cells = [f(v) for f, v in zip(formatters, table.totals)]
    sizes = {}
    if options.autosize:
        sizes = _autosize(table, options, options.terminal_columns)
    widths = []
    for i, (column, f) in enumerate(zip(table.columns, formatters)):
        width = sizes.get(column.key, column.width)
        if not column.truncate or (options.autosize and options.terminal_columns is None):
            width = max(width, max((len(f(row[i])) for row in table.values), default=0),
                        len(total_cells[i]) if total_cells is not None else 0)
        widths.append(width)
    layout = [(f, width, column.truncate, column.align == ">")
              for f, width, column in zip(formatters, widths, table.columns)]

    def line(values, format=True):
        out = []
        for (f, width, truncate, right), value in zip(layout, values):
            s = f(value) if format else value
            if truncate:
                s = s[:width]
            out.append(s.rjust(width) if right else s.ljust(width))
            out.append(" ")
        return "".join(out)

    header = line([c.header for c in table.columns], format=False)
    lines = [] if options.no_header else [header]
    lines += [line(row) for row in table.values]
    if total_cells is not None:
        lines.append("-" * len(header))
        lines.append(line(total_cells, format=False))
    lines.extend(table.notes)
    lines.append("")
    return "\n".join(lines)
