"""Output formats besides the classic table: tabulate's tables, JSON, CSV and OpenMetrics.

Tables are for people and honour -k and -p like the classic one.  JSON and
CSV are for programs: raw integers in KiB (a value absent from the source is
null / empty, never 0); -k or -p, when given, turn amounts into the same
strings the table shows.  OpenMetrics (the Prometheus text format, readable
by node_exporter's textfile collector) always carries bytes.
"""

from . import __version__
from .report import format_value, make_table, render_classic

__all__ = ["FORMATS", "TABLE_FORMATS", "render"]

MACHINE_FORMATS = ("json", "csv", "openmetrics")


#: tabulate's table styles (tabulate.tabulate_formats, less unsafehtml), named here rather than
#: asked of tabulate so that text reports do not pay for importing it; a test keeps them in step.
TABLE_FORMATS = (
    "asciidoc", "colon_grid", "double_grid", "double_outline", "fancy_grid", "fancy_outline", "github",
    "grid", "heavy_grid", "heavy_outline", "html", "jira", "latex", "latex_booktabs", "latex_longtable",
    "latex_raw", "mediawiki", "mixed_grid", "mixed_outline", "moinmoin", "orgtbl", "outline", "pipe",
    "plain", "presto", "pretty", "psql", "rounded_grid", "rounded_outline", "rst", "simple", "simple_grid",
    "simple_outline", "textile", "tsv", "youtrack", "markdown",
)
_ALIASES = {"markdown": "pipe"}
FORMATS = ("classic",) + MACHINE_FORMATS + TABLE_FORMATS


def printable(text):
    """Valid Unicode for programs: bytes that are not UTF-8 become \\xNN escapes."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _raw(value):
    return printable(value) if isinstance(value, str) else value


def _asked_units(options):
    return options.abbreviate or options.percent


def _cell(column, value, options, table):
    if _asked_units(options) and column.is_amount and value is not None and value != "":
        return format_value(column, value, options, table)
    return _raw(value)


def render_tabulate(table, options, fmt):
    """A table for people: the classic cells (command lines cut as in the classic table)."""
    import tabulate

    def cell(column, value):
        text = format_value(column, value, options, table)
        return text[:column.width] if column.truncate and not options.autosize else text

    cells = [[cell(c, v) for c, v in zip(table.columns, row)] for row in table.values]
    if table.totals is not None:
        cells.append([cell(c, v) for c, v in zip(table.columns, table.totals)])
    headers = () if options.no_header else [c.header for c in table.columns]
    aligns = ["right" if c.align == ">" else "left" for c in table.columns]
    text = tabulate.tabulate(cells, headers=headers, tablefmt=_ALIASES.get(fmt, fmt), disable_numparse=True,
                             colalign=aligns)
    return text + "\n" + "".join(n + "\n" for n in table.notes)


def render_json(table, options, snapshot):
    import json
    columns = table.columns
    document = {
        "smem": __version__,
        "source": {"description": snapshot.source.description,
                   **{k: int(v) if k in ("pagesize", "epoch") and str(v).isdigit() else printable(v)
                      for k, v in snapshot.source.facts().items()}},
        "view": table.view.name,
        "units": {"amounts": "KiB"} if not _asked_units(options) else {"amounts": "as shown"},
        "sort": {"column": table.sort.key, "reverse": bool(options.reverse)},
        "columns": [{"key": c.key, "header": c.header, "amount": c.is_amount, "help": c.help}
                    for c in columns],
        "rows": [{c.key: _cell(c, v, options, table) for c, v in zip(columns, row)} for row in table.values],
    }
    if table.totals is not None:
        document["totals"] = {c.key: (None if v == "" else _cell(c, v, options, table))
                              for c, v in zip(columns, table.totals)}
    if table.notes:
        document["notes"] = table.notes
    return json.dumps(document, indent=2) + "\n"


def render_csv(table, options):
    import csv
    import io
    out = io.StringIO()
    writer = csv.writer(out)  # RFC 4180: CRLF line ends, quotes where needed
    if not options.no_header:
        writer.writerow([c.key for c in table.columns])
    for row in table.values:
        writer.writerow(["" if v is None else _cell(c, v, options, table) for c, v in zip(table.columns, row)])
    if table.totals is not None:
        writer.writerow(["" if v is None else _cell(c, v, options, table)
                         for c, v in zip(table.columns, table.totals)])
    return out.getvalue()


# -- OpenMetrics -------------------------------------------------------------------------------

def _label_value(value):
    text = printable(str(value))
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _families(table, rows):
    """(name, help, unit, [(labels, value)]) for each numeric column of ``table``."""
    labels = table.view.labels
    rendered = [",".join(f'{k}="{_label_value(get(r))}"' for k, get in labels) for r in rows]
    label_keys = {k for k, _ in labels}
    families = []
    for column in table.columns:
        if column.key in label_keys or not (column.is_amount or column.total == "sum"):
            continue  # labels, text and identifiers are not gauges
        samples = []
        for row, label in zip(rows, rendered):
            value = column.getter(row)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                samples.append((label, value * 1024 if column.is_amount else value))
        unit = "bytes" if column.is_amount else ""
        name = f"smem_{table.view.name}_{column.key}" + ("_bytes" if unit else "")
        families.append((name, f"{column.help} ({table.view.title})", unit, samples))
    return families


def render_openmetrics(tables):
    """``tables``: [(Table, its rows in the table's order)]; one document with every family."""
    lines = []
    for table, rows in tables:
        for name, help_text, unit, samples in _families(table, rows):
            lines.append(f"# TYPE {name} gauge")
            if unit:
                lines.append(f"# UNIT {name} {unit}")
            lines.append(f"# HELP {name} {help_text}")
            lines.extend(f"{name}{{{label}}} {value}" for label, value in samples)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def render(snapshot, view, options, table=None, extra_tables=()):
    """The report of ``view`` in ``options.format``, as text.

    ``extra_tables`` join an OpenMetrics document (a scrape wants the per-user and
    whole-system gauges beside the processes).
    """
    table = table or make_table(snapshot, view, options)
    fmt = options.format
    if fmt == "classic":
        return render_classic(table, options)
    if fmt == "json":
        return render_json(table, options, snapshot)
    if fmt == "csv":
        return render_csv(table, options)
    if fmt == "openmetrics":
        return render_openmetrics([(t, t.rows) for t in [table] + list(extra_tables)])
    return render_tabulate(table, options, fmt)
