"""Live, the loader reads a chunk of processes' command lines and rollups before it parses any
(Source.read_ahead, smem.loading.process.files_read_ahead): the same reading as one file at a
time, a process gone meanwhile still skipped without a word, and no rollup read ahead for a
process that -P or -U may leave out (reading it walks its page tables and stalls it).  Real
processes this test starts, with regions of known size."""

import os
import subprocess
import sys

import pytest

from smem.loading import load_reading
from smem.model import Need, Needs
from smem.selection import Selection
from smem.sources import LiveSource
from workload import PAGE_KIB, expected_pss_kib, forked_workers

SHARED_KIB, PRIVATE_KIB, WORKERS = 8192, 2048, 4
NEEDS = Needs(Need.COMMAND, frozenset({"Pss", "Rss", "Swap", "Private_Clean", "Private_Dirty"}))


class Recorded(LiveSource):
    """The live machine, saying which files the loader asked it to read ahead, and which it read."""

    def __init__(self, ahead=True):
        super().__init__()
        self.asked, self.read_paths, self.ahead = [], [], ahead

    def read_ahead(self, paths):
        self.asked.extend(paths)
        if self.ahead:
            super().read_ahead(paths)

    def read(self, path):
        self.read_paths.append(path)
        return super().read(path)


@pytest.fixture(scope="module")
def workers():
    with forked_workers(SHARED_KIB, PRIVATE_KIB, WORKERS) as workload:
        yield workload


def _ours(reading, pids):
    return {p.pid: (p.cmdline, p.uid, p.totals["Pss"] >= expected_pss_kib(SHARED_KIB, WORKERS + 1) + PRIVATE_KIB,
                    p.totals["Private_Clean"] + p.totals["Private_Dirty"] >= PRIVATE_KIB)
            for p in reading.processes if p.pid in pids}


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("jobs", [1, 2])
def test_read_ahead_gives_what_reading_each_file_as_asked_gives(workers, jobs):
    pids = set(workers.pids)
    ahead, one_by_one = Recorded(), Recorded(ahead=False)
    read_ahead = load_reading(ahead, needs=NEEDS, jobs=jobs)
    as_asked = load_reading(one_by_one, needs=NEEDS, jobs=jobs)
    assert _ours(read_ahead, pids) == _ours(as_asked, pids)
    assert len(_ours(read_ahead, pids)) == WORKERS + 1
    assert all(all(figures[2:]) for figures in _ours(read_ahead, pids).values())
    if jobs == 1:  # (a worker's read-ahead is asked in its own process)
        for pid in pids:
            assert {f"{pid}/cmdline", f"{pid}/smaps_rollup"} <= set(ahead.asked)
    # what was read ahead was not read again: the serial loader asked read() for none of ours
    # that the kernel had given (a worker's reads are its own)
    mine = [p for p in ahead.read_paths if p.split("/")[0].isdigit() and int(p.split("/")[0]) in pids]
    assert jobs == 2 or len(mine) == 2 * len(pids)  # (read() still answers each, from what was read)


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("selection", [Selection(process="smem-fw"), Selection(user="root"),
                                       Selection(process="no such process at all")])
def test_no_rollup_is_read_ahead_where_a_filter_chooses_first(workers, selection):
    source = Recorded()
    load_reading(source, selection, needs=NEEDS, jobs=1)
    assert source.asked and all(path.endswith("/cmdline") for path in source.asked)
    if selection.process is not None and "no such" in selection.process.pattern:
        assert not any(path.endswith("smaps_rollup") for path in source.read_paths)


@pytest.mark.uses("cpu")
def test_a_max_rss_is_checked_before_any_rollup_is_read(workers):
    source = Recorded()
    load_reading(source, needs=Needs(NEEDS.kinds, NEEDS.counters, max_rss_kib=1), jobs=1)
    assert source.asked and not any(path.endswith("smaps_rollup") for path in source.asked)


def test_a_process_gone_between_the_read_ahead_and_its_read_is_skipped():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        gone = sleeper.pid

        class Killing(Recorded):
            def read_ahead(self, paths):
                super().read_ahead(paths)
                if f"{gone}/cmdline" in paths:  # read ahead, then gone before it is parsed
                    sleeper.kill()
                    sleeper.wait()

        source = Killing()
        reading = load_reading(source, needs=NEEDS, jobs=1, listed=[os.getpid(), gone])
        assert f"{gone}/smaps_rollup" in source.asked
        # (its files were read while it lived, but it is gone: skipped, not shown as an owner "?")
        assert [p.pid for p in reading.processes] == [os.getpid()]
        assert not reading.unreadable
        # what was read ahead and not read is let go with the reading: not served later as now's
        with pytest.raises(FileNotFoundError):
            source.read(f"{gone}/smaps_rollup")
    finally:
        sleeper.kill()
        sleeper.wait()
