"""The comparison of two snapshots (``smem diff OLD NEW``), as a view built on any other view.

Rows of the base view are read from each snapshot and matched by the base
view's ``row_key`` (a process by pid *and* start time, so a reused pid is
another process; a user, program, cgroup or mapping by its name; a shared-memory object by
device and inode, shmid, or mount point and device).  Where the base view's -t leaves some rows
out (a file is part of its mount's row), so do the comparison's totals.  For each
amount column ``k`` of the base view, and each count it declares ``compared`` (a group's
processes, a mapping's), the comparison has ``old_k``, ``k`` (new)
and ``dk`` (new - old); a row only in NEW is ``new`` (its old side counts as 0),
one only in OLD is ``gone``.  Sums of ``dk`` are therefore NEW's total minus
OLD's, and the totals of ``k`` (and a count of rows: processes) NEW's: a row gone is shown, not
counted as there.  The default order is the largest absolute change in PSS last, as smem
puts the largest rows last.

Watch mode (``smem --interval``) is the same comparison between the first (or
the previous) frame and this one: :func:`watch_view` is the comparison view
with the base view's own columns first, so a watched report looks like the
report, with the change of its measure (``dpss``) and the marks added.
"""

from .columns import Metrics, View, amount, text

__all__ = ["diff_view", "watch_view", "DiffRow"]


class DiffRow:
    __slots__ = ("old", "new", "key")

    def __init__(self, old, new, key=None):
        self.old = old
        self.new = new
        self.key = key  # the base view's row_key: the same row in the next comparison

    @property
    def status(self):
        return "new" if self.old is None else "gone" if self.new is None else ""

    @property
    def memo_inputs(self):
        """(its key, its sides' inputs) where each side it has says them (smem.table_memo), else None."""
        old, new = self.old, self.new
        if old is not None:
            old = getattr(old, "memo_inputs", None)
            if old is None:
                return None
            old = old[1]
        if new is not None:
            new = getattr(new, "memo_inputs", None)
            if new is None:
                return None
            new = new[1]
        return self.key, (old, new)

    @property
    def current(self):
        """The row whose identity is shown: NEW's, or OLD's for a row that is gone."""
        return self.new if self.new is not None else self.old


def _side(getter, side):
    def get(row):
        part = getattr(row, side)
        return None if part is None else getter(part)
    return get


def _delta(getter):
    def get(row):
        old = getter(row.old) if row.old is not None else None
        new = getter(row.new) if row.new is not None else None
        if old is None and new is None:
            return None
        if (old is None and row.old is not None) or (new is None and row.new is not None):
            return None  # a side that has the row lacks the figure: absent is not zero
        return (new or 0) - (old or 0)
    return get


def _change_in_totals(getter):
    """A row's part of the -t total of changes: an absent side counts 0 here, so that the total is
    NEW's total minus OLD's (each of which sums the figures present)."""
    def get(row):
        old = getter(row.old) if row.old is not None else None
        new = getter(row.new) if row.new is not None else None
        return None if old is None and new is None else (new or 0) - (old or 0)
    return get


def _rows_total(total_of, side):
    """A total taken of the rows together (Column.total_of), of one side's rows: None where none."""
    if total_of is None:
        return None
    return lambda rows: total_of([part for part in (getattr(r, side) for r in rows) if part is not None])


def _has(side):
    """A side's -t counts the rows it has (report totals them): 0 where it has none of them (every
    row gone: NEW holds nothing, not an unknown '-'), unknown where those it has lack the figure."""
    return lambda row: getattr(row, side) is not None


def _change_of_rows_total(total_of):
    """The change of a total taken of the rows together: NEW's total minus OLD's (absent: 0)."""
    if total_of is None:
        return None
    old, new = _rows_total(total_of, "old"), _rows_total(total_of, "new")

    def get(rows):
        before, after = old(rows), new(rows)
        return None if before is None and after is None else (after or 0) - (before or 0)
    return get


def _rows_in_new(rows):
    """The -t count of a column totalled by its rows: those NEW has (a row gone is not there)."""
    return sum(1 for row in rows if row.new is not None)


def _magnitude(getter):
    delta = _delta(getter)

    def get(row):
        value = delta(row)
        return None if value is None else abs(value)
    return get


def _columns(base, old, new):
    columns = {}
    for key, column in base.columns.items():
        if "exact" in column.needs:
            continue  # a comparison of page frames across two times means nothing
        if not column.changes:
            # a count of rows (PID: processes) is NEW's, as the amounts' totals are: a row gone is
            # shown, but it is no longer there to count
            columns[key] = column._replace(getter=(lambda g: lambda r: g(r.current))(column.getter),
                                           total=column.total if column.total in ("rows", None) else None,
                                           total_getter=None,
                                           total_of=_rows_in_new if column.total == "rows" else None)
            continue
        # a count's total is named for what it counts (processes): old_processes, dprocesses beside it
        total_key = column.total_key
        columns[f"old_{key}"] = column._replace(key=f"old_{key}", header=f"Old{column.header}",
                                                getter=_side(column.getter, "old"), help=f"{column.help}, in {old}",
                                                width=max(column.width, len(column.header) + 3),
                                                total_key=total_key and f"old_{total_key}",
                                                total_rows=_has("old"), total_of=_rows_total(column.total_of, "old"))
        columns[key] = column._replace(getter=_side(column.getter, "new"), help=f"{column.help}, in {new}",
                                       total_rows=_has("new"), total_of=_rows_total(column.total_of, "new"))
        columns[f"d{key}"] = column._replace(key=f"d{key}", header=f"d{column.header}",
                                             getter=_delta(column.getter), total_getter=_change_in_totals(column.getter),
                                             help=f"change in {column.key}: {new} - {old}",
                                             width=max(column.width, len(column.header) + 1),
                                             total_key=total_key and f"d{total_key}",
                                             total_of=_change_of_rows_total(column.total_of))
    columns["status"] = text("status", "Status", lambda r: r.status, f"new (only in {new}) or gone (only in {old})", 6)
    measure = base.columns.get(base.charting.measure)
    if measure is not None and measure.is_amount:
        columns["change"] = amount("change", f"|d{measure.header}|", _magnitude(measure.getter),
                                   f"size of the change in {measure.key}, either way (the default order)",
                                   width=max(8, len(measure.header) + 3), counters=measure.counters,
                                   needs=measure.needs)
    return columns


