"""Figures from the kernel's counters where a process only faulted in pages of its own
(smem.private_growth, used by smem.incremental): equal to a walk where they are given, and a
walk wherever the counters cannot say (a free, a page in swap, counters that disagree)."""

import os
import shutil
import subprocess
import sysconfig

import pytest

from smem.app import plan, read_snapshot
from smem.incremental import Refresher
from smem.options import Query, ReportRequest, TableOptions
from smem.parsers.stat import parse_stat
from smem.parsers.statm import parse_statm
from smem.private_growth import CounterTrust, Payoff, agrees, baseline_of, grown, large_folios
from smem.parsers.vmstat import parse_vmstat
from smem.sources.folio_stats import mthp_counts

from workload import obedient_process

pytestmark = pytest.mark.skipif(not os.path.exists('/proc/self/smaps_rollup'), reason='needs smaps_rollup (Linux 4.14+)')

HOUR = 3600.0
PAGE_KIB = os.sysconf('SC_PAGE_SIZE') // 1024


def _request(*pids):
    return ReportRequest(query=Query(pids=tuple(pids), jobs=1), table=TableOptions(columns=('pid', 'pss', 'uss', 'rss')))


def _figures(snapshot):
    return {p.pid: (p.totals.get('Pss'), p.totals.get('Private_Dirty'), p.totals.get('Rss'))
            for p in snapshot.processes}


class _Walked(tuple):
    """A walk's (PSS, USS, RSS) of the process just after the Refresher's read, with ``pss_before``,
    a walk's PSS just before it."""

    pss_before = None


def _collect(refresher, pid):
    """(the Refresher's figures of ``pid``, a _Walked): the process is idle between the reads."""
    request = _request(pid)
    the_plan = plan(request)
    before = _figures(read_snapshot(request, the_plan)[0])[pid]
    kept = _figures(read_snapshot(request, the_plan, load=refresher.load)[0])[pid]
    walked = _Walked(_figures(read_snapshot(request, the_plan)[0])[pid])
    walked.pss_before = before[0]
    return kept, walked


def _agree(kept, walked):
    """Its RSS and USS exactly (its own pages); its PSS between the walks on either side of it, to
    1% (a page it shares with another test's Python moves as those start and exit)."""
    assert kept[1:] == walked[1:], (kept, walked)
    low, high = sorted((walked[0], walked.pss_before))
    assert 0.99 * low <= kept[0] <= 1.01 * high, (kept, walked, walked.pss_before)


def test_a_process_that_only_grows_is_given_its_figures_by_its_counters():
    with obedient_process() as p:
        refresher = Refresher(HOUR, trust_after=1)
        _collect(refresher, p.pid)
        p.grow(256)  # (the first order faults in the code that serves it: pages of files)
        _collect(refresher, p.pid)
        assert refresher.reread == 1 and refresher.counted == 0
        before, _ = _collect(refresher, p.pid)
        for _ in range(3):
            p.grow(512)
            kept, walked = _collect(refresher, p.pid)
            assert refresher.counted == 1 and refresher.reread == 0
            # its RSS and USS are the walk's, and its PSS rose by as much as its RSS: what the
            # pages it grew add (its share of pages it shares moves as other tests' Pythons
            # start and stop; that is the sharer index's, and with --pid it follows no one)
            assert kept[1:] == walked[1:], (kept, walked)
            assert kept[0] - before[0] == kept[2] - before[2] >= 512, (before, kept)
            before = kept


def test_a_process_that_frees_is_walked():
    with obedient_process() as p:
        refresher = Refresher(HOUR, trust_after=1)
        _collect(refresher, p.pid)
        p.grow(256)
        p.grow(256)
        _collect(refresher, p.pid)
        p.free()
        kept, walked = _collect(refresher, p.pid)
        assert refresher.counted == 0 and refresher.reread == 1
        _agree(kept, walked)


def test_counters_not_yet_trusted_are_not_used():
    with obedient_process() as p:
        refresher = Refresher(HOUR, trust_after=100)
        _collect(refresher, p.pid)
        for _ in range(3):
            p.grow(256)
            kept, walked = _collect(refresher, p.pid)
            assert refresher.counted == 0 and refresher.reread == 1
            _agree(kept, walked)


def test_a_growing_process_is_walked_once_its_walk_is_max_staleness_old():
    with obedient_process() as p:
        now = [1000.0]
        refresher = Refresher(60.0, trust_after=1, clock=lambda: now[0])
        _collect(refresher, p.pid)
        p.grow(256)
        _collect(refresher, p.pid)
        walked_at = now[0]
        counted = []
        for _ in range(8):
            now[0] += 15.0
            p.grow(256)
            _collect(refresher, p.pid)
            counted.append(refresher.counted)
            if not refresher.counted:
                assert refresher.reread == 1
                walked_at = now[0]
            assert now[0] - walked_at < 60.0
            assert refresher.oldest_age() < 60.0
        assert 0 in counted and 1 in counted, counted


