"""Watch mode's kept cells (smem.table_memo): a frame made with the cells of the rows that did not
change is, byte for byte, the frame made from the same reading with every cell computed.

Real processes the test starts, each named by a command line of its own (-P): one grows past
another (the order changes), one exits, one starts between two frames, one never changes (its
cells are the ones kept)."""

import os

import pytest

from smem.app import plan
from smem.formats import FORMATS, Rendering
from smem.options import Query, ReportRequest, TableOptions, WatchOptions
from smem.report import make_table
from smem.watch import _Frames

from workload import obedient_process

pytestmark = pytest.mark.skipif(not os.path.exists('/proc/self/smaps_rollup'), reason='needs smaps_rollup (Linux 4.14+)')


def _request(marker, since, view='process', **table):
    return ReportRequest(query=Query(view=view, process_filter=marker, jobs=1),
                         table=TableOptions(totals=True, **table),
                         watch=WatchOptions(interval=1.0, since=since, max_staleness=3600.0))


def _both(frames, options):
    """(the frame as watch mode writes it, the same reading's table with every cell computed)."""
    stream = FORMATS[options.format].stream
    kept = stream(Rendering(frames.table(options), options, frames.current, frame=frames.frame, memo=frames.memo))
    full = make_table([frames.baseline, frames.current], frames.plan.view, options, frames.request.system)
    return kept, stream(Rendering(full, options, frames.current, frame=frames.frame))


def _frame(frames, number, options, *more):
    """Read frame ``number``; check it, and its tables in the ``more`` options, against every
    cell computed; (the frame's table, how many of its rows had their cells computed, not kept
    from the frame before)."""
    frames.read(number)
    computed = None
    for each in (options, *more):
        kept, full = _both(frames, each)
        assert kept == full
        computed = frames.memo.computed if computed is None else computed
    return frames.table(options), computed


def _pids(table):
    return [row.current.process.pid for row in table.rows]


@pytest.mark.uses("cpu")
@pytest.mark.parametrize('since', ['first', 'previous'])
def test_a_watched_frame_is_the_table_of_its_reading(since):
    marker = f'memo{os.getpid()}{since[0]}'  # (a title fits the command line's room)
    with obedient_process() as grower, obedient_process() as leaver, obedient_process() as steady:
        for n, process in enumerate((grower, leaver, steady)):
            process.retitle(f'{marker} {n}'.encode())
        steady.grow(8192)
        request = _request(marker, since)
        options = request.table
        by_uss = options._replace(sort='uss', reverse=True, format='json')
        frames = _Frames(request, plan(request))

        first, _ = _frame(frames, 1, options, by_uss, options._replace(abbreviate=True), options)
        assert set(_pids(first)) == {grower.pid, leaver.pid, steady.pid}
        assert _pids(first).index(grower.pid) < _pids(first).index(steady.pid)  # smaller first

        grower.grow(16384)
        leaver.stop()
        with obedient_process() as newcomer:
            newcomer.retitle(f'{marker} 3'.encode())
            second, _ = _frame(frames, 2, options, by_uss, options._replace(columns=('pid', 'command', 'pss'), format='csv'))
            pids = _pids(second)
            assert pids.index(grower.pid) > pids.index(steady.pid)  # it grew past: the order changed
            status = {row.current.process.pid: row.status for row in second.rows}
            assert status[newcomer.pid] == 'new'
            assert status[leaver.pid] == 'gone'

            third, _ = _frame(frames, 3, options, options._replace(percent=True), options, by_uss)
            assert set(_pids(third)) == {grower.pid, steady.pid, newcomer.pid} | (
                {leaver.pid} if since == 'first' else set())
            # nothing of ours changed since the frame before, nor (--delta previous compares with
            # it) between the two before: the cells of at least the steady process were kept
            fourth, computed = _frame(frames, 4, options)
            assert computed < len(fourth.rows)


@pytest.mark.uses("cpu")
def test_the_user_view_watched_is_the_table_of_its_reading():
    """A view whose rows keep no cells (a user's sums) is made whole each frame, the same way."""
    marker = f'memo{os.getpid()}u'
    with obedient_process() as grower:
        grower.retitle(marker.encode())
        request = _request(marker, 'first', view='user')
        frames = _Frames(request, plan(request))
        _frame(frames, 1, request.table)
        grower.grow(8192)
        _frame(frames, 2, request.table)
