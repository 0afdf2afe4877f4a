"""The incremental collection (smem.incremental): after what real processes do, the figures it
keeps or re-reads are those of a full read, within the 1% it is held to.

Each test reads its own processes only (--pid), with a --max-staleness of an hour, so no figure
is re-read for its age: what is re-read is re-read because the Refresher saw a change.
"""

import contextlib
import os

import pytest

from smem.app import plan, read_snapshot
from smem.incremental import Refresher
from smem.options import Query, ReportRequest, TableOptions
from smem.sources.live import LiveSource

from workload import ksm_merged, ksm_running, obedient_process

pytestmark = pytest.mark.skipif(not os.path.exists('/proc/self/smaps_rollup'), reason='needs smaps_rollup (Linux 4.14+)')

HOUR = 3600.0
BOUND = 0.01
#: ksmd started and stopped (workload.ksm_running): one test at a time, here and in test_breakdown
KSM = pytest.mark.xdist_group('ksm')


def _request(*pids):
    return ReportRequest(query=Query(pids=tuple(pids), jobs=1), table=TableOptions(columns=('pid', 'pss', 'uss')))


def _pss(snapshot):
    return {p.pid: p.totals.get('Pss') for p in snapshot.processes}


class _Full(dict):
    """A full read's PSS by pid, made just after the Refresher's, with the one made just before it
    (``before``): a process of another worker starting or ending between two reads moves the PSS
    of the pages a process shares with it (Python's own library among them), so a kept figure is
    held to the full read on either side of it."""

    def __init__(self, after, before):
        super().__init__(after)
        self.before = before


def _both(refresher, *pids, request=None, source=None):
    """(the Refresher's PSS by pid, a _Full of the full reads on either side of it).  ``request``
    instead of one of ``pids``; ``source``: the Refresher reads it instead of the request's."""
    request = request or _request(*pids)
    the_plan = plan(request)
    load = refresher.load if source is None else lambda _, *args, **kwargs: refresher.load(source, *args, **kwargs)
    before = _pss(read_snapshot(request, the_plan)[0])
    kept = _pss(read_snapshot(request, the_plan, load=load)[0])
    return kept, _Full(_pss(read_snapshot(request, the_plan)[0]), before)


def _close(kept, full):
    assert kept.keys() == full.keys()
    for pid, pss in full.items():
        sides = [pss, *([full.before[pid]] if pid in getattr(full, "before", {}) else [])]
        assert any(abs(kept[pid] - side) <= BOUND * side for side in sides), (pid, kept[pid], sides)


def test_a_process_that_grows_is_read_again():
    with obedient_process() as a:
        refresher = Refresher(HOUR)
        _both(refresher, a.pid)
        a.grow(8192)
        kept, full = _both(refresher, a.pid)
        assert full[a.pid] >= 8192
        _close(kept, full)
        assert refresher.reread == 1


def test_a_process_that_moves_shows_its_command_line_now():
    """A process read again for its memory keeps its name but not its command line: a server
    that grows and says so in its title (nginx, postgres) is shown with the new title."""
    with obedient_process() as a:
        request = _request(a.pid)
        request = request._replace(table=request.table._replace(columns=('pid', 'command', 'pss')))
        the_plan = plan(request)
        refresher = Refresher(HOUR)
        read_snapshot(request, the_plan, load=refresher.load)
        a.retitle(b'smem-obedient: busy now')
        a.grow(1024)
        snapshot = read_snapshot(request, the_plan, load=refresher.load)[0]
        assert refresher.reread == 1
        assert [p.cmdline for p in snapshot.processes] == ['smem-obedient: busy now']


@pytest.mark.skipif(os.geteuid() != 0, reason='setuid needs root')
@pytest.mark.parametrize("columns, user_filter", [(("pid", "user", "pss"), None), (("pid", "pss"), None),
                                                  (("pid", "pss"), "^root$")])
