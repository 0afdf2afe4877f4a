"""JSON: one document with the source's facts, the columns, one object per row (raw KiB)."""

from .. import __version__
from .cells import asked_units, cell, printable

__all__ = ["render"]


def _facts(source):
    return {k: printable(v, controls=False) if isinstance(v, str) else v
            for k, v in source.machine().as_facts().items()}


def render(rendering):
    import json
    table, options, snapshot = rendering.table, rendering.options, rendering.snapshot
    columns = table.columns

    def row_object(values):
        return {c.key: cell(c, v, options, table, controls=False) for c, v in zip(columns, values)}

    document = {
        "smem": __version__,
        "source": {"description": printable(snapshot.source.description, controls=False),
                   **_facts(snapshot.source)},
        "view": table.view.name,
        "units": {"amounts": "KiB"} if not asked_units(options) else {"amounts": "as shown"},
        "sort": {"column": table.sort.key, "reverse": bool(options.reverse)},
        "columns": [{"key": c.key, "header": c.header, "amount": c.is_amount, "help": c.help}
                    for c in columns],
        "rows": [row_object(values) for values in table.values],
    }
    if table.totals is not None:
        # named for what they count ("processes", "users"), not put in the pid and user fields;
        # columns that do not total (names, commands) are left out
        document["totals"] = {c.total_name: cell(c, v, options, table, controls=False)
                              for c, v in zip(columns, table.totals) if c.total is not None}
    if table.notes:
        document["notes"] = table.notes
    return json.dumps(document, indent=2) + "\n"
