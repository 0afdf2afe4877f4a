"""Reading processes in worker processes (smem/collect.py) gives what a serial read gives.

On captures (every view; read in one pass, each worker walking the archive too and
loading its share, or held whole, by workers taking chunks) and on live processes this
test starts, the reports of a parallel and a serial read are identical; and the workers
really are other processes, each taking whole chunks or its share, whose results come
back once each.
"""

import os
import subprocess
import time

import pytest

from conftest import FIXTURES, run_smem, without_rollups
from smem.collect import CHUNK, MAX_CHUNKS, chunk_size, each_of_shares, each_result, workers_for
from smem.loading import load_reading
from smem.model import Snapshot
from smem.selection import Selection
from smem.options import TableOptions
from smem.report import make_table
from smem.sources import open_source
from smem.views import VIEWS, needs_of

CAPTURES = [FIXTURES / "captures" / "faithful.tar.gz", FIXTURES / "captures" / "quirks.tar.gz"]


def _barrier(directory, readers, seconds=20):
    """A read that, the first time in each process, waits until ``readers`` processes have
    begun (so each has taken a chunk before any goes on), then gives (pid, reader)."""
    def read(pid):
        mark = directory / str(os.getpid())
        if not mark.exists():
            mark.touch()
            deadline = time.monotonic() + seconds
            while len(list(directory.iterdir())) < readers and time.monotonic() < deadline:
                time.sleep(0.005)
        return pid, os.getpid()
    return read


def _by_pid(pids, read, workers):
    """Every result of each_result, in pid order (it gives them as they come)."""
    return sorted(each_result(pids, read, workers))


def test_workers_take_whole_chunks_and_every_result_comes_back_once(tmp_path):
    pids = list(range(1, 104))
    out = _by_pid(pids, _barrier(tmp_path, 3), 3)
    assert [pid for pid, _ in out] == pids
    readers = [reader for _, reader in out]
    assert len(set(readers)) == 3 and os.getpid() in readers
    size = chunk_size(len(pids))
    for first in range(0, len(pids), size):  # a chunk is read by one process
        assert len(set(readers[first:first + size])) == 1


