"""A PID namespace of its own, with a /proc that shows only its processes, for tests that
capture "every process".

A capture copies every process's files, so a test that captures the whole machine costs what
the machine holds: a second of CPU with the suite's own workers and browser beside it, more on
a busy machine.  Run in a namespace (pid_namespaces(7), proc(5) "mount namespace"), the capture
and the processes the test starts are all it sees: the same code on real processes, at the cost
of a handful.  The namespace's init reaps what is orphaned in it; when it goes, the kernel kills
everything left inside.

Where namespaces cannot be made (not root, no util-linux), commands run on the machine as they
are, and pids are the machine's: the tests still pass, only slower.  Kernel threads live outside
every namespace but the first: a test about them captures the machine itself.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time

#: the namespace's pid 1: reaps every orphan, as an init must (sleep(1) would leave zombies)
REAPER = ("import os, time\n"
          "while True:\n"
          "    try:\n"
          "        os.wait()\n"
          "    except ChildProcessError:\n"
          "        time.sleep(0.05)\n")


class PidNamespace:
    """Commands run inside with :meth:`argv`; :meth:`pid_in` translates a pid of this machine."""

    def __init__(self):
        self.init = None  # the namespace's pid 1, as this machine names it
        self._unshare = None
        unshare, nsenter = shutil.which("unshare"), shutil.which("nsenter")
        if os.geteuid() != 0 or not unshare or not nsenter:
            return
        self._unshare = subprocess.Popen([unshare, "--pid", "--fork", "--mount-proc", "--kill-child",
                                          sys.executable, "-c", REAPER], stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while self.init is None and time.monotonic() < deadline and self._unshare.poll() is None:
            self.init = _first_child(self._unshare.pid)
            time.sleep(0.005)
        if self.init is None:  # no namespaces here (a container without the capability)
            self.close()
        else:
            self._nsenter = nsenter

    @property
    def isolated(self):
        return self.init is not None

    def argv(self, argv, cwd=None):
        """``argv`` run in the namespace (its pid 1 the reaper), in ``cwd`` (the current directory:
        entering a mount namespace starts at its root).  On the machine, a Popen's own cwd= applies."""
        argv = [str(a) for a in argv]
        if not self.isolated:
            return argv
        return [self._nsenter, "--target", str(self.init), "--pid", "--mount", f"--wd={cwd or os.getcwd()}", *argv]

    def command_pid(self, popen):
        """The machine's pid of the command a Popen of :meth:`argv` started (nsenter forks it)."""
        if not self.isolated:
            return popen.pid
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            child = _first_child(popen.pid)
            if child is not None:
                return child
            if popen.poll() is not None:
                raise AssertionError(f"{popen.args}: exited {popen.returncode} before it could be seen")
            time.sleep(0.002)
        raise AssertionError(f"{popen.args}: nsenter started nothing")

    def pid_in(self, pid):
        """The pid that the namespace's /proc (and so a capture made in it) names ``pid`` by."""
        if not self.isolated:
            return pid
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
        raise AssertionError(f"{pid}: no NSpid line")

    def close(self):
        if self._unshare is not None and self._unshare.poll() is None:
            if self.init is not None:  # the init first, for unshare to reap (an orphan waits for this machine's)
                os.kill(self.init, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._unshare.wait(timeout=10)
            self._unshare.kill()  # --kill-child: the namespace's init, and so everything in it, goes too
            self._unshare.wait()
        deadline = time.monotonic() + 10
        while self.init is not None and os.path.exists(f"/proc/{self.init}") and time.monotonic() < deadline:
            time.sleep(0.005)  # the kernel kills what is inside before the init's pid is free
        self.init = None


def _first_child(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = f.read().split()
    except OSError:
        return None
    return int(children[0]) if children else None
