"""smem 1.5's table, byte for byte, with two fixes.

A value wider than its column widens the column instead of breaking the
alignment, and ``-a`` counts the totals row too.  Each cell is followed by a
space; a totals row comes under a line of dashes as wide as the header.

The views smem 1.5 lacked, and a table ending in a Source column (which it
lacked), end their lines with no whitespace: a left-aligned last column is not
padded, and no space follows it.  A Source column last wraps at words under
itself on a terminal too narrow for the table (where -a cuts a command to fit):
its long explanations are the point of it; a pipe gets whole lines.
"""

from ..report import CONTROLS, cell_formatter, cut_to, plain_cell

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
            cells = [v[i] for v in table.values]
            if None in cells:
                cells = ["-" if c is None else c for c in cells]
            candidates.append(_widest(cells))
        sizes[column.key] = max(candidates)
    flowing = table.view.flowing_column
    if flowing in sizes and terminal_columns is not None:
        others = sum(sizes.values()) - sizes[flowing]
        room = max(terminal_columns - others - len(table.columns), 10)
        sizes[flowing] = min(sizes[flowing], room)
    return sizes


def _flow(table, options, widths):
    """Without -a but with a terminal's width (a watch screen), the flowing column (command, map)
    takes the room the others leave, as top's command does; the others keep smem 1.5's widths."""
    keys = [c.key for c in table.columns]
    if options.autosize or options.terminal_columns is None or table.view.flowing_column not in keys:
        return
    i = keys.index(table.view.flowing_column)
    room = options.terminal_columns - (sum(widths) - widths[i]) - len(widths)
    widths[i] = max(widths[i], room)


def render(rendering):
    """The classic table, as text (one line per row, each cell followed by a space).

    Each line is one ``%`` of a template (``%8s`` right, ``%-8s`` left, ``%-27.27s`` cut to
    27), its control characters replaced once per line (:func:`_printable`).  A column of
    plain values is given to it as they are (``%s`` is ``str``), an absent one as ``-``; any other is
    formatted once and its cells held until the lines are laid out (-k and -p columns: 1,500
    rows of 4 amounts).
    """
    table, options = rendering.table, rendering.options
    formatters = [cell_formatter(c, options, table) for c in table.columns]
    total_cells = None
    if table.totals is not None:
        total_cells = [f(v) for f, v in zip(formatters, table.totals)]
    sizes = {}
    if options.autosize:
        sizes = _autosize(table, options, options.terminal_columns)
    shown, formatted = [], {}
    uncut = options.autosize and options.terminal_columns is None  # (-a to a file or a pipe: nothing is cut)
    # each column's cells, the rows turned into columns in one C pass
    by_column = list(map(list, zip(*table.values))) if table.values else [[] for _ in table.columns]
    for i, (column, f) in enumerate(zip(table.columns, formatters)):
        cells = by_column[i]
        if f is not plain_cell:
            cells = formatted[i] = list(map(f, cells))
        elif None in cells:  # (``%s`` shows the rest as plain_cell would: _printable replaces controls)
            cells = formatted[i] = ["-" if c is None else c for c in cells]
        shown.append(cells)
    widths = _widths(table.columns, shown, total_cells, sizes, uncut)
    last = table.columns[-1]
    longest = max((len(word) for cell in shown[-1] for word in str(cell).split()), default=0) if last.wraps else 0
    if not options.autosize and _wrap_room(last, options, widths, 0) is not None:
        # too wide for the terminal: the others fit their values as with -a, the wrapping column has the rest
        fitted = _widths(table.columns, shown, total_cells, _autosize(table, options, None), uncut)
        if _wrap_room(last, options, fitted, longest) is not None:
            widths = fitted
    _flow(table, options, widths)
    below = _narrowed(table, options, widths, shown, total_cells)
    if below is not None and _overflows(widths, options.terminal_columns):
        if not (options.abbreviate or options.percent) and any(c.is_amount for c in table.columns[:-1]):
            # whole KiB figures do not fit beside the names: as -k shows them (8 digits, 5 columns, 80 wide)
            return render(rendering._replace(options=options._replace(abbreviate=True)))
        _cut_names(table.columns, widths, options)
    for i, column in enumerate(table.columns):
        if column.truncate and (column.keep_end or column.cut_words) and not uncut:  # (the rest are cut by their ``%.Ns``)
            cells = formatted.get(i) or [row[i] for row in table.values]
            formatted[i] = [cut_to(column, str(c), widths[i]) for c in cells]
    specs = []
    for column, width in zip(table.columns, widths):
        align = "" if column.align == ">" else "-"
        specs.append(f"%{align}{width}.{width}s" if column.truncate else f"%{align}{width}s")
    if below is not None:
        specs[-1] = "%.0s"  # (the list is on a line of its own, under the row)
    template = " ".join(specs) + " "
    padded = table.view.smem15_table and not last.wraps
    room = _wrap_room(last, options, widths, longest)

    header = template % tuple(c.header for c in table.columns)
    if not padded:
        header = header.rstrip()
    lines = [] if options.no_header else [header]
    if below is not None and not options.no_header:
        lines.append(" " * below + last.header)
    if formatted:
        columns = [formatted.get(i) for i in range(len(table.columns))]

        def line(n, row):
            return _printable(template % tuple(row[i] if held is None else held[n] for i, held in enumerate(columns)))
    else:
        def line(n, row):
            return _printable(template % tuple(row))
    if not padded:
        line = _unpadded(line, sum(widths) - widths[-1] + len(widths) - 1, room)
    if below is not None:
        line = _with_line_below(line, formatted[len(widths) - 1], below)
    if rendering.memo is not None:  # (watch mode: a row's line is kept while its cells and the template are)
        lines += rendering.memo.lines((template, options, table.ram_kib, table.swap_kib), table.values, line)
    else:
        lines += [line(n, row) for n, row in enumerate(table.values)]
    if total_cells is not None:
        total = template % tuple(total_cells) if padded else (template % tuple(total_cells)).rstrip()
        dashes = len(header) if padded else _widest_line(lines, total)
        if below is not None:
            dashes = max(sum(widths[:-1]) + len(widths) - 2, below + widths[-1])
        lines.append("-" * dashes)
        lines.append(total)
    lines.extend(_notes(table, options))
    lines.append("")
    return "\n".join(lines)