def _now(pid):
    """(stat, statm, smaps_rollup counters) of a process that is not running."""
    stat = parse_stat(open(f'/proc/{pid}/stat', 'rb').read())
    statm = parse_statm(open(f'/proc/{pid}/statm', 'rb').read())
    counters = {}
    for line in open(f'/proc/{pid}/smaps_rollup').read().splitlines()[1:]:
        key, value = line.split(':')
        counters[key] = int(value.split()[0])
    return stat, statm, counters


def test_the_counters_say_what_the_walk_found_on_this_kernel():
    """statm of an idle process against its walk: where this fails, the kernel sums its counters
    lazily, and CounterTrust must keep them unused (see the next test)."""
    with obedient_process() as p:
        p.grow(1024)
        stat, statm, counters = _now(p.pid)
        assert agrees(statm, counters, PAGE_KIB)
        base = baseline_of(stat, statm, counters, {'Pss': counters['Pss']}, PAGE_KIB)
        assert base is not None and base.anonymous * PAGE_KIB == counters['Anonymous']


def test_the_rule_on_what_a_fault_can_do():
    """A baseline of 100 anonymous and 50 shared pages after 1,000 minor faults, and what the
    counters say next."""
    stat, statm, counters = _now(os.getpid())
    base = baseline_of(stat._replace(minflt=1000, majflt=3), statm._replace(resident=150, shared=50),
                       {'Rss': 150 * PAGE_KIB, 'Anonymous': 100 * PAGE_KIB, 'Pss_Anon': 100 * PAGE_KIB, 'Swap': 0},
                       {'Pss': 500, 'Pss_File': 40, 'Private_Dirty': 300, 'Swap': 0}, PAGE_KIB)
    later = stat._replace(minflt=1010, majflt=3)
    # ten faults, ten new pages: each a page of its own
    assert grown(base, later, statm._replace(resident=160, shared=50), PAGE_KIB) == \
        {'Pss': 500 + 10 * PAGE_KIB, 'Pss_File': 40, 'Private_Dirty': 300 + 10 * PAGE_KIB, 'Swap': 0}
    # ten faults and nothing new: copy-on-write breaks (PSS rose) or the zero page
    assert grown(base, later, statm._replace(resident=150, shared=50), PAGE_KIB) is None
    # ten faults, twenty new pages: something other than its faults (a huge page, another's write)
    assert grown(base, later, statm._replace(resident=170, shared=50), PAGE_KIB) is None
    # no fault, ten pages fewer: freed, swapped out or reclaimed, shared or not
    assert grown(base, stat._replace(minflt=1000, majflt=3), statm._replace(resident=140, shared=50), PAGE_KIB) is None
    # a page of a file came in or went
    assert grown(base, later, statm._replace(resident=161, shared=51), PAGE_KIB) is None
    # a major fault: a page read in from a file or swap
    assert grown(base, later._replace(majflt=4), statm._replace(resident=160, shared=50), PAGE_KIB) is None
    # nothing at all moved (its size did): the figures of the walk
    assert grown(base, stat._replace(minflt=1000, majflt=3), statm._replace(resident=150, shared=50),
                 PAGE_KIB)['Pss'] == 500
    # pages in swap at the walk: one may come back shared from the swap cache, as a minor fault
    assert baseline_of(stat, statm._replace(resident=150, shared=50),
                       {'Rss': 150 * PAGE_KIB, 'Anonymous': 100 * PAGE_KIB, 'Swap': 8}, {}, PAGE_KIB) is None
    # anonymous pages shared (with a child): a copy-on-write break is a fault that maps no new page,
    # which a huge page's fault (512 pages) can balance: only while the machine made no large folio
    sharing = baseline_of(stat._replace(minflt=1000, majflt=3), statm._replace(resident=150, shared=50),
                          {'Rss': 150 * PAGE_KIB, 'Anonymous': 100 * PAGE_KIB, 'Pss_Anon': 60 * PAGE_KIB, 'Swap': 0},
                          {'Pss': 500}, PAGE_KIB, large=7)
    now = statm._replace(resident=160, shared=50)
    assert grown(sharing, later, now, PAGE_KIB, large=7) == {'Pss': 500 + 10 * PAGE_KIB}
    assert grown(sharing, later, now, PAGE_KIB, large=8) is None
    assert grown(sharing, later, now, PAGE_KIB, large=None) is None
    assert grown(base, later, now, PAGE_KIB, large=8) is not None  # (none shared: a huge page is its own)
    # the counters and the walk disagree: no baseline
    assert baseline_of(stat, statm._replace(resident=151, shared=50),
                       {'Rss': 150 * PAGE_KIB, 'Anonymous': 100 * PAGE_KIB, 'Swap': 0}, {}, PAGE_KIB) is None


def _huge_pages():
    try:
        with open('/sys/kernel/mm/transparent_hugepage/enabled') as f:
            return '[never]' not in f.read()
    except OSError:
        return False


