"""A process ksmd does not scan that wakes for less than a clock tick, gives ksmd a region and
sleeps again (smem.ksm_changes): its stat does not move, its schedstat does (smem.sources.held_stats).
Split from test_incremental.py, whose helpers it uses.
"""

import os
import shutil
import subprocess

import pytest

from smem.incremental import Refresher
from smem.options import Query, ReportRequest, TableOptions
from smem.parsers.vmstat import parse_vmstat
from smem.sources.held_stats import PASSIVE, held_stats
from smem.sources.live import LiveSource

from test_incremental import HOUR, KSM, _asleep, _both, _close
from workload import ksm_merged, ksm_running, obedient_process


class _KsmAsked(LiveSource):
    """This machine's /proc; notes whose ksm_stat is asked."""

    def __init__(self):
        super().__init__()
        self.asked = set()

    def read_optional(self, path):
        if path.endswith('/ksm_stat'):
            self.asked.add(int(path.partition('/')[0]))
        return super().read_optional(path)


def _stat(pid):
    with open(f'/proc/{pid}/stat', 'rb') as f:
        return f.read()


def _passive():
    """/proc/vmstat's counters that make a scan read every stat, and no schedstat (held_stats.PASSIVE)."""
    with open('/proc/vmstat', 'rb') as f:
        return sorted((k, v) for k, v in parse_vmstat(f.read()).items() if k.startswith(PASSIVE))


@pytest.mark.uses("cpu")
@KSM
def test_a_region_given_in_less_than_a_tick_is_asked_for(tmp_path):
    """A sleeping process ksmd does not scan wakes for microseconds, gives ksmd 16 MiB (madvise
    faults nothing) and sleeps again: its stat is as it was (CPU time counts in clock ticks), only
    its schedstat moved.  It was not asked for its ksm_stat again, and its PSS, which fell by the
    16 MiB as ksmd merged them, kept for max-staleness.  It ran: it is asked, and read again."""
    with open('/proc/self/ksm_stat', 'rb') as f:
        if b'ksm_mergeable' not in f.read():
            pytest.skip('ksm_stat does not say whether ksmd scans a process (before 2025 kernels)')
    with open('/proc/self/schedstat', 'rb') as f:
        if f.read().startswith(b'0'):
            pytest.skip('the kernel keeps no run time (schedstat)')
    if held_stats('/proc') is None:
        pytest.skip('no C step: the stats are read, not held, and no schedstat with them')
    if shutil.which('gcc') is None:
        pytest.skip('needs gcc')
    binary = tmp_path / 'ksm_giver'
    fixture = os.path.join(os.path.dirname(__file__), 'fixtures', 'ksm_giver.c')
    subprocess.run(['gcc', '-O2', '-o', str(binary), fixture], check=True)
    # the whole machine's stats held (no --pid), the giver's figures reported
    request = ReportRequest(query=Query(process_filter='^ksm_giver$', jobs=1),
                            table=TableOptions(columns=('pid', 'pss', 'uss')))
    giver = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert giver.stdout.readline() == b'ready\n'
        _asleep(giver.pid)
        with obedient_process() as a:
            source, refresher = _KsmAsked(), Refresher(HOUR)
            before, _ = _both(refresher, request=request, source=source)
            if before[giver.pid] < 16384:
                pytest.skip('the giver\'s pages are not all its own')
            a.mergeable(4096)  # (KSM's counters move: each process ksmd may scan is asked)
            with ksm_running():
                ksm_merged(a.pid, 4096 // 4)
                source.asked.clear()
                passive = _passive()  # (as the scans to come find it, or each reads every stat)
                _both(refresher, request=request, source=source)
            assert giver.pid in source.asked  # (it said ksm_mergeable: no)
            _asleep(giver.pid)
            still = _stat(giver.pid)
            giver.stdin.write(b'g')
            giver.stdin.flush()
            assert giver.stdout.readline() == b'given\n'
            _asleep(giver.pid)
            if _stat(giver.pid) != still:
                pytest.skip('the giver\'s stat moved (it ran across a clock tick): not the case tested')
            source.asked.clear()
            with ksm_running():
                ksm_merged(giver.pid, 16384 // 4)
                kept, full = _both(refresher, request=request, source=source)
            if _passive() != passive:
                pytest.skip('pages were taken from sleeping processes meanwhile: every stat read, no schedstat')
    finally:
        giver.stdin.close()
        giver.wait()
    assert giver.pid in source.asked
    assert refresher.reasons['ksm'] >= 1
    assert full[giver.pid] <= before[giver.pid] - 15 * 1024
    _close(kept, full)
