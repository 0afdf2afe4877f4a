"""Reading processes in worker processes: each reads and parses chunks of the pids.

:func:`each_result` gives what ``[read(pid) for pid in pids]`` gives, one result at a time
in no set order, but may fork worker processes that, with this process, take chunks of
16 pids from a queue (a pipe holding the chunks' numbers) until it is empty:
whoever is quicker takes more, so no process waits on another's larger share (a
worker, its pages copied on write as it starts, lags the parent on an equal share:
docs/benchmarks.md).  Each worker sends back, pickled
through a memfd a chunk at a time (taken in one at a time, so that the caller
may fold each process as it comes), what ``read`` returns: the loader's
processes with only the counters the report reads (it cuts them down as it
parses), never smaps text, each pickled as it says (Process.__reduce__).  Processes, not threads: parsing holds the GIL, and
threads were measured slower than one (docs/benchmarks.md).

:func:`each_of_shares` is the form for a stream that only its start can be read
from (a capture's archive: one gzip stream): each worker walks it too and loads its
fixed share, every n-th process.

A worker that fails (an error the loader raises rather than counts, a signal)
sends nothing, and what it took is read again here, so the error, if it is one,
is raised as a serial run raises it.

How many workers (:func:`workers_for`): ``jobs`` given (``smem --jobs N``)
is used as given; otherwise ``SMEM_JOBS`` in the environment; otherwise
:data:`DEFAULT_JOBS`, where ``0`` means one per CPU this process may run on
(``os.sched_getaffinity``) once there are at least :data:`MIN_PIDS` pids.
A report that keeps every counter (``keeps_text``) is read serially: what
it would have to send is the text itself.
"""

import os

__all__ = ["each_result", "each_of_shares", "workers_for", "chunk_size", "DEFAULT_JOBS", "MIN_PIDS",
           "CHUNK"]

#: Workers when neither ``jobs`` nor SMEM_JOBS says: 0 = one per usable CPU (above MIN_PIDS).
DEFAULT_JOBS = 0

#: Below this many pids, forking does not pay (measured on 2 idle cores, 2 processes against 1:
#: docs/benchmarks.md, "Where forking starts to pay").
MIN_PIDS = 200


#: Pids to a chunk, the unit of work a process takes: what a worker and the parent hold at once
#: is a chunk's mappings, and a pickle a process would cost more.
CHUNK = 16

#: Chunks at most (bigger chunks beyond 16,384 pids): their numbers, 4 bytes each, fill one page,
#: the least a pipe holds (pipe(7): a user past pipe-user-pages-soft gets pipes of one page).
MAX_CHUNKS = 1024


def workers_for(jobs, npids, keeps_text=False):
    """How many processes (this one included) read ``npids`` pids; one where the report keeps
    every counter (``keeps_text``: what a worker would send is the smaps text itself)."""
    if keeps_text:
        return 1
    if jobs is None:
        jobs = _environment_jobs()
        if jobs == 0:
            if npids < MIN_PIDS:
                return 1
            jobs = len(os.sched_getaffinity(0))
    elif jobs == 0:
        jobs = len(os.sched_getaffinity(0))
    return max(1, min(jobs, npids))


def _environment_jobs():
    """SMEM_JOBS as --jobs takes it (a count, 0: one per CPU); DEFAULT_JOBS where unset or empty.
    Anything else is a UsageError, as a wrong --jobs is: ignored, a typo would pass unseen."""
    env = os.environ.get("SMEM_JOBS", "").strip()
    if not env:
        return DEFAULT_JOBS
    if not (env.isascii() and env.isdigit()):  # (str.isdigit takes "²", which int() refuses)
        from .errors import UsageError
        raise UsageError(f"SMEM_JOBS={env[:40]!r}: give a number of processes, or 0 for one per CPU")
    number = env.lstrip("0") or "0"
    return int(number) if len(number) <= 9 else 10 ** 9  # (no more than the pids anyway; int() refuses 4,300 digits)


