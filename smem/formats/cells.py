"""Cells for programs (JSON, CSV, OpenMetrics labels): valid Unicode, no control characters.

A process name or command line is whatever bytes a process put there; a
program reading our output must get valid UTF-8 with nothing that moves a
terminal's cursor or ends a record: bytes that are not UTF-8 become ``\\xNN``
and control characters ``\\uNNNN``-style escapes of their own (``\\x1b``), so
the original is still readable and nothing raw reaches a terminal or a parser.
JSON escapes control characters itself (``\u001b``), losslessly, so it asks
for valid Unicode only.
"""

import re

from ..report import CONTROLS, format_value, percent_base

__all__ = ["printable", "label_value", "raw", "cell", "asked_units", "totals_row", "marker_column"]

#: the tables' control characters (report.CONTROLS: C0, DEL, C1), escaped; the bytes that are not
#: UTF-8 among them are already \xNN here (printable decodes them so)
_CONTROLS = {c: f"\\x{c:02x}" for c in CONTROLS if c < 0x100}


def printable(text, controls=True):
    """``text`` as valid Unicode; with ``controls``, control characters escaped as ``\\xNN`` too."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text.translate(_CONTROLS) if controls else text


#: what printable writes for a byte it escapes (C0, DEL, C1, not UTF-8): a name holding this already
#: would read as one that held such a byte
_ESCAPE_LIKE = re.compile(r"\\x(?:[01][0-9a-f]|7f|[89a-f][0-9a-f])")


def label_value(text):
    """``text`` as a metric label: as it is where printable leaves it so and it holds nothing that reads
    as printable's escape; else its bytes, each one printable escapes as ``\\xNN`` (a C1 character's
    two) and each backslash doubled.  Two names never give one label (a duplicate series, which a
    scrape drops or refuses), and systemd's ``\\x2d`` stays as it is."""
    if printable(text) == text and not _ESCAPE_LIKE.search(text):
        return text
    return "".join(map(_escaped, text))


def _escaped(c):
    if "\udc80" <= c <= "\udcff":  # (a byte not UTF-8)
        return f"\\x{ord(c) - 0xdc00:02x}"
    if c == "\\":
        return "\\\\"
    if ord(c) in _CONTROLS:
        return "".join(f"\\x{b:02x}" for b in c.encode("utf-8"))
    return c


def raw(value, controls=True):
    return printable(value, controls) if isinstance(value, str) else value


def asked_units(options):
    return options.abbreviate or options.percent


def cell(column, value, options, table, controls=True):
    """A machine cell: the raw value, or the table's text for an amount when -k/-p was given; a
    share of nothing (-p of swap without swap) is absent (None: JSON's null, CSV's empty cell)."""
    if asked_units(options) and column.is_amount and value is not None and value != "":
        if options.percent and not options.abbreviate and not isinstance(value, str) \
                and not percent_base(column, table):
            return None
        return format_value(column, value, options, table)
    return raw(value, controls)


def marker_column(table):
    """Where a -t row says "total": the first column that is not summed, or None when every
    column is (the format then adds a first column for it)."""
    return next((i for i, c in enumerate(table.columns) if c.total != "sum"), None)


def totals_row(table, show):
    """The -t row for a format whose rows have no place to say "total": the sums
    (``show(column, value)``), "total" in the marker column, counts of rows and distinct
    values left blank.  Without a marker column the row starts with an extra "total" field."""
    cells = ["" if c.total != "sum" else show(c, v) for c, v in zip(table.columns, table.totals)]
    marker = marker_column(table)
    if marker is None:
        return ["total"] + cells
    cells[marker] = "total"
    return cells
