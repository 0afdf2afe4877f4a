"""The exceptions smem raises, in one place.

Everything a user can cause (a bad option value, an unreadable or corrupt
capture, a kernel image we cannot size) is an :class:`SmemError`; the CLI turns
it into one line on stderr and a non-zero exit.  A process that vanishes while
we read it is not an error at all: sources raise :class:`ProcessGone` and the
core skips the process silently.
"""


class SmemError(Exception):
    """An error the user should see as one line, without a traceback."""

    exit_code = 1


class UsageError(SmemError):
    """A wrong option value or combination."""

    exit_code = 2


class SourceError(SmemError):
    """A data source (live /proc, capture, remote host) cannot be used."""


class CaptureError(SourceError):
    """A capture is truncated, corrupt, hostile or lacks what smem needs."""


class OutputError(SmemError):
    """A file named with -o cannot or must not be written (a link of another user, a device, ...)."""


class KernelImageError(SmemError):
    """A file given with -K is not a kernel image we can size."""


import contextlib as _contextlib
import errno as _errno

#: errno values meaning the process (or its /proc directory) is gone: ENOENT, ESRCH, ENOTDIR
GONE_ERRNOS = frozenset((_errno.ENOENT, _errno.ESRCH, _errno.ENOTDIR))
#: errno values meaning the file is there but not ours to read (or not a file): EPERM, EACCES, EISDIR
DENIED_ERRNOS = frozenset((_errno.EPERM, _errno.EACCES, _errno.EISDIR))


def is_absence(error):
    """Whether an OSError met reading a /proc-namespace file says only that the file cannot be
    had (gone or denied), which an optional read takes as None; any other error is real."""
    return error.errno in GONE_ERRNOS or error.errno in DENIED_ERRNOS


def process_error(pid, error):
    """Our exception for an OSError met reading a process's file: gone, or unreadable.

    The one table every source's errors go through (psutil's ``wrap_exceptions`` is the model):
    :func:`translated` raises it, and :func:`is_absence` reads the same errno sets."""
    if error.errno in DENIED_ERRNOS and error.errno != _errno.EISDIR:
        return ProcessUnreadable(pid, error.strerror or "permission denied")
    if error.errno in GONE_ERRNOS:
        return ProcessGone(pid)
    return ProcessUnreadable(pid, error.strerror or str(error))


@_contextlib.contextmanager
def translated(pid):
    """Around any read of process ``pid``'s files: an OSError leaves as ProcessGone or
    ProcessUnreadable (:func:`process_error`), whatever the source."""
    try:
        yield
    except OSError as e:
        raise process_error(pid, e) from None


class ProcessGone(Exception):
    """A process exited (or became unreadable) while we were reading it.

    Not an :class:`SmemError`: callers skip the process silently.
    """


class SmapsAbsent(ProcessGone):
    """A process named (its cmdline read) has no smaps and no smaps_rollup: it exited meanwhile,
    or its kernel gives none (CONFIG_PROC_PAGE_MONITOR off, no MMU).  Skipped as a process gone,
    and counted: a reading where every process is so says the kernel has none (smem.app)."""

    def __init__(self, pid):
        super().__init__(pid)
        self.pid = pid

    def __reduce__(self):  # (sent from a worker: smem.collect)
        return SmapsAbsent, (self.pid,)


class ProcessUnreadable(Exception):
    """A process exists but its files cannot be read (usually permissions).

    Counted, and summarised in one warning, rather than reported one by one.
    """

    def __init__(self, pid, reason, name=None):
        super().__init__(f"{pid}: {reason}")
        self.pid = pid
        self.reason = reason
        self.name = name  # the process name (comm), where known

    def __reduce__(self):  # (sent from a worker: smem.collect)
        return ProcessUnreadable, (self.pid, self.reason, self.name)


class ProcessSkipped(Exception):
    """A process left out on purpose (--max-rss), before its smaps was read."""

    def __init__(self, pid, name, rss_kib):
        super().__init__(f"{pid}: {rss_kib} KiB resident")
        self.pid = pid
        self.name = name
        self.rss_kib = rss_kib

    def __reduce__(self):  # (sent from a worker: smem.collect)
        return ProcessSkipped, (self.pid, self.name, self.rss_kib)
