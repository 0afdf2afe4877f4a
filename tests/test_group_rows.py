"""The program, user and cgroup views' rows (smem/views/groups.py) share one pass over a snapshot's
processes (which map memory, each one's cpu, the swap ratios): each row still holds what its own
processes add up to, computed here from them one by one, on this machine's processes read twice."""

import os
import time

import pytest

from smem.app import plan, read_snapshot
from smem.cli_options import query_from, serve_from
from smem.options import ReportRequest
from smem.serve import COMPANIONS, _options
from smem.views import VIEWS
from smem.views.cpu import cpu_readings, process_cpu
from smem.views.groups import cgroup_rows, program_rows, user_rows

KEYS = ("Pss", "Rss", "Private_Clean", "Private_Dirty", "Swap", "SwapPss", "Pss_Anon")


@pytest.fixture(scope="module")
def snapshots():
    """Two snapshots of 400 of this machine's processes (the test's own and the oldest) as smem serve
    reads them, 0.3 s apart."""
    from smem.cli import serve
    o = serve.make_context("serve", []).params
    pids = (os.getpid(), *sorted(int(n) for n in os.listdir("/proc") if n.isdigit())[:399])
    query = query_from(o, "process", source=None)._replace(jobs=1, pids=pids)
    request = ReportRequest(query=query, table=_options(VIEWS["process"], sort="pss", reverse=True))
    the_plan = plan(request, tuple((name, _options(VIEWS[name])) for name in COMPANIONS))
    first, _ = read_snapshot(request, the_plan)
    time.sleep(0.3)
    second, _ = read_snapshot(request, the_plan)
    return first, second


def _expected(snapshots, key):
    """{key: (count, {counter: sum or None}, cpu)} of the last snapshot, one process at a time."""
    earlier = cpu_readings(snapshots[0]) if len(snapshots) > 1 else None
    clock = snapshots[-1].clock
    groups = {}
    for p in snapshots[-1].processes:
        if p.has_memory:
            groups.setdefault(key(p), []).append(p)
    expected = {}
    for k, members in groups.items():
        sums = {}
        for counter in KEYS:
            values = [p.totals.get(counter) for p in members if p.totals.get(counter) is not None]
            sums[counter] = sum(values) if values else None
        shares = [v for v in (process_cpu(p, clock, earlier) for p in members) if v is not None]
        expected[k] = (len(members), sums, round(sum(shares), 1) if shares else None)
    return expected


def _got(rows):
    return {r.key: (r.count, {c: r.totals.get(c) for c in KEYS}, r.cpu) for r in rows}


VIEW_ROWS = ((program_rows, lambda p: p.name), (user_rows, lambda p: p.uid), (cgroup_rows, lambda p: p.cgroup))


@pytest.mark.uses("cpu")
def test_each_group_is_the_sum_of_its_processes(snapshots):
    class Options:
        numeric = True
    for rows, key in VIEW_ROWS:  # in turn, as a scrape makes them: the second and third share the first's pass
        assert _got(rows(snapshots, Options)) == _expected(snapshots, key)


@pytest.mark.uses("cpu")
def test_a_new_snapshot_is_not_given_the_pass_of_the_one_before(snapshots):
    class Options:
        numeric = True
    first, second = snapshots
    for pair in ((first,), (second,), (first, second), (second,)):
        for rows, key in VIEW_ROWS:
            got = _got(rows(pair, Options))
            assert got == _expected(pair, key)


@pytest.mark.uses("cpu")
def test_a_row_is_made_with_its_members_and_none_can_be_added_after(snapshots):
    """The table, a chart and a diff read the same rows: a row's members are a tuple, its sums of them."""
    class Options:
        numeric = True
    for rows, _ in VIEW_ROWS:
        made = rows(snapshots, Options)
        assert made and all(isinstance(r.processes, tuple) and r.count == len(r.processes) for r in made)
