"""Reading processes in worker processes: each reads and parses a share of the pids.

:func:`collect` gives what ``[read(pid) for pid in pids]`` gives, in the same
order, but may fork worker processes that each read an interleaved share of
the pids (every n-th, so large processes spread across workers), while this
process reads its own share.  Each worker sends back, pickled through a
memfd in batches (taken in one at a time, so that the caller may fold each process as it
comes), only what the report reads: its processes with the counters the
report's ``needs.counters`` lists (the mappings' are already cut down to
those by the loader; the smaps_rollup's are cut down here), never smaps text.
Processes, not threads: parsing holds the GIL, and threads were measured
slower than one (docs/benchmarks.md).

A worker that fails (an error the loader raises rather than counts, a signal)
sends nothing, and its share is read again here, so the error, if it is one,
is raised as a serial run raises it.

How many workers (:func:`workers_for`): ``jobs`` given (``smem --jobs N``)
is used as given; otherwise ``SMEM_JOBS`` in the environment; otherwise
:data:`DEFAULT_JOBS`, where ``0`` means one per CPU this process may run on
(``os.sched_getaffinity``) once there are at least :data:`MIN_PIDS` pids.
A report that keeps every counter (``needs.counters`` None) is read
serially: what it would have to send is the text itself.
"""

import os

__all__ = ["collect", "each_result", "workers_for", "DEFAULT_JOBS", "MIN_PIDS"]

#: Workers when neither ``jobs`` nor SMEM_JOBS says: 0 = one per usable CPU (above MIN_PIDS).
DEFAULT_JOBS = 0

#: Below this many pids, forking does not pay.  Measured on 2 idle cores (docs/benchmarks.md),
#: 2 processes against 1: 89 pids, +6 ms (smem) and +4 ms (smem -m); 386 pids, -9 ms and -21 ms;
#: 1,600 pids, -64 ms and -97 ms.
MIN_PIDS = 200


#: A worker sends its results this many processes at a time: what it and the parent hold at
#: once is a batch's mappings, not a share's, and a pickle a process would cost more.
BATCH = 32


def workers_for(jobs, npids, needs):
    """How many processes (this one included) read ``npids`` pids for a report with ``needs``."""
    if needs is not None and needs.counters is None:
        return 1
    if jobs is None:
        env = os.environ.get("SMEM_JOBS", "").strip()
        jobs = int(env) if env.isdigit() else DEFAULT_JOBS
        if jobs == 0:
            if npids < MIN_PIDS:
                return 1
            jobs = len(os.sched_getaffinity(0))
    elif jobs == 0:
        jobs = len(os.sched_getaffinity(0))
    return max(1, min(jobs, npids))


def collect(pids, read, workers, needs=None):
    """``[read(pid) for pid in pids]``, read by ``workers`` processes (this one included).

    ``read`` returns None, a ProcessUnreadable or ProcessSkipped (counted by the caller) or
    ``(Process, had_pss)``.  It is called in forked children, so it may be
    any callable (a closure over the source and the selection).
    """
    merged = [None] * len(pids)
    for index, result in _each(pids, read, workers, needs):
        merged[index] = result
    return merged


def each_result(pids, read, workers, needs=None):
    """What :func:`collect` gives, one result at a time as it comes, in no set order (this
    process's share first, then each worker's): the caller folds each as it arrives, so
    neither side holds every process's mappings at once."""
    for _, result in _each(pids, read, workers, needs):
        yield result


def _each(pids, read, workers, needs):
    """(index in pids, result) of each pid, this process's share first."""
    if workers <= 1 or len(pids) < 2:
        for index, pid in enumerate(pids):
            yield index, read(pid)
        return
    import pickle
    shares = [pids[k::workers] for k in range(workers)]
    from .model import rollup_keys
    keep = rollup_keys(needs)
    children = []
    try:
        for k in range(1, workers):
            started = _start(shares[k], read, keep, pickle)
            if started is not None:
                children.append((k, *started))
        for i, pid in enumerate(shares[0]):
            yield i * workers, read(pid)
        for k in range(1, workers):  # the shares no worker could be started for
            if all(c[0] != k for c in children):
                for i, pid in enumerate(shares[k]):
                    yield k + i * workers, read(pid)
        while children:
            k, pid, fd = children.pop(0)
            results = _receive(pid, fd, pickle)
            if results is None:  # the worker failed: read its share here
                results = map(read, shares[k])
            for i, result in enumerate(results):
                yield k + i * workers, result
    finally:
        for _, pid, fd in children:  # interrupted: stop and reap the workers left
            _stop(pid)
            os.close(fd)


