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
    """Import what the cases use once, in the runner, so each child starts at once."""
    import io
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    # a chart drawn and saved once: fonts, text layout and the writers are loaded before the
    # children fork, so a chart case costs its own drawing only
    figure, axes = plt.subplots()
    axes.pie([1, 2], labels=["a", "b"])
    axes.bar(["a"], [1])
    for kind in ("png", "svg"):
        figure.savefig(io.BytesIO(), format=kind)
    plt.close(figure)
    import importlib
    import pkgutil
    import numpy  # noqa: F401
    import tarfile  # noqa: F401
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
    try:
        import regex  # noqa: F401
    except ImportError:
        pass


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
    runner's at the fork (peak_mib, MiB),
    seconds, and whether it was killed at TIMEOUT.  ``churn`` (seconds, processes):
    run SPAWNER meanwhile.
    """
    import signal
    import subprocess
    import sys
    import time
    _preload()
    address_limit = _vm_size() + (3 << 29)  # a safety net: the bound asserted is on RSS
    spawner = None
    if churn:
        spawner = subprocess.Popen(["sh", "-c", SPAWNER, "spawner", str(churn[0]), str(churn[1])])
    results = [None] * len(cases)
    queue = list(range(len(cases)))
    running = {}
    try:
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
                running[pid] = (i, time.monotonic(), out, err, False, base)
            while True:
                try:
                    pid, status, usage = os.wait4(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                if pid in running:
                    i, start, out, err, killed, base = running.pop(pid)
                    stdout = b""
                    if os.path.exists(out):
                        with open(out, "rb") as f:
                            stdout = f.read(4096)
                    with open(err, "rb") as f:
                        stderr = f.read(1 << 16)
                    results[i] = {"code": os.waitstatus_to_exitcode(status), "stdout": stdout,
                                  "stderr": stderr.decode("utf-8", "replace"),
                                  "peak_mib": usage.ru_maxrss / 1024 - base, "seconds": time.monotonic() - start,
                                  "timed_out": killed}
                elif spawner is not None and pid == spawner.pid:
                    spawner.returncode = os.waitstatus_to_exitcode(status)
            now = time.monotonic()
            for pid, (i, start, out, err, killed, base) in list(running.items()):
                if not killed and now - start > TIMEOUT:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    running[pid] = (i, start, out, err, True, base)
            time.sleep(0.002)
    finally:
        if spawner is not None and spawner.returncode is None:
            spawner.kill()
            try:
                os.waitpid(spawner.pid, 0)
            except ChildProcessError:
                pass
    return results


def main(argv):
    """``hostile_corpus.py CASES.pickle RESULTS.pickle [SECONDS PROCESSES]``: a runner process."""
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
