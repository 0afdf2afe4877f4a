"""Watch mode's output off a terminal: one frame after another, as a stream a program can read.

A table (classic or a tabulate style) is written as the report itself after a
line that says when it was read (``# 2026-12-03T21:00:05Z frame 2 of 12``), so
``smem -u --interval 5 --count 12 > log`` is a log people read and ``grep``.
``-F json`` is JSON Lines: one object per row per frame, each carrying
``timestamp`` and ``frame`` beside the row's fields, so that
``pandas.read_json(path, lines=True)`` is at once a long table (one line per
process per frame, ``timestamp`` parsed as a date) ready to pivot by pid; an
object per frame holding a list of rows would be one cell per frame.
``-F csv`` is one header, then every frame's rows with the same two leading
columns; ``-F tsv`` alike, its cells the table's.  With ``-t`` each frame ends with its totals, marked (``"total": true``,
or ``total`` in CSV's marker column as in a report).
"""

from .cells import cell, marker_column, totals_row
from .tabulated import tsv_frame

__all__ = ["table_frame", "json_lines_frame", "csv_frame", "tsv_frame"]


def table_frame(render):
    """A table format's frame: the time line, the report, a blank line between frames."""
    def frame(rendering):
        info = rendering.frame
        of = f" of {info.count}" if info.count is not None else ""
        return f"{'' if info.number == 1 else chr(10)}# {info.timestamp} frame {info.number}{of}\n" + render(rendering)
    return frame


def json_lines_frame(rendering):
    import json
    table, options, info = rendering.table, rendering.options, rendering.frame
    columns = table.columns
    stamp = {"timestamp": info.timestamp, "frame": info.number}
    marked = {"total": False} if table.totals is not None else {}
    lines = [json.dumps({**stamp, **{c.key: cell(c, v, options, table, controls=False)
                                     for c, v in zip(columns, values)}, **marked})
             for values in table.values]
    if table.totals is not None:
        sums = {c.key: cell(c, v, options, table, controls=False) for c, v in zip(columns, table.totals)
                if c.total == "sum"}
        lines.append(json.dumps({**stamp, **sums, "total": True}))
    return "".join(line + "\n" for line in lines)


def csv_frame(rendering):
    import csv
    import io
    table, options, info = rendering.table, rendering.options, rendering.frame
    out = io.StringIO()
    writer = csv.writer(out)
    extra = [""] if table.totals is not None and marker_column(table) is None else []
    stamp = [info.timestamp, info.number]
    if info.number == 1 and not options.no_header:
        writer.writerow(["timestamp", "frame"] + extra + [c.key for c in table.columns])
    for row in table.values:
        writer.writerow(stamp + extra + ["" if v is None else cell(c, v, options, table)
                                         for c, v in zip(table.columns, row)])
    if table.totals is not None:
        writer.writerow(stamp + totals_row(table, lambda c, v: "" if v is None else cell(c, v, options, table)))
    return out.getvalue()
