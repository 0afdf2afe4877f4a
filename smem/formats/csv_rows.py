"""CSV (RFC 4180: CRLF line ends, quotes where needed): a header of column keys, raw KiB.

A ``-t`` totals row says ``total`` in its first column that is not summed (an
extra first column when every column is) and carries the sums only,
so that no program reads it as one more process (a count of 27 rows in the
pid field would be pid 27); counts of rows and users are in JSON's totals.
"""

from .cells import cell, marker_column, totals_row

__all__ = ["render"]


def render(rendering):
    import csv
    import io
    table, options = rendering.table, rendering.options
    out = io.StringIO()
    writer = csv.writer(out)
    extra = [""] if table.totals is not None and marker_column(table) is None else []
    if not options.no_header:
        writer.writerow(extra + [c.key for c in table.columns])
    for row in table.values:
        writer.writerow(extra + ["" if v is None else cell(c, v, options, table)
                                 for c, v in zip(table.columns, row)])
    if table.totals is not None:
        writer.writerow(totals_row(table, lambda c, v: "" if v is None else cell(c, v, options, table)))
    return out.getvalue()
