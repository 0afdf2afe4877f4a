"""CSV (RFC 4180: CRLF line ends, quotes where needed): a header of column keys, raw KiB."""

from .cells import cell

__all__ = ["render"]


def render(rendering):
    import csv
    import io
    table, options = rendering.table, rendering.options
    out = io.StringIO()
    writer = csv.writer(out)
    if not options.no_header:
        writer.writerow([c.key for c in table.columns])
    for row in table.values:
        writer.writerow(["" if v is None else cell(c, v, options, table) for c, v in zip(table.columns, row)])
    if table.totals is not None:
        writer.writerow(["" if v is None else cell(c, v, options, table)
                         for c, v in zip(table.columns, table.totals)])
    return out.getvalue()