def each_result(pids, read, workers, ahead=None):
    """``read(pid)`` of each of ``pids``, read by ``workers`` processes (this one included), one
    result at a time as it comes, in no set order (this process's chunks first, then each
    worker's): the caller folds each as it arrives, so neither side holds every process's
    mappings at once.  ``read`` is called in forked children, so it may be any callable (a
    closure over the source and the selection); what it returns must pickle (a worker sends it
    back).  ``ahead(chunk of pids)``, where given, is called by whoever reads a chunk before it
    reads any of its pids (the source's read_ahead)."""
    for _, result in _each(pids, read, workers, ahead):
        yield result


def _each(pids, read, workers, ahead=None):
    """(index in pids, result) of each pid, this process's first."""
    if workers <= 1 or len(pids) < 2:
        yield from _serial(pids, read, ahead)
        return
    import pickle
    size = chunk_size(len(pids))
    nchunks = -(-len(pids) // size)
    queue = _queue(nchunks)
    if queue is None:  # no pipe: read them all here
        yield from _serial(pids, read, ahead)
        return
    children = []  # [pid, its results' file]; pid None once it is reaped
    done = bytearray(len(pids))  # what some process has given
    try:
        for _ in range(1, min(workers, nchunks)):
            started = _start(queue, pids, size, read, pickle, ahead)
            if started is not None:
                children.append(started)
        for first, last in _chunks(queue, len(pids), size):
            if ahead is not None:
                ahead(pids[first:last])
            for index in range(first, last):
                done[index] = 1
                yield index, read(pids[index])
        while children:
            child = children[0]
            succeeded = _exited_cleanly(child)
            with child[1] as results:
                children.pop(0)
                if succeeded:  # (else what it took is read below)
                    for index, result in _results_in(results, pickle):
                        done[index] = 1
                        yield index, result
        for index in range(len(pids)):  # the chunks of a worker that failed
            if not done[index]:
                yield index, read(pids[index])
    finally:
        os.close(queue)
        for pid, results in children:  # interrupted: stop and reap the workers left
            if pid is not None:
                _stop(pid)
            results.close()


def each_of_shares(shares, workers):
    """What ``shares(mine, workers)`` gives for the shares ``mine`` (a set of numbers in
    ``range(workers)``) together: share 0 here, each item as it comes, the others in forked
    workers, taken in once this process's are done.  An item is ``(tag, result)``, the result
    (see :func:`each_result`) sent as the report needs it and the tag as it is.  For a stream that
    can only be read from its start (a capture's archive), which each worker walks whole: so
    the shares no worker could be started for are this process's too, and those of the
    workers that failed are read again here in one walk."""
    if workers <= 1:
        yield from shares(frozenset({0}), 1)
        return
    import pickle
    children = []  # [pid, its results' file, its share]; pid None once it is reaped
    failed = set()
    try:
        for k in range(1, workers):
            started = _fork(lambda out, k=k: _send(out, shares(frozenset({k}), workers), pickle))
            if started is not None:
                children.append(started + [k])
        yield from shares(frozenset(range(workers)) - {child[2] for child in children}, workers)
        while children:
            child = children[0]
            succeeded = _exited_cleanly(child)
            with child[1] as results:
                children.pop(0)
                if succeeded:
                    yield from _results_in(results, pickle)
                else:
                    failed.add(child[2])
        if failed:
            yield from shares(frozenset(failed), workers)
    finally:
        for pid, results, _ in children:  # interrupted: stop and reap the workers left
            if pid is not None:
                _stop(pid)
            results.close()


def _send(out, items, pickle):
    """Write ``items`` ((tag, result) pairs) to ``out``, a pickle a chunk of them."""
    batch = []
    for tag, result in items:
        batch.append((tag, result))
        if len(batch) == CHUNK:
            pickle.dump(batch, out, protocol=pickle.HIGHEST_PROTOCOL)
            batch = []
    if batch:
        pickle.dump(batch, out, protocol=pickle.HIGHEST_PROTOCOL)


def chunk_size(npids):
    """Pids to a chunk: few enough that the processes finish together (one chunk of 16 is
    about a millisecond of the kernel's rollups), and at most MAX_CHUNKS chunks."""
    return max(CHUNK, -(-npids // MAX_CHUNKS))


def _queue(nchunks):
    """The read end of a pipe holding each chunk's number, closed for writing: every process
    takes the next with one read of 4 bytes until the pipe is empty.  The numbers are written
    at once, at most a page, so they lie in one pipe buffer in whole 4-byte records, and a read
    holds the pipe's lock: each reader gets whole numbers, and no two the same (pipe(7)).
    None where no pipe can be had, or it would not hold them."""
    try:
        r, w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        data = b"".join(n.to_bytes(4, "little") for n in range(nchunks))
        written = os.write(w, data)
    except OSError:
        written = -1
    finally:
        os.close(w)
    if written != len(data):
        os.close(r)
        return None
    os.set_blocking(r, True)
    return r


def _chunks(queue, npids, size):
    """(first, last + 1) index of each chunk this process takes from the queue, as it takes it."""
    while True:
        record = os.read(queue, 4)
        if len(record) != 4:
            return
        first = int.from_bytes(record, "little") * size
        yield first, min(first + size, npids)


def _serial(pids, read, ahead):
    """(index, result) of each pid, read here, a chunk at a time where ``ahead`` reads one ahead."""
    if ahead is None:
        for index, pid in enumerate(pids):
            yield index, read(pid)
        return
    for first in range(0, len(pids), CHUNK):
        chunk = pids[first:first + CHUNK]
        ahead(chunk)
        for index, pid in enumerate(chunk, first):
            yield index, read(pid)


def _start(queue, pids, size, read, pickle, ahead=None):
    """[pid, its results' file] of a worker taking chunks from ``queue``, or None."""
    def work(out):
        for first, last in _chunks(queue, len(pids), size):
            if ahead is not None:
                ahead(pids[first:last])
            batch = [(index, read(pids[index])) for index in range(first, last)]
            pickle.dump(batch, out, protocol=pickle.HIGHEST_PROTOCOL)
    return _fork(work)


def _fork(work):
    """[pid, its results' file] of a worker that runs ``work(out)``, writing its results to
    ``out`` (a memfd: a pickle a chunk, the worker holding one chunk at a time, and the
    parent taking them in one at a time too), or None where none can be started."""
    try:
        fd = os.memfd_create("smem-collect", os.MFD_CLOEXEC)
    except (AttributeError, OSError):  # Linux before 3.17, or a sandbox that forbids it
        return None
    try:
        pid = os.fork()
    except OSError:  # out of processes or memory: its work is done here
        os.close(fd)
        return None
    if pid == 0:  # the worker: never returns
        code = 1
        try:
            with open(fd, "wb", closefd=False) as out:
                work(out)
            code = 0
        except BaseException:  # noqa: BLE001 - the parent does its work again, and raises there
            pass
        finally:
            os._exit(code)
    return [pid, open(fd, "rb")]


def _exited_cleanly(child):
    """Wait for the worker of ``child`` ([pid, file]) to end, and mark it reaped: whether it
    wrote all it took (exit status 0) or failed, so that what it took is read again."""
    _, status = os.waitpid(child[0], 0)
    child[0] = None
    return os.waitstatus_to_exitcode(status) == 0


def _results_in(results, pickle):
    """The (index or tag, result) pairs a worker wrote to its memfd, a chunk unpickled at a time."""
    results.seek(0)
    while True:
        try:
            batch = pickle.load(results)
        except EOFError:
            return
        for tag, result in batch:
            yield tag, result


def _stop(pid):
    try:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    except OSError:
        pass
