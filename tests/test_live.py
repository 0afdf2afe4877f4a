"""The live system: processes this test starts, with sharing arranged to the page."""

import os
import re

import pytest

from conftest import run_smem
from smem.loading import load_reading
from smem.model import uss_of
from smem.selection import Selection
from smem.sources import LiveSource
from workload import PAGE_KIB, expected_pss_kib, forked_workers

pytestmark = [pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs /proc smaps"), pytest.mark.uses("cpu")]

SHARED_KIB, PRIVATE_KIB, WORKERS = 8192, 2048, 3


@pytest.fixture(scope="module")
def workers(tmp_path_factory):
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else str(tmp_path_factory.mktemp("shm"))
    path = os.path.join(shm, f"smem-live-test-{os.getpid()}")
    with forked_workers(SHARED_KIB, PRIVATE_KIB, WORKERS, shared_path=path) as wl:
        yield wl, path
    if os.path.exists(path):
        os.unlink(path)


def test_model_matches_the_arranged_regions_to_the_page(workers):
    wl, _ = workers
    snapshot = load_reading(LiveSource(), Selection())
    by_pid = {p.pid: p for p in snapshot.processes}
    assert set(wl.pids) <= set(by_pid)
    for pid in wl.pids:
        maps = {m.start: m for m in by_pid[pid].mappings}
        for name, region in wl.regions[pid].items():
            m = maps[region.start]
            assert m.counters["Rss"] == region.rss_kib, (pid, name)
            assert abs(m.counters["Pss"] - region.pss_kib) <= PAGE_KIB, (pid, name)
            if region.uss_kib is not None:
                assert uss_of(m.counters) == region.uss_kib, (pid, name)


def test_cli_reports_the_shared_region_split_between_the_workers(workers):
    wl, path = workers
    n = len(wl.pids)
    assert n == WORKERS + 1
    proc = run_smem("-M", re.escape(path), "-c", "pid uss pss rss", "-H")
    assert proc.returncode == 0, proc.stderr
    rows = {int(l.split()[0]): list(map(int, l.split()[1:])) for l in proc.stdout.decode().splitlines()}
    assert set(rows) == set(wl.pids)
    for uss, pss, rss in rows.values():
        assert uss == 0
        assert rss == SHARED_KIB
        assert abs(pss - expected_pss_kib(SHARED_KIB, n)) <= PAGE_KIB
        assert abs(pss - SHARED_KIB // n) <= PAGE_KIB
    # the mapping view: one mapping, n processes, PSS adds back up to the region
    proc = run_smem("-m", "-M", re.escape(path), "-c", "pids count pss avgpss rss", "-H")
    (line,) = proc.stdout.decode().splitlines()
    pids, count, pss, avgpss, rss = map(int, line.split())
    assert (pids, count, rss) == (n, n, n * SHARED_KIB)
    assert abs(pss - SHARED_KIB) <= n * PAGE_KIB
    assert avgpss == pss // n


def test_user_view_and_totals_add_up_over_the_workers(workers):
    wl, _ = workers
    procs = run_smem("-c", "pid uss pss rss vss swap", "-H", "-U", "^root$")
    rows = [list(map(int, l.split())) for l in procs.stdout.decode().splitlines()]
    mine = [r for r in rows if r[0] in wl.pids]
    assert len(mine) == len(wl.pids)
    for pid, uss, pss, rss, vss, swap in mine:
        # each worker holds its private copy (USS) and a share of the region (PSS)
        assert uss >= PRIVATE_KIB
        assert uss <= pss <= rss <= vss
    users = run_smem("-u", "-c", "user count uss pss rss vss", "-H", "-U", "^root$")
    (line,) = users.stdout.decode().splitlines()
    _, count, uss, pss, rss, vss = line.split()
    # a second read of /proc: other root processes may come and go meanwhile, so compare loosely
    assert int(count) >= len(wl.pids)
    assert int(uss) >= sum(r[1] for r in mine) and int(vss) >= sum(r[4] for r in mine)
