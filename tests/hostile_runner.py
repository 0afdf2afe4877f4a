"""The hostile corpus's runner: smem in forked children (:mod:`hostile_worker`), each running
case after case, each case with its own timeout and peak memory.

Run as a script by tests/test_hostile.py (``hostile_runner.py CASES.pickle RESULTS.pickle``), so that
what it imports before it forks is its own, not the test process's.
"""

import os

#: A case runs at most this long before it is killed (and counted as a hang).
TIMEOUT = 20.0
#: Children run at once (the machine has 2 cores).
PARALLEL = 2
#: The shell loop the churn test runs: short-lived processes, bounded in number and time.
SPAWNER = """
end=$(( $(date +%s) + $1 )); n=0
while [ $(date +%s) -lt $end ] && [ $n -lt $2 ]; do
  for i in 1 2 3 4 5 6 7 8 9 1 2 3 4 5 6 7 8 9 1 2; do (sleep 0.0$i; :) & done
  wait; n=$((n + 40))
done
"""


def _preload():
    """Import what the cases use once, in the runner, so each child starts at once.

    Not matplotlib: each fork and each child's exit costs in proportion to the runner's address
    space, which matplotlib doubles; the few cases that draw run last, after :func:`_preload_charts`.
    """
    import difflib  # noqa: F401  (a usage error's suggestions)
    import importlib
    import pkgutil
    import hostile_worker  # noqa: F401  (the children's loop, and resource and traceback with it)
    import resource  # noqa: F401
    import tarfile  # noqa: F401
    import traceback  # noqa: F401
    import smem
    # every module of smem, not only those the command line imports at once: a module a case
    # imports lazily would otherwise be imported (and compiled, without bytecode files) again
    # in each of hundreds of children
    for module in pkgutil.walk_packages(smem.__path__, "smem."):
        if not module.name.endswith("__main__"):
            try:
                importlib.import_module(module.name)
            except ImportError:  # an optional extra that is not installed
                pass
    # and what smem's modules import only when a case asks (a format's writer, a pattern's
    # engine, the array masks of exact accounting), extras that may not be installed among them
    for name in ("csv", "tabulate", "regex", "numpy.ma", "importlib.readers", "importlib.resources.readers"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def _preload_charts():
    """Import matplotlib, and draw and save a chart once: fonts, text layout and the writers are
    loaded before the children fork, so a chart case costs its own drawing only."""
    import io
    try:
        import matplotlib
    except ImportError:  # no smem[charts]: the chart cases end in smem's one line, nothing to load
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots()
    axes.pie([1, 2], labels=["a", "b"])
    axes.bar(["a"], [1])
    for kind in ("png", "svg"):
        figure.savefig(io.BytesIO(), format=kind)
    plt.close(figure)


def draws(case):
    """Whether a case asks for a chart (run by the runner once it has imported matplotlib)."""
    return any(arg in ("--pie", "--bar") for arg in case["argv"])


def _vm_size():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _rss_mib():
    """This process's resident set now, MiB (/proc/self/statm's second field, in pages)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def serve(cases, workdir, churn=None):
    """Run every case (a dict: argv, stdin, env, cwd, stdout) in a forked child.

    Returns one dict per case: code, stdout (its start), stderr, how far the child's RSS rose
    during the case over the runner's at the fork (peak_mib, MiB), seconds, and whether it was
    killed at TIMEOUT.
    ``churn`` (seconds, processes): run SPAWNER meanwhile.  The cases that draw run last, once
    the runner has imported matplotlib for them.
    """
    import subprocess
    _preload()
    spawner = None
    if churn:
        spawner = subprocess.Popen(["sh", "-c", SPAWNER, "spawner", str(churn[0]), str(churn[1])])
    results = [None] * len(cases)
    charts = [i for i, case in enumerate(cases) if draws(case)]
    try:
        _run(cases, [i for i, case in enumerate(cases) if not draws(case)], results, workdir, spawner)
        if charts:
            _preload_charts()
            _run(cases, charts, results, workdir, spawner)
    finally:
        if spawner is not None and spawner.returncode is None:
            spawner.kill()
            try:
                os.waitpid(spawner.pid, 0)
            except ChildProcessError:
                pass
    return results


def _run(cases, queue, results, workdir, spawner):
    """Run the cases ``queue`` lists, PARALLEL at a time, into ``results``: each child
    (:mod:`hostile_worker`) runs case after case, and is killed at a case's TIMEOUT, or replaced
    when it dies or retires.

    The runner sleeps until a child answers or exits or the oldest case reaches TIMEOUT (a pidfd
    per child): not woken every few milliseconds while a slow case runs.
    """
    import select
    import signal
    import time
    import hostile_memo
    address_limit = _vm_size() + (3 << 29)  # a safety net: the bound asserted is on RSS
    caches = hostile_memo.lru_caches()
    queue = list(queue)
    children = {}  # pid -> _Child
    watch = select.poll()
    while queue or any(child.case is not None for child in children.values()):
        while queue and sum(not child.retiring for child in children.values()) < PARALLEL:
            child = _Child(cases, workdir, address_limit, caches, children.values())
            children[child.pid] = child
            for fd in (child.answers, child.pidfd):
                if fd is not None:
                    watch.register(fd, select.POLLIN)
        for child in children.values():
            if child.case is None and not child.retiring and queue:
                child.send(queue.pop(0))
        waiting = [child.start + TIMEOUT - time.monotonic() for child in children.values()
                   if child.case is not None and not child.killed]
        if all(child.pidfd is not None for child in children.values()):
            ready = {fd for fd, _ in watch.poll(max(0, min(waiting, default=TIMEOUT)) * 1000 + 1)}
        else:  # no pidfds here: look every few milliseconds
            ready = {fd for fd, _ in watch.poll(2)}
        for child in children.values():
            if child.answers in ready and not child.answer(results):
                watch.unregister(child.answers)  # (else its end of file wakes the poll until it is reaped)
                child.silent = True
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid in children:
                child = children.pop(pid)
                for fd in ([] if child.silent else [child.answers]) + [child.pidfd]:
                    if fd is not None:
                        watch.unregister(fd)
                child.exited(status, usage, results)
            elif spawner is not None and pid == spawner.pid:
                spawner.returncode = os.waitstatus_to_exitcode(status)
        now = time.monotonic()
        for child in children.values():
            if child.case is not None and not child.killed and now - child.start > TIMEOUT:
                try:
                    os.killpg(child.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                child.killed = True
    for child in children.values():
        child.close_requests()  # each reads the end of its requests, and exits
    for pid, child in children.items():
        _, status, usage = os.wait4(pid, 0)
        child.exited(status, usage, results)


class _Child:
    """A forked :mod:`hostile_worker`, the pipes to and from it, and the case it runs (or None)."""

    def __init__(self, cases, workdir, address_limit, caches, others):
        import sys
        import hostile_worker
        self.workdir, self.case, self.killed, self.retiring, self.start = workdir, None, False, False, 0.0
        self.silent = False
        inbox, self.requests = os.pipe()
        self.answers, outbox = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        self.base = _rss_mib()  # (the child starts with the runner's pages: its growth is its peak less them)
        self.pid = os.fork()
        if self.pid == 0:
            for fd in [self.requests, self.answers] + [fd for o in others for fd in o.fds()]:
                os.close(fd)
            hostile_worker.serve(cases, workdir, inbox, outbox, address_limit, caches)
        os.close(inbox)
        os.close(outbox)
        self.pidfd = _pidfd(self.pid)

    def fds(self):
        return [fd for fd in (self.requests, self.answers, self.pidfd) if fd is not None]

    def close_requests(self):
        """Tell the child there is no more to run: it exits."""
        if self.requests is not None:
            os.close(self.requests)
            self.requests = None

    def send(self, i):
        import time
        import hostile_worker
        self.case, self.start = i, time.monotonic()
        os.write(self.requests, hostile_worker.REQUEST.pack(i))

    def answer(self, results):
        """Read the child's answer for its case; False once it has no more to say (it died or
        retired: :meth:`exited` tells)."""
        import time
        import hostile_worker
        data = os.read(self.answers, hostile_worker.ANSWER.size)
        if len(data) < hostile_worker.ANSWER.size:
            return False
        i, code, peak_kib, retires = hostile_worker.ANSWER.unpack(data)
        results[i] = self.result(code, peak_kib / 1024 - self.base, time.monotonic() - self.start, False)
        self.case, self.retiring = None, retires
        return True

    def exited(self, status, usage, results):
        """The child is gone: its case, if it had one, ended with it (killed at TIMEOUT, or crashed)."""
        import time
        if self.case is not None:
            results[self.case] = self.result(os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024 - self.base,
                                             time.monotonic() - self.start, self.killed)
            self.case = None
        self.close_requests()
        for fd in self.fds():
            os.close(fd)

    def result(self, code, peak_mib, seconds, timed_out):
        """Its case's result as the tests read it."""
        import hostile_worker
        out, err = hostile_worker.paths(self.workdir, self.case)
        return {"code": code, "stdout": _head(out, 4096),
                "stderr": _head(err, 1 << 16).decode("utf-8", "replace"),
                "peak_mib": peak_mib, "seconds": seconds, "timed_out": timed_out}


def _head(path, size):
    """The first ``size`` bytes of a file a child wrote (none if it was killed before it opened it)."""
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except FileNotFoundError:
        return b""


def _pidfd(pid):
    """A file descriptor that polls readable when child ``pid`` exits, or None (before Linux 5.3)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def main(argv):
    """``hostile_runner.py CASES.pickle RESULTS.pickle [SECONDS PROCESSES]``: a runner process."""
    import pickle
    with open(argv[0], "rb") as f:
        cases, workdir = pickle.load(f)
    churn = (int(argv[2]), int(argv[3])) if len(argv) > 3 else None
    results = serve(cases, workdir, churn)
    with open(argv[1], "wb") as f:
        pickle.dump(results, f)


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