def _narrowed(table, options, widths, shown, total_cells):
    """On a terminal narrower than the table, a last column cut at words (--shm's Processes, cut
    with +N): the other columns fit their values (a column cut to its width, Name, no wider than
    that), the list the room they leave, where each row's first item and its +N fit in it; else
    the list goes on a line of its own under each row, indented under the second column, as wide
    as the terminal leaves it.  ``widths`` are changed so; where the list goes below, its indent
    (else None).  Lines of 118 characters on 80 columns were broken in two by the terminal."""
    last = table.columns[-1]
    terminal = options.terminal_columns
    if (options.autosize or terminal is None or not last.cut_words or len(widths) < 3
            or last.key != table.view.flowing_column or sum(widths) + len(widths) <= terminal):
        return None
    sizes = {c.key: _fitted_size(c, size, options)
             for c, size in zip(table.columns, _autosize(table, options, None).values())}
    fitted = _widths(table.columns, shown, total_cells, sizes, False)
    room = terminal - sum(fitted[:-1]) - len(fitted)
    if room >= min(_least(shown[-1], last.cut_words), last.width):
        widths[:] = fitted[:-1] + [room]
        return None
    below = fitted[0] + 1
    widths[:] = fitted[:-1] + [max(terminal - below - 1, 10)]
    return below


def _fitted_size(column, size, options):
    """A column's width before its values widen it, where the list is narrowed: -a's, a column cut
    to its width no wider than that, an amount its header's (-k's and -p's too: -a gives them 7)."""
    if column.truncate:
        return min(size, column.width)
    if column.is_amount:
        return 1 if options.no_header else len(column.header)
    return size


def _overflows(widths, terminal):
    """Whether a row's line, its last column (the list) on a line of its own, is as wide as the
    terminal or wider (a terminal breaks a line that reaches its last column in some cases)."""
    return sum(widths[:-1]) + len(widths) - 2 >= terminal


