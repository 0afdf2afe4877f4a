"""One renderer: select columns, sort, total and format the rows of a view.

:func:`build_table` does the work every output format shares (column
selection, smem 1.5's sort order, totals); :func:`render_classic` lays the
result out exactly as smem 1.5 does, byte for byte, with two fixes: a value
wider than its column widens the column instead of breaking the alignment,
and ``-a`` counts the totals row too.
"""

from dataclasses import dataclass, field
from typing import List, Optional

from .errors import UsageError
from .units import human, percent

__all__ = ["ReportOptions", "Table", "build_table", "render_classic", "parse_columns",
           "UnknownField"]


class UnknownField(UsageError):
    """A -c/-s/--pie/--bar field the view does not have; lists the known ones."""

    def __init__(self, view, names):
        self.view = view
        self.names = names
        plural = "s" if len(names) > 1 else ""
        known = "\n".join(f"  {key:<8} {col.help}" for key, col in sorted(view.columns.items()))
        super().__init__(f"unknown field{plural} for the {view.name} view: {' '.join(names)}\n"
                         f"known fields:\n{known}")


@dataclass
class ReportOptions:
    columns: Optional[List[str]] = None
    sort: Optional[str] = None
    reverse: bool = False
    totals: bool = False
    no_header: bool = False
    autosize: bool = False
    abbreviate: bool = False
    percent: bool = False
    numeric: bool = False
    ram_kib: Optional[int] = None     # -R, else MemTotal
    realmem_bytes: Optional[int] = None  # -R as given
    kernel_path: Optional[str] = None    # -K
    recommend: Optional[float] = None    # --recommend headroom, percent
    pie: Optional[str] = None
    bar: Optional[str] = None
    output: Optional[str] = None      # chart file
    force: bool = False               # -o may replace a file that holds something else
    terminal_columns: Optional[int] = None
    format: str = "classic"
    exact: bool = False


def _terminal_width():
    import shutil  # it imports bz2, lzma and zlib: only for -a
    return shutil.get_terminal_size((80, 24)).columns


def parse_columns(text):
    """smem 1.5 takes "pid user pss"; "pid,user,pss" works too."""
    return [c for c in text.replace(",", " ").split() if c]


@dataclass
class Table:
    view: object
    columns: list            # Column objects, in display order
    sort: object             # the Column sorted on
    values: list             # one list of raw values per row, sorted
    rows: list               # the row objects, in the same order
    sort_values: list        # the raw sort value of each row, same order
    totals: Optional[list]   # raw totals per column, or None
    ram_kib: Optional[int]
    swap_kib: Optional[int]
    notes: list = field(default_factory=list)  # lines printed under the table


def selected_columns(view, options):
    if options.columns == ["all"]:
        # every column; the exact ones only under --exact (they cost a pagemap scan)
        keys = [k for k, c in view.columns.items() if options.exact or "exact" not in c.needs]
    else:
        keys = list(options.columns) if options.columns else view.default_columns_for(options.exact)
    for chart in (options.pie, options.bar):
        if chart:
            keys.append(chart)
    missing = [k for k in dict.fromkeys(keys) if k not in view.columns]
    if missing:
        raise UnknownField(view, missing)
    return [view.columns[k] for k in keys]


def sort_column(view, options, default=None):
    key = options.sort or default or view.default_sort
    if key not in view.columns:
        raise UnknownField(view, [key])
    return view.columns[key]


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
        return sum(present) if present or not values else None
    if kind == "rows":
        return len(values)
    if kind == "distinct":
        return len(set(values))
    return ""


def build_table(view, rows, options, ram_kib, swap_kib, default_sort=None):
    """Sort as smem 1.5 does: by the sort field, ties by the row's shown values in order."""
    columns = selected_columns(view, options)
    sort = sort_column(view, options, default_sort)
    entries = []
    for row in rows:
        values = [c.getter(row) for c in columns]
        entries.append((sort.getter(row), values, row))
    entries.sort(key=lambda e: (_order(e[0]), tuple(_order(v) for v in e[1])),
                 reverse=options.reverse)
    values = [e[1] for e in entries]
    totals = None
    if options.totals:
        totals = [_total(c, [v[i] for v in values]) for i, c in enumerate(columns)]
    return Table(view, columns, sort, values, [e[2] for e in entries], [e[0] for e in entries],
                 totals, ram_kib, swap_kib)


# Control characters (a newline in a command line) would break the table, as in ps(1).
CONTROLS = {c: "?" for c in list(range(32)) + [127]}


def format_value(column, value, options, table):
    if value is None:
        return "-"
    if isinstance(value, str):
        return value.translate(CONTROLS)
    if column.is_amount:
        if options.abbreviate:
            return human(value)
        if options.percent:
            return percent(value, table.swap_kib if column.percent_of == "swap" else table.ram_kib)
    return str(value)


def _autosize(table, options, terminal_columns):
    """smem 1.5's -a: fit each column to its values, the command or map to the terminal."""
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
    for flowing in ("command", "map"):
        if flowing in sizes:
            others = sum(sizes.values()) - sizes[flowing]
            room = max(terminal_columns - others - len(table.columns), 10)
            sizes[flowing] = min(sizes[flowing], room)
            break
    return sizes


def render_classic(table, options):
    """The classic table, as text (one line per row, each cell followed by a space)."""
    cells = [[format_value(c, v, options, table) for c, v in zip(table.columns, row)]
             for row in table.values]
    total_cells = None
    if table.totals is not None:
        total_cells = [format_value(c, v, options, table) for c, v in zip(table.columns, table.totals)]
    if options.autosize:
        terminal = options.terminal_columns or _terminal_width()
        sizes = _autosize(table, options, terminal)
    else:
        sizes = {}
    widths = []
    for i, column in enumerate(table.columns):
        width = sizes.get(column.key, column.width)
        if not column.truncate:
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
    lines = [] if options.no_header else [header]
    lines.extend(line(r) for r in cells)
    if total_cells is not None:
        lines.append("-" * len(header))
        lines.append(line(total_cells))
    lines.extend(table.notes)
    return "".join(l + "\n" for l in lines)


def make_table(snapshot, view, options):
    """Rows of ``view`` from ``snapshot``, selected, sorted and totalled."""
    default_sort = "rss" if snapshot.pss_missing and view.default_sort == "pss" else None
    rows = view.rows(snapshot, options)
    ram = options.ram_kib if options.ram_kib is not None else snapshot.mem_total
    notes = []
    if view.summary is not None:
        view_ram, notes = view.summary(snapshot, options, rows)
        ram = view_ram if view_ram is not None else ram
    table = build_table(view, rows, options, ram, snapshot.swap_total, default_sort)
    table.notes = notes
    exact = snapshot.exact
    if exact is not None and table.totals is not None:
        _exact_totals(table, exact)
    return table


def _exact_totals(table, exact):
    """Under --exact, totals of all the rows' processes as one group: distinct frames, not sums."""
    from .views.memory import EXACT_TOTALS
    if not table.view.process_groups:
        return  # rows that are not sets of processes (mappings, areas)
    pids = sorted({pid for row in table.rows for pid in row.member_pids})
    figures = exact.groups({"all": pids})["all"]
    for i, column in enumerate(table.columns):
        field = EXACT_TOTALS.get(column.key)
        if field is not None:
            value = getattr(figures, field)
            table.totals[i] = int(round(value)) if isinstance(value, float) else value
