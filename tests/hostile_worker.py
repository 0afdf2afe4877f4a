"""A long-lived child of the hostile corpus's runner: it runs case after case, each as smem's own
command line would run, and puts back everything a case may change before the next.

Why: a freshly forked child pays for the fork, its exit and a copy of every page of the runner
it writes to (refcounts, mostly), several times the work of a typical case; a child that runs
many cases pays that once.  What a case cannot leave behind is put back (environment, working
directory, standard streams and descriptors 0-2, umask, warnings, signal handlers and mask,
resource limits, the collector); what cannot be put back (a thread still running, a descriptor
left open, a stream with input read ahead or output it could not write, memory kept) retires
the child after the case, and the runner forks a fresh one.
"""

import gc
import hostile_memo
import os
import resource
import signal
import struct
import sys
import tempfile
import threading
import traceback
import warnings

#: A request: the index of a case.
REQUEST = struct.Struct("<i")
#: An answer: the case's index, its exit status, its peak resident set (VmHWM, KiB), and whether
#: the child retires after it.
ANSWER = struct.Struct("<iiq?")
#: The child retires once its resident set is this far over its own at the start (MiB).  A case's
#: peak is the child's VmHWM less the runner's resident set at the fork, as a fresh child's was:
#: what earlier cases left resident (memory the allocator kept, library pages read in) counts in
#: it, never against it; retiring keeps that excess under this bound.
RETAIN_MIB = 12
_LIMITS = [getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_")]


def _status(field):
    """A field of /proc/self/status, KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


class Saved:
    """What the child was before any case: :meth:`restore` puts it back, and says what it could not."""

    def __init__(self, caches):
        self.memo = hostile_memo.Memo(caches)
        self.environ = dict(os.environ)
        self.cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
        self.stdio = [os.dup(fd) for fd in (0, 1, 2)]
        self.streams = (sys.stdin, sys.stdout, sys.stderr)
        self.umask = os.umask(0)
        os.umask(self.umask)
        self.signals = {}
        for signum in signal.valid_signals():
            try:
                self.signals[signum] = signal.getsignal(signum)
            except (ValueError, OSError):
                pass
        self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        self.limits = {limit: resource.getrlimit(limit) for limit in _LIMITS}
        self.collector = (gc.isenabled(), gc.get_threshold(), gc.get_freeze_count())
        self.sys = (sys.getrecursionlimit(), sys.get_int_max_str_digits(), tempfile.tempdir)
        self.fds = sorted(os.listdir("/proc/self/fd"))

    def restore(self):
        """Put the child back as it was; the reasons it cannot be (then it retires), or none."""
        reasons = []
        if len(os.listdir("/proc/self/task")) != 1 or threading.active_count() != 1:
            reasons.append("a thread is left running")
        for fd, saved in enumerate(self.stdio):
            os.dup2(saved, fd)
        os.fchdir(self.cwd)
        if dict(os.environ) != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)
        if sys.stdin is not self.streams[0] or sys.stdout is not self.streams[1] or sys.stderr is not self.streams[2]:
            sys.stdin, sys.stdout, sys.stderr = self.streams
        if any(stream.closed for stream in self.streams):
            reasons.append("a standard stream was closed")
        os.umask(self.umask)
        for signum, handler in self.signals.items():
            if signal.getsignal(signum) is not handler:
                signal.signal(signum, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)
        if signal.getitimer(signal.ITIMER_REAL) != (0.0, 0.0):
            signal.setitimer(signal.ITIMER_REAL, 0)
            reasons.append("an alarm was set")
        for limit, value in self.limits.items():
            if resource.getrlimit(limit) != value:
                try:
                    resource.setrlimit(limit, value)
                except (ValueError, OSError):
                    reasons.append(f"resource limit {limit} cannot be put back")
        enabled, threshold, frozen = self.collector
        (gc.enable if enabled else gc.disable)()
        gc.set_threshold(*threshold)
        if gc.get_freeze_count() != frozen:
            gc.unfreeze()
        sys.setrecursionlimit(self.sys[0])
        sys.set_int_max_str_digits(self.sys[1])
        tempfile.tempdir = self.sys[2]
        _reap()
        reasons += self.memo.restore()
        if sorted(os.listdir("/proc/self/fd")) != self.fds:
            reasons.append("a file descriptor was left open")
        return reasons


def _reap():
    """Collect the exit of any process a case started and left (its exit would have, as orphans)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def paths(workdir, i):
    """Where case ``i`` writes its stdout and stderr."""
    return os.path.join(workdir, f"{i}.out"), os.path.join(workdir, f"{i}.err")


def run_case(case, out, err):
    """Run smem as its command line would, with the case's streams, environment and directory;
    its exit status as Python's would be, and whether its streams are left unusable."""
    import smem.cli
    for fd, path, flags in ((0, case.get("stdin") or os.devnull, os.O_RDONLY),
                            (1, case.get("stdout_path") or out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    if case.get("cwd"):
        os.chdir(case["cwd"])
    for key in ("COLUMNS", "LINES"):
        os.environ.pop(key, None)
    os.environ.update(case.get("env") or {})
    if case.get("stdout") == "closed":
        os.close(1)
        sys.stdout = None
    spoiled = False
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
        code, spoiled = 120, True  # what it could not write is still in its buffer
    sys.stderr.flush()
    return code, spoiled


def serve(cases, workdir, inbox, outbox, address_limit, caches):
    """The child's loop: read a case's index, run it, answer; exit when the runner closes ``inbox``.

    Each case's peak is its own: VmHWM is reset to the resident set before it (clear_refs 5).
    """
    code = 70
    try:
        os.setpgid(0, 0)  # the runner kills the group at the timeout, with what the case started
        resource.setrlimit(resource.RLIMIT_AS, (address_limit, address_limit))
        saved = Saved(caches)
        start_mib = _status("VmRSS:") / 1024
        while True:
            request = os.read(inbox, REQUEST.size)
            if len(request) < REQUEST.size:
                code = 0
                break
            i, = REQUEST.unpack(request)
            case = cases[i]
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            with warnings.catch_warnings():  # and a warning shown in one case is shown again in the next
                warnings.onceregistry.clear()
                status, spoiled = run_case(case, *paths(workdir, i))
            peak = _status("VmHWM:")
            # (a process the case started and waited for, a worker of smem.collect: its peak, as
            # wait4 gave a child's with its descendants' when a child ran one case)
            after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            if after > children:
                peak = max(peak, after)
            reasons = saved.restore()
            if spoiled or case.get("stdin"):  # input read ahead may sit in sys.stdin's buffer
                reasons.append("a standard stream's buffer may hold data")
            if _status("VmRSS:") / 1024 - start_mib > RETAIN_MIB:
                reasons.append("memory kept")
            os.write(outbox, ANSWER.pack(i, status, peak, bool(reasons)))
            if reasons:
                code = 0
                break
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)