def _start(share, read, keep, pickle):
    """(pid, memfd) of a worker reading ``share``, or None where none can be started."""
    try:
        fd = os.memfd_create("smem-collect", os.MFD_CLOEXEC)
    except (AttributeError, OSError):  # Linux before 3.17, or a sandbox that forbids it
        return None
    try:
        pid = os.fork()
    except OSError:  # out of processes or memory: read it here
        os.close(fd)
        return None
    if pid == 0:  # the worker: never returns
        _work(fd, share, read, keep, pickle)
    return pid, fd


def _work(fd, share, read, keep, pickle):
    """Read the share, writing each result as it is read (one pickle each): the worker
    holds one process at a time, and the parent takes them in one at a time too."""
    code = 1
    try:
        from .model import Process
        with open(fd, "wb", closefd=False) as out:
            for start in range(0, len(share), BATCH):  # a pickle per batch (its memo let go with it)
                batch = [_pack(read(pid), keep, Process) for pid in share[start:start + BATCH]]
                pickle.dump(batch, out, protocol=pickle.HIGHEST_PROTOCOL)
        code = 0
    except BaseException:  # noqa: BLE001 - the parent reads the share again, and raises there
        pass
    finally:
        os._exit(code)


def _pack(result, keep, Process):
    """What crosses to the parent: small, and rebuilt as it was by _unpack."""
    from .errors import ProcessUnreadable
    from .model import ProcessSkipped
    if isinstance(result, ProcessUnreadable):
        return ("unreadable", result.pid, result.reason, result.name)
    if isinstance(result, ProcessSkipped):
        return ("skipped", result.pid, result.name, result.rss_kib)
    if keep is not None and type(result) is tuple and result and isinstance(result[0], Process):
        process, had_pss = result  # (its rollup already the kept counters: model.rollup_keys)
        mappings = process.mappings
        if mappings is not None:
            # three flat lists pickle in C, where a Mapping each would call its __reduce__
            return ("process", process.sent(), had_pss, [m._header for m in mappings], [m.name for m in mappings],
                    [m.counters for m in mappings])
        return ("process", process.sent(), had_pss, None, None, None)
    return result


def _unpack(result):
    if type(result) is tuple and result:
        if result[0] == "process":
            _, fields, had_pss, headers, names, counters = result
            from .model import Process
            mappings = None
            if headers is not None:
                from .parsers.smaps import Mapping
                mappings = list(map(Mapping, headers, names, counters))
            return Process.received(fields, mappings), had_pss
        if result[0] == "unreadable":
            from .errors import ProcessUnreadable
            return ProcessUnreadable(*result[1:])
        if result[0] == "skipped":
            from .model import ProcessSkipped
            return ProcessSkipped(*result[1:])
    return result


def _receive(pid, fd, pickle):
    """The worker's results, one at a time as they are unpickled, or None if it failed
    (known before any is given: the worker has exited)."""
    try:
        _, status = os.waitpid(pid, 0)
    except BaseException:
        _stop(pid)
        os.close(fd)
        raise
    if os.waitstatus_to_exitcode(status) != 0:
        os.close(fd)
        return None
    return _results_in(fd, pickle)


def _results_in(fd, pickle):
    with open(fd, "rb") as f:  # (closes the memfd)
        f.seek(0)
        while True:
            try:
                batch = pickle.load(f)
            except EOFError:
                return
            for result in batch:
                yield _unpack(result)


def _stop(pid):
    try:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    except OSError:
        pass
