"""Cells for programs (JSON, CSV, OpenMetrics labels): valid Unicode, no control characters.

A process name or command line is whatever bytes a process put there; a
program reading our output must get valid UTF-8 with nothing that moves a
terminal's cursor or ends a record: bytes that are not UTF-8 become ``\\xNN``
and control characters ``\\uNNNN``-style escapes of their own (``\\x1b``), so
the original is still readable and nothing raw reaches a terminal or a parser.
JSON escapes control characters itself (``\u001b``), losslessly, so it asks
for valid Unicode only.
"""

from ..report import format_value

__all__ = ["printable", "raw", "cell", "asked_units", "totals_row"]

_CONTROLS = {c: f"\\x{c:02x}" for c in list(range(32)) + [127]}


def printable(text, controls=True):
    """``text`` as valid Unicode; with ``controls``, control characters escaped as ``\\xNN`` too."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text.translate(_CONTROLS) if controls else text


def raw(value, controls=True):
    return printable(value, controls) if isinstance(value, str) else value


def asked_units(options):
    return options.abbreviate or options.percent


def cell(column, value, options, table, controls=True):
    """A machine cell: the raw value, or the table's text for an amount when -k/-p was given."""
    if asked_units(options) and column.is_amount and value is not None and value != "":
        return format_value(column, value, options, table)
    return raw(value, controls)


def totals_row(table, show):
    """The -t row for a format whose rows have no place to say "total": the first field says it,
    then the sums (``show(column, value)``); counts of rows and distinct values are left blank."""
    cells = ["" if c.total != "sum" else show(c, v) for c, v in zip(table.columns, table.totals)]
    return ["total"] + cells[1:]
