"""JSON: one document with the source's facts, the columns, one object per row (raw KiB), and
the processes that could not be read (which its rows and totals leave out).

A comparison (smem diff) describes both sources: ``sources`` holds ``old`` and ``new``, and
``source`` stays NEW's, as it was before OLD's was given too (and as ``pss`` is NEW's PSS
beside ``old_pss``).
"""

from .. import __version__
from .cells import asked_units, cell, printable

__all__ = ["render"]


def _facts(source):
    return {k: printable(v, controls=False) if isinstance(v, str) else v
            for k, v in source.machine().as_facts().items()}


def _described(source):
    return {"description": printable(source.description, controls=False), **_facts(source)}


def _reads_pressure(table):
    """Whether the table's view or columns read memory pressure: a snapshot read for several tables
    (smem html's page) has it for all, and a table's document is what ``smem -F json`` prints of it."""
    return "pressure" in table.view.reads.needs or any("pressure" in c.needs for c in table.columns)


def render(rendering):
    import json
    table, options, snapshot = rendering.table, rendering.options, rendering.snapshot
    columns = table.columns

    def row_object(values):
        return {c.key: cell(c, v, options, table, controls=False) for c, v in zip(columns, values)}

    source = _described(snapshot.source)
    document = {"smem": __version__, "source": source}
    if rendering.old_snapshot is not None:
        document["sources"] = {"old": _described(rendering.old_snapshot.source), "new": source}
    document.update({
        "view": table.view.name,
        "units": {"amounts": "KiB"} if not asked_units(options) else {"amounts": "as shown"},
        "sort": {"column": table.sort.key, "reverse": bool(options.reverse)},
        "columns": [{"key": c.key, "header": c.header, "amount": c.is_amount, "help": c.help, "keep_end": c.keep_end,
                     **({"total": c.total_name} if table.totals is not None and c.total is not None else {})}
                    for c in columns],
        "rows": [row_object(values) for values in table.values],
    })
    if table.totals is not None:
        # named for what they count ("processes", "users"), not put in the pid and user fields;
        # columns that do not total (names, commands) are left out
        document["totals"] = {c.total_name: cell(c, v, options, table, controls=False)
                              for c, v in zip(columns, table.totals) if c.total is not None}
    if table.notes:
        document["notes"] = table.notes
    if snapshot.unreadable:  # the rows and totals leave them out: a program reading stdout is told too
        document["unreadable"] = [{"reason": reason.lower(), "count": len(processes), "pids": [p for p, _ in processes]}
                                  for reason, processes in sorted(snapshot.unreadable.items())]
    if table.recommendation is not None:  # --recommend's figures, as its note says them
        document["recommend"] = table.recommendation._asdict()
    working_set = getattr(snapshot, "working_set", None)
    if working_set is not None:  # --wss: how it was measured
        document["working_set"] = {"method": working_set.method, "seconds": working_set.seconds}
    pressure = getattr(snapshot, "pressure", None)
    if pressure is not None and pressure.system and _reads_pressure(table):
        from ..memory_pressure import pressure_object
        document["pressure"] = {"memory": pressure_object(pressure.system)}
    return json.dumps(document, indent=2) + "\n"