@pytest.mark.uses("cpu")
def test_chunks_are_few_enough_for_one_page_of_pipe(tmp_path):
    assert chunk_size(100) == CHUNK
    assert -(-1_000_000 // chunk_size(1_000_000)) <= MAX_CHUNKS
    pids = list(range(40_000))  # more than MAX_CHUNKS chunks of CHUNK: bigger chunks, and still a worker
    out = _by_pid(pids, _barrier(tmp_path, 2), 2)
    assert [pid for pid, _ in out] == pids
    assert len({reader for _, reader in out}) == 2


def test_a_failing_worker_has_what_it_took_read_again_here(tmp_path):
    """Its chunks, sent or not, are read here once: through each_result (what the loader folds)
    no pid comes twice or is missing."""
    me = os.getpid()
    failing = tmp_path / "failing"
    taken = []

    def read(pid):
        if os.getpid() == me and not taken:  # hold this process's first chunk until the worker fails
            deadline = time.monotonic() + 20
            while not failing.exists() and time.monotonic() < deadline:
                time.sleep(0.005)
        taken.append(pid)
        if os.getpid() != me and len(taken) > CHUNK:  # in its second chunk, the first one sent
            failing.touch()
            raise RuntimeError("only in a worker")
        return pid, os.getpid()
    pids = list(range(10 * CHUNK))
    results = list(each_result(pids, read, 2))
    assert failing.exists()
    assert sorted(pid for pid, _ in results) == pids
    assert {reader for _, reader in results} == {me}

    def broken(pid):
        raise RuntimeError("everywhere")
    with pytest.raises(RuntimeError, match="everywhere"):
        list(each_result(list(range(40)), broken, 2))


def test_interrupted_the_workers_are_stopped_and_nothing_is_left_open(tmp_path):
    """Ctrl-C while reading: the workers are killed and reaped, their memfds and the queue closed."""
    me = os.getpid()
    fds = sorted(os.listdir("/proc/self/fd"))
    wait = _barrier(tmp_path, 2)

    def read(pid):
        wait(pid)
        if os.getpid() == me:
            raise KeyboardInterrupt
        time.sleep(0.01)  # (a worker still busy when the parent is interrupted)
        return pid
    with pytest.raises(KeyboardInterrupt):
        list(each_result(list(range(10 * CHUNK)), read, 2))
    workers = [int(p.name) for p in tmp_path.iterdir() if int(p.name) != me]
    assert len(workers) == 1
    assert not os.path.exists(f"/proc/{workers[0]}")  # killed, and reaped (no zombie left)
    assert sorted(os.listdir("/proc/self/fd")) == fds


def test_shares_are_read_by_workers_and_a_failed_share_again_here():
    me = os.getpid()
    walks = []

    def shares(mine, n):
        walks.append(sorted(mine))  # (this process's walks only: a worker's list is its own)
        for i in range(30):
            if i % n not in mine:
                continue
            if 2 in mine and os.getpid() != me:
                raise RuntimeError("only in a worker")
            yield i % n, (i, os.getpid())
    items = list(each_of_shares(shares, 3))
    assert sorted(i for _, (i, _) in items) == list(range(30))
    readers = {k: {reader for tag, (_, reader) in items if tag == k} for k in range(3)}
    assert readers[0] == {me} and readers[2] == {me}  # share 2 failed in its worker: read here
    assert len(readers[1]) == 1 and readers[1] != {me}
    assert walks == [[0], [2]]


def test_how_many_workers(monkeypatch):
    cpus = len(os.sched_getaffinity(0))
    monkeypatch.delenv("SMEM_JOBS", raising=False)
    assert workers_for(1, 5000) == 1
    assert workers_for(4, 5000) == 4
    assert workers_for(4, 3) == 3
    assert workers_for(0, 5000) == cpus
    assert workers_for(4, 5000, keeps_text=True) == 1  # every counter kept: the text would have to cross
    monkeypatch.setenv("SMEM_JOBS", "3")
    assert workers_for(None, 5000) == 3
    assert workers_for(2, 5000) == 2


@pytest.mark.parametrize("value", ["abc", "\u00b2", "-1", "2x"])
def test_a_wrong_smem_jobs_is_one_line_and_status_2(value):
    """SMEM_JOBS=abc was ignored without a word, and SMEM_JOBS=\u00b2 (a digit to str.isdigit, not to
    int) a traceback: a wrong value is refused as a wrong --jobs is."""
    result = run_smem("-S", CAPTURES[0], "-u", env={"SMEM_JOBS": value})
    assert result.returncode == 2, result.stderr
    assert result.stdout == b""
    assert result.stderr.decode().splitlines() == [
        f"smem: SMEM_JOBS={value!r}: give a number of processes, or 0 for one per CPU"]


def test_a_huge_smem_jobs_is_as_many_as_the_processes():
    """digits past what int() takes from text (4,300) are still a count: no more workers than pids."""
    assert run_smem("-S", CAPTURES[0], "-u", env={"SMEM_JOBS": "9" * 5000}, check=True).stdout == \
        run_smem("-S", CAPTURES[0], "-u", env={"SMEM_JOBS": "1"}, check=True).stdout


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
@pytest.mark.parametrize("args", [[], ["-m"], ["-u"], ["-t", "-k", "-p"], ["-M", "lib"], ["-w"],
                                  ["-m", "-c", "map count pids pss uss rss vss swap avgpss"],
                                  ["-c", "pid user command swap uss pss rss maps vss anon pss_anon pss_file pss_shmem"],
                                  ["-F", "json"], ["-g"], ["-P", "sh|bash", "-m"]])
def test_parallel_and_serial_captures_give_the_same_bytes(capture, args):
    serial = run_smem("-S", capture, *args, env={"SMEM_JOBS": "1"}, check=True)
    for jobs in ("2", "3"):
        parallel = run_smem("-S", capture, *args, env={"SMEM_JOBS": jobs}, check=True)
        assert parallel.stdout == serial.stdout, (jobs, args)
        assert parallel.stderr == serial.stderr, (jobs, args)
    assert serial.stdout


@pytest.mark.uses("cpu")
def test_parallel_and_serial_agree_without_rollups(tmp_path):
    plain = without_rollups(CAPTURES[0], tmp_path / "plain.tar")
    for args in ([], ["-m"], ["-c", "pid pss pss_anon pss_file pss_shmem"]):
        want = run_smem("-S", plain, *args, env={"SMEM_JOBS": "1"}, check=True).stdout
        assert run_smem("-S", plain, *args, env={"SMEM_JOBS": "2"}, check=True).stdout == want


def _report(source, token, view_name, jobs):
    """(pids, table values, totals) of a view, loaded as app.read_snapshot loads it (with the
    view's fold: the mapping view sums each process as it arrives from the workers)."""
    view = VIEWS[view_name]
    options = TableOptions(totals=True)
    columns = [view.columns[k] for k in view.default_columns] + [view.columns[view.default_sort]]
    needs = needs_of(view, columns)
    fold = view.reads.fold(needs) if view.reads.fold is not None else None
    snapshot = load_reading(source, Selection(process=token), needs=needs, jobs=jobs, fold=fold)
    table = make_table([Snapshot(snapshot)], view, options)
    return [p.pid for p in snapshot.processes], table.values, table.totals


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_workers_on_a_held_capture_give_what_one_pass_gives(capture):
    """Through the CLI a capture is read in one pass, serially; held whole (as --exact and
    archives out of order are), it is read by workers: the same rows either way."""
    for view_name in ("process", "mapping", "user"):
        streamed = open_source(str(capture), streamed=True)
        try:
            want = _report(streamed, None, view_name, 1)
        finally:
            streamed.close()
        held = open_source(str(capture))
        try:
            for jobs in (2, 3):
                assert _report(held, None, view_name, jobs) == want, (view_name, jobs)
        finally:
            held.close()


HOLDER = r"""
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
int main(void)
{
    char *m = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char buf[64];
    memset(m, 1, 1 << 19);
    write(1, "ready\n", 6);
    while (read(0, buf, sizeof buf) > 0)
        ;
    return 0;
}
"""


@pytest.fixture(scope="module")
def started(tmp_path_factory):
    """Processes with memory of their own, named by a token in their command line.

    A static binary: a dynamically linked one would share libc's pages with this
    interpreter, whose workers, while they live, lower those pages' PSS in every
    process that maps them (docs/benchmarks.md) -- a difference a serial read
    does not see, and not the one this test looks for.
    """
    import shutil
    if not shutil.which("gcc"):
        pytest.skip("no gcc to build a static binary")
    tmp = tmp_path_factory.mktemp("holder")
    (tmp / "holder.c").write_text(HOLDER)
    built = subprocess.run(["gcc", "-static", "-O1", "-o", str(tmp / "holder"), str(tmp / "holder.c")],
                           capture_output=True, text=True)
    if built.returncode:
        pytest.skip(f"gcc -static failed (no static libc?): {built.stderr[-300:]}")
    token = f"smem-collect-test-{os.getpid()}"
    procs = [subprocess.Popen([str(tmp / "holder"), token, str(i)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE) for i in range(24)]
    try:
        for p in procs:
            assert p.stdout.readline() == b"ready\n"
        yield token, [p.pid for p in procs]
    finally:
        for p in procs:
            p.stdin.close()
            p.wait(timeout=30)


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("view_name", ["process", "mapping", "user"])
def test_parallel_and_serial_agree_on_live_processes(started, view_name):
    """Shared pages' PSS moves when any process on the machine starts or exits: a serial read
    before and after the parallel ones must agree for the comparison to count (a few tries)."""
    token, pids = started
    source = open_source(None)
    try:
        for attempt in range(8):
            before = _report(source, token, view_name, 1)
            parallel = [_report(source, token, view_name, jobs) for jobs in (2, 3)]
            after = _report(source, token, view_name, 1)
            if before == after:
                assert sorted(before[0]) == sorted(pids)
                assert parallel == [before, before]
                return
            time.sleep(0.5)
        pytest.fail("the machine never stayed still for a serial, parallel, serial read")
    finally:
        source.close()
