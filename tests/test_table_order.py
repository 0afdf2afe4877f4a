"""A table's order (smem.report._sort_entries, sorted by the sort column and then only the runs
of tied values by the next column) is the order of one stable sort by the sort value and every
shown value, as smem 1.5 sorts: on the rows of this machine, tied and absent values included."""

import os

import pytest

from smem.app import plan, read_snapshot
from smem.options import Query, ReportRequest, TableOptions
from smem.report import _order, _sort_entries, build_table, make_table

pytestmark = pytest.mark.skipif(not os.path.exists('/proc/self/smaps_rollup'), reason='needs smaps_rollup (Linux 4.14+)')


def _reference(entries, reverse):
    """One stable sort by (sort value, shown values...), each as _order has it."""
    return sorted(entries, key=lambda e: (_order(e[0]), *map(_order, e[1])), reverse=reverse)


def _table(view, sort, columns, reverse):
    request = ReportRequest(query=Query(view=view, jobs=1),
                            table=TableOptions(sort=sort, columns=columns, reverse=reverse))
    snapshot, _ = read_snapshot(request, plan(request))
    return make_table([snapshot], plan(request).view, request.table), snapshot


@pytest.mark.parametrize('view, sort, columns', [
    ('process', 'swap', ('user', 'command', 'swap', 'pid')),     # most rows tie on swap, many on user
    ('process', 'user', ('command', 'rss', 'pid')),
    ('process', 'pss', ('pid', 'user', 'command', 'swap', 'uss', 'pss', 'rss')),
    ('program', 'count', ('name', 'count', 'swap', 'pss')),  # many programs run once
])
@pytest.mark.parametrize('reverse', [False, True])
def test_the_order_of_this_machines_rows_is_one_sort_by_every_key(view, sort, columns, reverse):
    table, _ = _table(view, sort, columns, reverse)
    entries = list(zip(table.sort_values, table.values, table.rows))
    assert len(entries) > 1
    assert [e[2] for e in _reference(entries[::-1], reverse)] == table.rows
    again = entries[::-1]  # (from another order: the sort, not the input, decides)
    _sort_entries(again, len(columns), reverse)
    assert [e[2] for e in again] == table.rows


@pytest.mark.parametrize('reverse', [False, True])
def test_ties_and_absent_values_sort_as_one_sort_does(reverse):
    """The machine's rows with figures made absent, of mixed kinds, and tied in long runs."""
    table, _ = _table('process', 'pss', ('user', 'swap', 'uss', 'command', 'pid'), False)
    entries = []
    for n, (sort_value, values, row) in enumerate(zip(table.sort_values, table.values, table.rows)):
        values = list(values)
        values[0] = None if n % 5 == 0 else values[0]        # strings and None
        values[1] = None if n % 3 == 0 else 0                 # ties, and None among numbers
        values[2] = 'n/a' if n % 7 == 0 else values[2]        # numbers and strings
        values[2] = None if n % 11 == 0 else values[2]        # ... and None
        sort_value = None if n % 4 == 0 else sort_value % 3   # ties on the sort value; float ties
        sort_value = float(sort_value) if n % 6 == 1 else sort_value
        entries.append((sort_value, values, row))
    expected = [e[2] for e in _reference(entries, reverse)]
    _sort_entries(entries, 5, reverse)
    assert [e[2] for e in entries] == expected


@pytest.mark.uses("cpu")
def test_rows_tied_in_thousands_of_columns_sort_without_recursing():
    width = 5000
    entries = [(1, [0] * (width - 1) + [n % 7], n) for n in range(50)]
    _sort_entries(entries, width, False)
    assert [e[2] for e in entries] == [e[2] for e in _reference(entries, False)]
    assert [e[1][-1] for e in entries] == sorted(n % 7 for n in range(50))


def test_an_empty_table_sorts():
    entries = []
    _sort_entries(entries, 3, True)
    assert entries == []
    assert build_table  # (the one table builder sorts with it)