def test_a_process_that_drops_root_shows_its_new_user(columns, user_filter):
    """A server started as root that setuids to a user (its name unchanged) and grows is that
    user's now, as a full read says, whether or not the command line is shown; -U root leaves it out."""
    with obedient_process() as a:
        query = Query(pids=(a.pid,), jobs=1, user_filter=user_filter)
        request = ReportRequest(query=query, table=TableOptions(columns=columns))
        the_plan = plan(request)
        refresher = Refresher(HOUR)
        assert [p.user for p in read_snapshot(request, the_plan, load=refresher.load)[0].processes] == ['root']
        a.become(65534)
        a.grow(1024)
        again = read_snapshot(request, the_plan, load=refresher.load)[0].processes
        full = read_snapshot(request, the_plan)[0].processes
        assert [(p.uid, p.user) for p in again] == [(p.uid, p.user) for p in full]
        assert [p.uid for p in full] == ([] if user_filter else [65534])


def _retitled_and_grown(process, request, title):
    """(the Refresher, its reading before, its reading after ``process`` retitled itself and
    grew by 4 MiB, a full read then, a full read just before that reading: see _Full)."""
    the_plan = plan(request)
    refresher = Refresher(HOUR)
    first = read_snapshot(request, the_plan, load=refresher.load)[0]
    process.retitle(title)
    process.grow(4096)
    before = read_snapshot(request, the_plan)[0]
    again = read_snapshot(request, the_plan, load=refresher.load)[0]
    return refresher, first, again, read_snapshot(request, the_plan)[0], before


def test_a_report_that_shows_no_command_line_reads_it_once():
    """The user view (and any report without the command column or -P) shows no command line:
    a process read again for its memory keeps the one first read, and its figures are now's."""
    with obedient_process() as a:
        request = ReportRequest(query=Query(view='user', pids=(a.pid,), jobs=1), table=TableOptions())
        refresher, first, snapshot, full, before = _retitled_and_grown(a, request, b'smem-obedient: busy now')
        assert refresher.reread == 1
        assert [p.cmdline for p in snapshot.processes] == [p.cmdline for p in first.processes]
        _close(_pss(snapshot), _Full(_pss(full), _pss(before)))
        assert _pss(snapshot)[a.pid] > _pss(first)[a.pid]


@pytest.mark.parametrize("view, columns", [("process", ("pid", "pss")), ("user", None)])
def test_a_process_retitled_out_of_the_filter_leaves_the_report(view, columns):
    """-P matched its command line; it grows and retitles itself so that -P no longer does: it
    leaves the report at once, as a full read leaves it out (not kept for its unchanged name)."""
    with obedient_process() as a:
        query = Query(view=view, pids=(a.pid,), jobs=1, process_filter="workload")  # (in its command line only)
        _, first, again, full, _ = _retitled_and_grown(a, ReportRequest(query=query, table=TableOptions(columns=columns)),
                                                       b"renamed-worker")
        assert [p.pid for p in first.processes] == [a.pid]
        assert [p.pid for p in again.processes] == [p.pid for p in full.processes] == []


@pytest.mark.uses("cpu")
def test_mapping_a_file_another_maps_moves_the_pss_of_both(tmp_path):
    shared = tmp_path / 'shared.dat'
    shared.write_bytes(os.urandom(8 << 20))
    with obedient_process() as a, obedient_process() as b:
        a.map_file(str(shared))
        refresher = Refresher(HOUR)
        before, _ = _both(refresher, a.pid, b.pid)
        b.map_file(str(shared))  # a's 8 MiB, its own until now, is now half a's
        kept, full = _both(refresher, a.pid, b.pid)
        assert full[a.pid] <= before[a.pid] - 3 * 1024  # (a moved though it did nothing)
        _close(kept, full)
        assert refresher.reread == 2


