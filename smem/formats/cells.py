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

__all__ = ["printable", "raw", "cell", "asked_units", "totals_row", "marker_column"]

#: the tables' control characters (report.CONTROLS: C0, DEL, C1), escaped as their bytes in UTF-8
_CONTROLS = frozenset(chr(c) for c in CONTROLS if c < 0x100)
#: what a name would read as an escape of ours: a byte that is not UTF-8 (0x80-0xFF), and with
#: controls a control character's (0x00-0x1F, 0x7F; a C1's lead byte, 0xC2, is among the first)
_ESCAPE_LIKE = {True: re.compile(r"\\x(?:[01][0-9a-f]|7f|[89a-f][0-9a-f])"), False: re.compile(r"\\x[89a-f][0-9a-f]")}


def printable(text, controls=True):
    """``text`` as valid Unicode, one-to-one: a name with nothing to escape (no byte that is not
    UTF-8; with ``controls``, no control character) and nothing that reads as an escape is as it
    is (systemd's ``\\x2d`` too); any other is spelt with each such byte ``\\xNN`` (a C1 character's
    two bytes) and each backslash doubled.  Two names never come out alike: as OpenMetrics label
    sets, a name holding ESC and one holding the text ``\\x1b`` were one, twice (an invalid
    exposition), as were U+009B and the byte 0x9B."""
    if _ESCAPE_LIKE[controls].search(text) is None and (
            text.isprintable() or not any(_needs_escape(c, controls) for c in text)):
        return text
    return "".join(_escaped(c, controls) for c in text)


def _needs_escape(c, controls):
    return "\udc80" <= c <= "\udcff" or (controls and c in _CONTROLS)


def _escaped(c, controls):
    if "\udc80" <= c <= "\udcff":  # (a byte not UTF-8, as surrogateescape keeps it)
        return f"\\x{ord(c) - 0xdc00:02x}"
    if c == "\\":
        return "\\\\"
    if controls and c in _CONTROLS:
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