def _measure(base):
    """The amount whose change orders a comparison: the chart's measure, else the last default amount."""
    amounts = [k for k in base.default_columns if k in base.columns and base.columns[k].is_amount]
    return base.charting.measure if base.charting.measure in amounts else (amounts[-1] if amounts else None)


def _counted(counted_in_totals):
    """Which comparison rows -t counts: those whose base row it counts (a file is part of its mount
    in OLD as in NEW), so that a total of changes counts each page once, as the base view's does."""
    if counted_in_totals is None:
        return None
    return lambda row: counted_in_totals(row.current)


def _trailing(base):
    """The base view's default columns after its last amount (a breakdown's Source): a comparison
    keeps them last, where the report has them (a wrapping column wraps only there)."""
    shown = [k for k in base.default_columns if k in base.columns]
    amounts = [i for i, k in enumerate(shown) if base.columns[k].changes]
    return shown[amounts[-1] + 1:] if amounts else []


def diff_view(base: View, old="OLD", new="NEW") -> View:
    """The comparison view of ``base``; its rows take (OLD, NEW) snapshots.  ``old`` and ``new``
    name the two sides in the fields' help.  Its default columns follow the report's: the
    columns before its amounts, the marks, the measure's two sides and every change where the
    amounts were, and the columns after them last."""
    if base.comparison.row_key is None:
        raise ValueError(f"the {base.name} view cannot be compared")
    columns = _columns(base, old, new)
    trailing = [k for k in _trailing(base) if k in columns]
    identity = [k for k in base.default_columns if k in columns and not base.columns[k].changes
                and k not in trailing]
    changing = [k for k in base.default_columns if k in base.columns and base.columns[k].changes]
    measure = _measure(base)
    defaults = identity + ["status"]
    if measure is not None:
        defaults += [f"old_{measure}", measure]
    defaults += [f"d{k}" for k in changing] + trailing

    kept = []  # [(snapshot, options, its rows by key)]: the last OLD side, which watch mode compares with again

    def rows(snapshots, options):
        old_snapshot, new_snapshot = snapshots[0], snapshots[-1]
        row_key = base.comparison.row_key
        if kept and kept[0][0] is old_snapshot and kept[0][1] == options:
            old = kept[0][2]
        else:
            old = {row_key(r): r for r in base.rows([old_snapshot], options)}
            kept[:] = [(old_snapshot, options, old)]
        later = [old_snapshot, new_snapshot] if base.comparison.interval_rows else [new_snapshot]
        new = {row_key(r): r for r in base.rows(later, options)}
        return [DiffRow(old.get(key), new.get(key), key) for key in dict.fromkeys([*new, *old])]

    return base._replace(
        name=f"{base.name}-diff", title=f"{base.title}: changes", columns=columns,
        default_columns=tuple(defaults), default_sort="change" if "change" in columns else defaults[-1],
        rows=rows, summary=None,
        reads=base.reads._replace(needs=base.reads.needs | base.reads.identity, identity=frozenset()),
        accounting=base.accounting._replace(process_groups=False, disjoint=False,
                                            counted=_counted(base.accounting.counted)),
        charting=base.charting._replace(
            measure=f"d{measure}" if measure else base.charting.measure,
            measure_without_pss="drss" if "drss" in columns else base.charting.measure_without_pss, rows=None),
        metrics=Metrics(labels=tuple((k, (lambda g: lambda r: g(r.current))(g)) for k, g in base.metrics.labels)),
        comparison=base.comparison._replace(row_key=None),
    )


def watch_view(base: View, since="first") -> View:
    """The view of watch mode: ``base``'s rows, matched with those of the first frame (``since``
    "first") or the previous one ("previous"): its rows take (that frame, this frame).

    Its default columns are the base view's, then the change of its measure (``dpss``) and the
    new/gone marks, then the columns the report has after its amounts (a breakdown's Source) and
    the column that flows to the width (the command), as top puts it last: on a narrow terminal
    the line is cut (or wrapped) in the name, never in the change.  Its default order is the
    base view's.  On the first frame both sides are the same snapshot, so every change is 0
    and nothing is marked.
    """
    compared = diff_view(base, old=f"the {since} frame", new="this frame")
    measure = _measure(base)
    flowing = base.flowing_column
    last = [k for k in _trailing(base) if k in compared.columns and k != flowing]
    if flowing in base.default_columns and flowing in compared.columns:
        last.append(flowing)
    defaults = tuple(k for k in base.default_columns if k in compared.columns and k not in last)
    defaults += ((f"d{measure}",) if measure is not None else ()) + ("status",) + tuple(last)
    return compared._replace(
        name=f"{base.name}-watch", title=base.title, default_columns=defaults,
        default_sort=base.default_sort if base.default_sort in compared.columns else compared.default_sort,
        charting=compared.charting._replace(measure=base.charting.measure,
                                            measure_without_pss=base.charting.measure_without_pss),
    )