@pytest.mark.uses("cpu")
def test_a_process_that_exits_leaves_and_moves_its_sharers(tmp_path):
    shared = tmp_path / 'shared.dat'
    shared.write_bytes(os.urandom(8 << 20))
    with obedient_process() as a, obedient_process() as b:
        a.map_file(str(shared))
        b.map_file(str(shared))
        refresher = Refresher(HOUR)
        before, _ = _both(refresher, a.pid, b.pid)
        b.stop()  # a holds the whole file again
        kept, full = _both(refresher, a.pid, b.pid)
        assert b.pid not in kept
        assert full[a.pid] >= before[a.pid] + 3 * 1024
        _close(kept, full)


@pytest.mark.uses("cpu")
@KSM
def test_pages_ksm_merges_while_the_process_sleeps_move_its_figure():
    """ksmd merges a sleeping process's pages: its stat does not move, yet its PSS falls (16 MiB
    of one page repeated, to a few KiB); the figure is read again, not kept for max-staleness."""
    with obedient_process() as a:
        a.mergeable(16384)
        refresher = Refresher(HOUR)
        before, _ = _both(refresher, a.pid)
        if before[a.pid] < 16384:
            pytest.skip('KSM merged the pages before the first read (ksmd was running)')
        with ksm_running():
            ksm_merged(a.pid, 16384 // 4)
            kept, full = _both(refresher, a.pid)
        assert full[a.pid] <= before[a.pid] - 15 * 1024
        _close(kept, full)
        assert refresher.reasons['ksm'] == 1


@pytest.mark.uses("cpu")
@KSM
def test_a_process_whose_merged_pages_others_join_is_read_again():
    """a and b hold the same 16 MiB, which KSM merged: each page one KSM page both share.  When
    KSM merges c's copy in while all three sleep, a's and b's counts do not move and no stat
    does, yet each one's share falls by a third: both are read again, for what all merged."""
    with obedient_process() as a, obedient_process() as b, obedient_process() as c:
        for p in (a, b):
            p.mergeable(16384, seed=7)
        refresher = Refresher(HOUR)
        _both(refresher, a.pid, b.pid, c.pid)
        with ksm_running():
            for p in (a, b):
                ksm_merged(p.pid, 16384 // 4)
        _both(refresher, a.pid, b.pid, c.pid)
        assert refresher.reasons['ksm'] == 2  # (their counts moved)
        c.mergeable(16384, seed=7)  # (with ksmd stopped: merged below, while c sleeps)
        before, _ = _both(refresher, a.pid, b.pid, c.pid)
        with ksm_running():
            ksm_merged(c.pid, 16384 // 4)
            kept, full = _both(refresher, a.pid, b.pid, c.pid)
        assert full[a.pid] <= before[a.pid] - 2 * 1024 and full[b.pid] <= before[b.pid] - 2 * 1024
        _close(kept, full)
        assert refresher.reasons['ksm'] == 3


class _KsmMoving(LiveSource):
    """This machine's /proc, but KSM's counters moved at every collection (ksmd merging
    elsewhere); notes whose ksm_stat is asked."""

    def __init__(self):
        super().__init__()
        self.sharing, self.asked = 1000, []

    def read_sys_optional(self, path):
        if path in ('kernel/mm/ksm/pages_shared', 'kernel/mm/ksm/pages_sharing', 'kernel/mm/ksm/ksm_zero_pages'):
            return b'%d\n' % self.sharing
        return super().read_sys_optional(path)

    def read_optional(self, path):
        if path.endswith('/ksm_stat'):
            self.asked.append(int(path.partition('/')[0]))
        return super().read_optional(path)


def _asleep(pid, timeout=30):
    """Once ``pid`` sleeps (state S) with its stat as it was a moment before: waiting on its stdin."""
    import time
    deadline, before = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        with open(f'/proc/{pid}/stat', 'rb') as f:
            now = f.read()
        if now == before and now.rpartition(b')')[2].split()[0] == b'S':
            return
        before = now
        time.sleep(0.1)
    pytest.fail(f'{pid} did not settle')


@pytest.mark.uses("cpu")
def test_a_sleeping_process_ksmd_does_not_scan_is_not_asked_at_every_collection():
    """Read by --pid (each stat read and compared, not held), a sleeping process that gave ksmd
    nothing was asked for its ksm_stat at every collection KSM's counters moved, as if it had
    run: only one whose stat moved may have given ksmd a region since."""
    with open('/proc/self/ksm_stat', 'rb') as f:
        if b'ksm_mergeable' not in f.read():
            pytest.skip('ksm_stat does not say whether ksmd scans a process (before 2025 kernels)')
    from smem.selection import Selection
    with obedient_process() as a:
        _asleep(a.pid)  # (it answers 'ready' before it waits on its stdin: it may run on a moment)
        needs, source, refresher = plan(_request(a.pid)).needs, _KsmMoving(), Refresher(HOUR)
        asked = []
        for _ in range(4):
            source.sharing += 1000
            source.asked.clear()
            refresher.load(source, Selection(pids=(a.pid,)), needs=needs, jobs=1)
            asked.append(list(source.asked))
        assert refresher.reread == 0
        assert asked[1:] == [[a.pid], [], []]  # (asked once the counters moved; it said no and slept)


class _Reborn(LiveSource):
    """This machine's /proc, but ``pid``'s stat gives another start time: what a process that
    took over the pid of one with the same fault counters and sizes would look like."""

    def __init__(self, pid):
        super().__init__()
        self.reborn = pid

    def read_optional(self, path):
        data = super().read_optional(path)
        if path == f'{self.reborn}/stat' and data:
            head, _, rest = data.rpartition(b')')
            fields = rest.split(b' ')
            fields[20] = str(int(fields[20]) + 1).encode()  # field 22, start_time (proc.rst Table 1-4)
            data = head + b')' + b' '.join(fields)
        return data


def test_a_pid_reused_is_a_new_process():
    """A real pid reuse is hard to arrange; what shows it is the start time, so a process whose
    start time changes is read again though nothing else of its stat moved."""
    with obedient_process() as a:
        request = _request(a.pid)
        the_plan = plan(request)
        refresher = Refresher(HOUR)
        needs = the_plan.needs
        from smem.selection import Selection
        selection = Selection(pids=(a.pid,))
        refresher.load(LiveSource(), selection, needs=needs, jobs=1)
        refresher.load(LiveSource(), selection, needs=needs, jobs=1)
        assert refresher.reread == 0  # (nothing moved: kept)
        refresher.load(_Reborn(a.pid), selection, needs=needs, jobs=1)
        assert refresher.reread == 1


def test_a_figure_is_never_older_than_max_staleness():
    with obedient_process() as a:
        now = [1000.0]
        refresher = Refresher(10.0, clock=lambda: now[0])
        request = _request(a.pid)
        the_plan = plan(request)
        read_snapshot(request, the_plan, load=refresher.load)
        for _ in range(6):
            now[0] += 4.0
            read_snapshot(request, the_plan, load=refresher.load)
            assert refresher.oldest_age() <= 10.0


@pytest.mark.uses("cpu")
def test_a_collection_longer_than_the_last_leaves_no_figure_older_than_max_staleness():
    """Collections 25 s apart, alternately instant and 8 s long (the clock moves while one
    reads): a figure just under the cut-off when a long one starts must not be served older."""
    with obedient_process() as a, obedient_process() as b, obedient_process() as c, obedient_process() as d:
        now, took = [1000.0], [0.0]

        class Slow(Refresher):
            def _reading(self, *args):
                now[0] += took[0]
                return super()._reading(*args)

        refresher = Slow(60.0, clock=lambda: now[0])
        request = _request(a.pid, b.pid, c.pid, d.pid)
        the_plan = plan(request)
        read_snapshot(request, the_plan, load=refresher.load)
        for i in range(16):
            now[0] += 25.0
            took[0] = 8.0 if i % 2 else 0.0
            read_snapshot(request, the_plan, load=refresher.load)
            assert refresher.oldest_age() <= 60.0, i


@pytest.mark.uses("cpu")
def test_re_reads_for_age_are_spread_evenly():
    """Four idle processes, max-staleness 60 s, a collection every 15 s: one is re-read for its
    age at each (a quarter of them), never the rest at once when the figures of the first read
    all come of age together."""
    with obedient_process() as a, obedient_process() as b, obedient_process() as c, obedient_process() as d:
        now = [1000.0]
        refresher = Refresher(60.0, clock=lambda: now[0])
        request = _request(a.pid, b.pid, c.pid, d.pid)
        the_plan = plan(request)
        read_snapshot(request, the_plan, load=refresher.load)
        ages = []
        for _ in range(12):
            now[0] += 15.0
            read_snapshot(request, the_plan, load=refresher.load)
            ages.append(refresher.reasons['age'] + refresher.reasons['moved'])
            assert refresher.oldest_age() < 60.0
        assert max(ages) <= 1, ages
        assert sum(ages) >= 11  # (each re-read every minute: none left to grow old)


class _Clock:
    """A clock that a collection may be made to take ``taking`` seconds of: each reading of it
    moves it on by that much (a collection reads it as it starts and as it ends)."""

    def __init__(self, now):
        self.now, self.taking = now, 0.0

    def __call__(self):
        now = self.now
        self.now += self.taking
        return now


@pytest.mark.uses("cpu")
def test_re_reads_for_age_stay_even_after_a_slow_collection():
    """Twelve idle processes, max-staleness 60 s, a collection every 15 s, one of which takes 20 s
    (a machine busy for a while): a figure must then be re-read within 40 s to be under 60 s old
    when such a collection ends, and the re-reads for age come three to six a collection, not in
    waves of none, then most of them (the figures read together coming of age together)."""
    processes = [obedient_process() for _ in range(12)]
    with contextlib.ExitStack() as stack:
        pids = [stack.enter_context(p).pid for p in processes]
        clock = _Clock(1000.0)
        refresher = Refresher(60.0, clock=clock)
        request = _request(*pids)
        the_plan = plan(request)
        read_snapshot(request, the_plan, load=refresher.load)
        ages = []
        for k in range(14):
            clock.now += 15.0
            clock.taking = 10.0 if k == 1 else 0.0  # (read twice: 20 s)
            read_snapshot(request, the_plan, load=refresher.load)
            clock.taking = 0.0
            ages.append(refresher.reasons['age'] + refresher.reasons['moved'])
            assert refresher.oldest_age() < 60.0
        assert all(2 <= n <= 6 for n in ages[3:]), ages


def test_max_staleness_0_reads_everything():
    with obedient_process() as a:
        refresher = Refresher(0)
        request = _request(a.pid)
        the_plan = plan(request)
        read_snapshot(request, the_plan, load=refresher.load)
        read_snapshot(request, the_plan, load=refresher.load)
        assert refresher.reread == 1


@pytest.mark.uses("network")
def test_serve_keeps_what_did_not_move_and_says_how_old_it_is():
    parser = pytest.importorskip("prometheus_client.parser", reason="smem[metrics]: prometheus_client not installed")
    from serve_process import serving, stop
    from test_serve import _get

    def scrape(base):
        families = parser.text_string_to_metric_families(_get(base + '/metrics')[1])
        return {s.name: s.value for f in families for s in f.samples if not s.labels or s.name.endswith('pss_bytes')}

    with obedient_process() as a:
        proc, base = serving('--pid', a.pid, '--min-interval', '0', '--max-staleness', '3600', '--top', '1')
        try:
            scrape(base)
            idle = scrape(base)
            a.grow(4096)
            grown = scrape(base)
        finally:
            stop(proc)
            proc.stdout.close()
    assert idle['smem_collection_reread_processes'] == 0
    assert grown['smem_collection_reread_processes'] == 1
    # re-read, not the old figure: 4 MiB more, less what its shares of library pages lose as other
    # processes (the parallel suite's) start meanwhile
    assert grown['smem_process_pss_bytes'] >= idle['smem_process_pss_bytes'] + 3 * 1024 * 1024
    assert 0 <= grown['smem_oldest_figure_age_seconds'] < 3600
