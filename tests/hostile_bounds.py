"""The bounds a hostile input must stay within, and how the tests measure them: a time no slow or
busy machine reaches (a hang, not a speed) and the peak memory of a forked child.  Shared by the
hostile tests of captures (test_hostile_captures.py) and of options (test_hostile_options.py).
"""

import os

from smem.errors import CaptureError, SmemError


#: what counts as a hang: a bound on time that no slow or busy machine reaches, not a speed target
HANG = 60


def _rss_mib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def max_rss_growth(function):
    """Run ``function`` in a forked child: (its exit status, how far its peak RSS rose, MiB).

    The child starts with this process's pages, so its growth is its peak less our RSS.
    Exit status 1 for a CaptureError, 2 for another SmemError, 3 for anything else.
    """
    before = _rss_mib()
    pid = os.fork()
    if pid == 0:
        try:
            function()
            os._exit(0)
        except CaptureError:
            os._exit(1)
        except SmemError:
            os._exit(2)
        except BaseException:
            os._exit(3)
    _, status, usage = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024 - before
