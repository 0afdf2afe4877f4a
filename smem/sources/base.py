"""The interface every data source implements.

A source hands out raw bytes of /proc-namespace files ("meminfo",
"1234/smaps") and a few facts no file holds (the owner of a pid, user names,
the page size).  It knows nothing of smaps or meminfo formats: parsing is the
parsers' job.  Missing files raise ``FileNotFoundError`` and unreadable ones
``PermissionError``, exactly as the live /proc does, so the core maps errors
to smem's own exceptions in one place whatever the source.
"""

import abc

__all__ = ["Source", "is_pid_name"]

#: The most digits a pid has (PID_MAX_LIMIT is 2**22); longer is not a pid, and
#: int() refuses 4,300 digits anyway.
_PID_DIGITS = 10


def is_pid_name(name):
    """Whether a /proc entry (or capture member) names a process: ASCII digits only.

    str.isdigit() also passes "²" and "٣", which int() refuses or reads as another number.
    """
    return 0 < len(name) <= _PID_DIGITS and name.isascii() and name.isdigit()


class Source(abc.ABC):
    #: True for the machine we run on (our own pid is then meaningful).
    is_live = False

    #: Whether smaps_rollup may stand in for smaps when no per-mapping data is
    #: needed: the kernel sums the mappings once, and its PSS is not rounded
    #: down per mapping (Documentation/filesystems/proc.rst).  A source without
    #: the file for a process falls back to its smaps.
    prefer_rollup = True

    #: Short human description, e.g. "live system" or "capture foo.tgz".
    description = ""

    @abc.abstractmethod
    def pids(self):
        """The numeric process ids present, in ascending order."""

    @abc.abstractmethod
    def read(self, path):
        """The whole content of ``path`` (relative to the proc root) as bytes."""

    def read_optional(self, path):
        """Like :meth:`read`, but None where the file does not exist or cannot be read."""
        try:
            return self.read(path)
        except (FileNotFoundError, PermissionError, ProcessLookupError,
                NotADirectoryError, IsADirectoryError):
            return None

    def read_at(self, path, offset, length):
        """``length`` bytes of a binary file from ``offset`` (pagemap, kpagecount)."""
        return self.read(path)[offset:offset + length]

    @abc.abstractmethod
    def owner(self, pid):
        """The uid owning the process, or None if unknown."""

    @abc.abstractmethod
    def user_name(self, uid):
        """The user name for ``uid`` on the source's machine, or None if unknown."""

    def firmware_memmap(self):
        """/sys/firmware/memmap as a list of (start, end, type) byte strings, or None.

        Documentation/ABI/testing/sysfs-firmware-memmap: the firmware's view of
        installed RAM, which /proc/meminfo's MemTotal understates.
        """
        return None

    def boot_log(self):
        """The kernel's boot messages (bytes), or None where they cannot be had."""
        return None

    def facts(self):
        """Facts about the source's machine: hostname, time, pagesize, kernel, ...

        Only the facts known are present.
        """
        return {}

    def close(self):
        pass
