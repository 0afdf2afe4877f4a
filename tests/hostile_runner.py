"""The hostile corpus's runner: smem in forked children, each with a timeout and its peak memory.

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

    Not matplotlib: the runner forks hundreds of children, and each fork and each child's exit
    costs in proportion to the runner's address space, which matplotlib doubles; the few cases
    that draw run last, after :func:`_preload_charts`.
    """
    import difflib  # noqa: F401  (a usage error's suggestions)
    import importlib
    import pkgutil
    import resource  # noqa: F401  (and traceback: what _child imports)
    import tarfile  # noqa: F401
    import traceback  # noqa: F401
    import numpy  # noqa: F401
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
    import matplotlib
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


def _child(case, out, err, address_limit):
    """In the forked child: run smem as its command line would, and exit as Python would."""
    import resource
    import sys
    import traceback
    code = 70
    try:
        os.setpgid(0, 0)
        resource.setrlimit(resource.RLIMIT_AS, (address_limit, address_limit))
        fd = os.open(case.get("stdin") or os.devnull, os.O_RDONLY)
        os.dup2(fd, 0)
        os.dup2(os.open(case.get("stdout_path") or out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 1)
        os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
        if case.get("cwd"):
            os.chdir(case["cwd"])
        for key in ("COLUMNS", "LINES"):
            os.environ.pop(key, None)
        os.environ.update(case.get("env") or {})
        if case.get("stdout") == "closed":
            os.close(1)
            sys.stdout = None
        import smem.cli
        try:
            smem.cli.main(case["argv"])
            code = 0
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        try:
            if sys.stdout is not None:
                sys.stdout.flush()
        except BaseException as e:
            print(f"Exception ignored on flushing sys.stdout:\n{type(e).__name__}: {e}", file=sys.stderr)
            code = 120
        sys.stderr.flush()
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def _rss_mib():
    """This process's resident set now, MiB (/proc/self/statm's second field, in pages)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def serve(cases, workdir, churn=None):
    """Run every case (a dict: argv, stdin, env, cwd, stdout) in a forked child.

    Returns one dict per case: code, stdout (its start), stderr, how far its RSS rose over the
    runner's at the fork (peak_mib, MiB), seconds, and whether it was killed at TIMEOUT.
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
    """Run the cases ``queue`` lists, PARALLEL at a time, into ``results``.

    The runner sleeps until a child exits or the oldest reaches TIMEOUT (a pidfd per child):
    not woken every few milliseconds while a slow case runs.
    """
    import select
    import signal
    import sys
    import time
    address_limit = _vm_size() + (3 << 29)  # a safety net: the bound asserted is on RSS
    queue = list(queue)
    running = {}
    exits = select.poll()
    while queue or running:
        while queue and len(running) < PARALLEL:
            i = queue.pop(0)
            out, err = os.path.join(workdir, f"{i}.out"), os.path.join(workdir, f"{i}.err")
            sys.stdout.flush()
            sys.stderr.flush()
            base = _rss_mib()  # (the child starts with the runner's pages: its growth is its peak less them)
            pid = os.fork()
            if pid == 0:
                _child(cases[i], out, err, address_limit)
            pidfd = _pidfd(pid)
            if pidfd is not None:
                exits.register(pidfd, select.POLLIN)
            running[pid] = [i, time.monotonic(), out, err, False, base, pidfd]
        waiting = [start + TIMEOUT - time.monotonic() for _, start, _, _, killed, _, _ in running.values()
                   if not killed]
        if all(entry[6] is not None for entry in running.values()):
            exits.poll(max(0, min(waiting, default=TIMEOUT)) * 1000 + 1)
        else:  # no pidfds here: look every few milliseconds
            time.sleep(0.002)
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid in running:
                i, start, out, err, killed, base, pidfd = running.pop(pid)
                if pidfd is not None:
                    exits.unregister(pidfd)
                    os.close(pidfd)
                results[i] = {"code": os.waitstatus_to_exitcode(status), "stdout": _head(out, 4096),
                              "stderr": _head(err, 1 << 16).decode("utf-8", "replace"),
                              "peak_mib": usage.ru_maxrss / 1024 - base, "seconds": time.monotonic() - start,
                              "timed_out": killed}
            elif spawner is not None and pid == spawner.pid:
                spawner.returncode = os.waitstatus_to_exitcode(status)
        now = time.monotonic()
        for pid, entry in running.items():
            if not entry[4] and now - entry[1] > TIMEOUT:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                entry[4] = True


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