@pytest.mark.skipif(not _huge_pages(), reason='needs transparent huge pages (always or madvise)')
def test_a_copy_on_write_break_balanced_by_a_huge_page_is_walked(tmp_path):
    """A process sharing 511 pages with its child writes them (511 faults, no new page: its PSS and
    USS rise) and faults one huge page (one fault, 512 pages): its counters rose alike, but it
    shared anonymous pages at the walk and a large folio was made since, so it is walked."""
    compiler = sysconfig.get_config_var('CC') or 'cc'
    if not shutil.which(compiler.split()[0]):
        pytest.skip('no C compiler')
    source = os.path.join(os.path.dirname(__file__), 'cow_and_huge_page.c')
    subprocess.run([*compiler.split(), '-O1', '-o', str(tmp_path / 'cow'), source], check=True)
    p = subprocess.Popen([str(tmp_path / 'cow')], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert p.stdout.readline() == b'ready\n'
        refresher = Refresher(HOUR, trust_after=1)
        _collect(refresher, p.pid)
        for order in (b'grow\n', b'write\n'):  # (the first makes it move and be walked: its baseline)
            p.stdin.write(order)
            p.stdin.flush()
            p.stdout.readline()
            kept, walked = _collect(refresher, p.pid)
        with open(f'/proc/{p.pid}/smaps_rollup') as f:
            huge = [int(line.split()[1]) for line in f if line.startswith('AnonHugePages')]
        if huge != [2048]:
            pytest.skip(f'no huge page was given: {huge}')
        assert refresher.counted == 0
        _agree(kept, walked)  # (the counters would have missed 2 MiB of USS)
    finally:
        p.stdin.close()
        p.wait(timeout=10)


def test_large_folios_made_are_counted_from_vmstat_and_each_size(tmp_path):
    for size, (faults, swapins) in {'64kB': (5, 2), '2048kB': (11, 0)}.items():
        (tmp_path / f'hugepages-{size}' / 'stats').mkdir(parents=True)
        (tmp_path / f'hugepages-{size}' / 'stats' / 'anon_fault_alloc').write_text(f'{faults}\n')
        (tmp_path / f'hugepages-{size}' / 'stats' / 'swpin').write_text(f'{swapins}\n')
    mthp = mthp_counts(str(tmp_path / 'hugepages-*' / 'stats') + '/')
    assert sorted(mthp) == [0, 2, 5, 11]
    vmstat = parse_vmstat(b'nr_free_pages 9\nthp_fault_alloc 100\nthp_collapse_alloc 3\n')
    assert large_folios(vmstat, mthp) == 100 + 3 + 5 + 2 + 11
    assert large_folios(vmstat, []) == 103  # (a kernel without other sizes)
    assert large_folios(parse_vmstat(b'nr_free_pages 9\n'), mthp) is None  # (no THP in this kernel: unknown)
    assert large_folios(None, mthp) is None
    assert large_folios(vmstat, None) is None  # (a size's counts unreadable)
    (tmp_path / 'hugepages-64kB' / 'stats' / 'swpin').write_text('garbled\n')
    assert mthp_counts(str(tmp_path / 'hugepages-*' / 'stats') + '/') is None
    with open('/proc/vmstat', 'rb') as f:
        this = large_folios(parse_vmstat(f.read()), mthp_counts())  # (this machine's: known wherever it has THP)
    assert this is None or this >= 0


def test_counters_that_disagree_are_not_trusted():
    trust = CounterTrust()
    for _ in range(CounterTrust.NEEDED - 1):
        trust.checked(True)
    assert not trust.trusted
    trust.checked(True)
    assert trust.trusted
    for _ in range(3):
        trust.checked(False)
    assert not trust.trusted and not trust.hopeless  # (one disagreement in ten at most)
    lazy = CounterTrust()
    for i in range(200):
        lazy.checked(i % 5 == 0)  # (a kernel whose counters have a remainder in most processes)
    assert not lazy.trusted and lazy.hopeless


def test_counters_that_give_no_figure_are_left_unread_a_while():
    """Where nearly every moved process also freed (a long interval), the counters are read for
    nothing: after 64 reads that gave fewer than one figure in 40, none is read for the pause,
    twice as long the next time, and as long as the first again once they pay."""
    payoff = Payoff(120.0)
    now = 0.0
    payoff.collected(300, 0, 0, now)  # (the first collections read baselines: no verdict on them)
    assert payoff.reading(now + 1.0)
    for _ in range(6):
        payoff.collected(10, 10, 0, now)
        now += 15.0
        assert payoff.reading(now)
    payoff.collected(10, 10, 0, now)  # (70 tries, no figure)
    assert not payoff.reading(now + 119.0) and payoff.reading(now + 120.0)
    payoff.collected(500, 500, 0, now + 60.0)  # (a collection that read none counts nothing)
    now += 120.0
    for _ in range(7):
        payoff.collected(10, 10, 0, now)
        now += 15.0
    assert not payoff.reading(now - 15.0 + 239.0) and payoff.reading(now - 15.0 + 240.0)
    now += 240.0
    for _ in range(7):
        payoff.collected(30, 10, 1, now)  # (one in thirty gives a figure: worth it)
        assert payoff.reading(now)
        now += 15.0
    assert payoff.pause == 120.0