def _cut_names(columns, widths, options):
    """``widths`` with the columns cut to their width (Name) narrower, to what the line leaves them
    but never below their header or 10: the figures stay whole, the names lose their ends."""
    over = sum(widths[:-1]) + len(widths) - 1 - options.terminal_columns
    for i, column in enumerate(columns[:-1]):
        if over > 0 and column.truncate:
            least = max(10, 0 if options.no_header else len(column.header))
            cut = max(0, min(over, widths[i] - least))
            widths[i] -= cut
            over -= cut


def _notes(table, options):
    """The notes under the table; on a terminal whose width the table fits (--shm's), wrapped at
    words to it: the terminal broke a note of 140 characters in the middle of a word."""
    last = table.columns[-1] if table.columns else None
    if (options.terminal_columns is None or options.autosize or last is None or not last.cut_words
            or last.key != table.view.flowing_column):
        return table.notes
    import textwrap
    width = max(options.terminal_columns - 1, 20)
    return [part for note in table.notes
            for part in textwrap.wrap(note, width, subsequent_indent="  ", break_on_hyphens=False) or [""]]


def _least(cells, between):
    """The width that shows every cell's first item, with its +N where it has more."""
    import re
    least = 1
    for cell in cells:
        words = re.split(between, str(cell))
        least = max(least, len(words[0]) + (len(f" +{len(words) - 1}") if len(words) > 1 else 0))
    return least


def _with_line_below(line, cells, indent):
    """``line``, and under it, indented by ``indent``, the row's cell of the last column (none where empty)."""
    def with_below(n, row):
        cell = _printable(str(cells[n])).rstrip()
        return line(n, row) + ("\n" + " " * indent + cell if cell and cell != "-" else "")
    return with_below


def _widths(columns, shown, total_cells, sizes, uncut):
    """The columns' widths: ``sizes`` (-a's) or their own, widened to what they show unless cut."""
    widths = []
    for i, (column, cells) in enumerate(zip(columns, shown)):
        width = sizes.get(column.key, column.width)
        if not column.truncate or uncut:
            width = max(width, _widest(cells), len(total_cells[i]) if total_cells is not None else 0)
        widths.append(width)
    return widths


def _wrap_room(last, options, widths, longest):
    """The width a wrapping last column wraps at: what the terminal leaves it (at least 10, as
    -a leaves a command), or None where it fits (or no terminal: a pipe gets whole lines), or
    where that is narrower than its ``longest`` word: each row is then one line, as in a pipe
    (on 80 columns a breakdown's Source had 11, and "smaps_rollup" read "smaps_roll" "up")."""
    if not last.wraps or options.terminal_columns is None:
        return None
    room = max(options.terminal_columns - (sum(widths) - widths[-1]) - len(widths), 10)
    return room if longest <= room < widths[-1] else None


def _unpadded(line, indent, room):
    """``line`` with no whitespace at its end, its last cell (from ``indent``) wrapped at words
    under itself where it is wider than ``room`` (not None)."""
    def unpadded(n, row):
        text = line(n, row).rstrip()
        if room is None or len(text) - indent <= room:
            return text
        import textwrap
        parts = textwrap.wrap(text[indent:], room, break_on_hyphens=False, break_long_words=False) or [""]
        return "\n".join([text[:indent] + parts[0]] + [" " * indent + p for p in parts[1:]])
    return unpadded


def _widest_line(lines, total):
    """The width of a table whose last column is not padded (its dashes): its widest line drawn
    (a row's wrapped parts each a line).  The last column's own width counted a list of processes
    no row had: 117 dashes under --shm's header of 96."""
    return max(len(part) for line in (*lines, total) for part in line.split("\n"))


def _printable(line):
    """The line with its control characters as ``?`` (checked first: most lines have none, and
    translate looks each character up)."""
    return line if line.isprintable() else line.translate(CONTROLS)


def _widest(cells):
    """The widest of a column's cells as ``%s`` shows them: of integers only, the largest or
    the most negative, so 1,500 rows take two C loops, not 1,500 ``str`` calls."""
    if not cells:
        return 0
    if set(map(type, cells)) == {int}:  # (three C loops: no Python call a cell)
        return max(len(str(max(cells))), len(str(min(cells))))
    return max(map(len, map(str, cells)))
