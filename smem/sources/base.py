"""The interface every data source implements.

A source hands out raw bytes of /proc-namespace files ("meminfo",
"1234/smaps") and a few facts no file holds (the owner of a pid, user names,
the page size).  It knows nothing of smaps or meminfo formats: parsing is the
parsers' job.  Missing files raise ``FileNotFoundError`` and unreadable ones
``PermissionError``, exactly as the live /proc does, so smem.errors maps them
to smem's own exceptions in one place whatever the source.  A source implements
four primitives (smem 1.5's sources had four too); the rest is derived (derived.py)
or an optional capability with a default, as collections.abc's mixin methods are.
"""

import abc
import re

from . import derived
from .machine import Machine

__all__ = ["Source", "Machine", "is_pid_name", "pid_names", "PAGEMAP", "OWN_PID", "VANISHING", "member_limit", "SHMEM_MEMBER",
           "MAX_MEMBER_BYTES", "MAX_FRAME_MEMBER_BYTES", "StreamedSource", "NeedHeld",
           "KERNEL_CONFIG_MEMBER"]

#: The most digits a pid has (PID_MAX_LIMIT is 2**22); longer is not a pid, and
#: int() refuses 4,300 digits anyway.
_PID_DIGITS = 10
#: is_pid_name as one pattern: ASCII digits, 1 to _PID_DIGITS of them
_PID_NAME = re.compile(f"[0-9]{{1,{_PID_DIGITS}}}")


#: One member larger than this is refused before it is inflated: a huge process's smaps
#: is a few MiB (64 MiB at 65,530 mappings, vm.max_map_count's default).
MAX_MEMBER_BYTES = 256 << 20
#: The exact-accounting members (N/frames, kpages.sparse) may be larger: 8 bytes per
#: page a process maps, 24 per frame of the machine's.
MAX_FRAME_MEMBER_BYTES = 1 << 30


#: The kernel's files of a few KiB on any machine (zoneinfo and iomem: some MiB on the largest)
#: may hold this much: parsed, a capture's of millions of short lines took up to 28 times the size.
_SMALL_MEMBERS = {**dict.fromkeys(("meminfo", "status", "stat", "statm", "smaps_rollup", "cgroup", "uptime", "version",
                                   "capture-info", "swaps", "memory.stat", "memory.pressure", "mm_stat"), 1 << 20),
                  "zoneinfo": 16 << 20, "iomem": 16 << 20}


def member_limit(name):
    """The most bytes the member ``name`` may hold."""
    parent, _, leaf = name.rstrip("/").rpartition("/")
    if leaf in ("frames", "kpages.sparse"):
        return MAX_FRAME_MEMBER_BYTES
    if parent.rpartition("/")[2] in ("fdinfo", "pressure"):  # (N/fdinfo/FD, pressure/memory)
        return 1 << 20
    return _SMALL_MEMBERS.get(leaf, MAX_MEMBER_BYTES)


def size_text(n):
    return f"{n >> 30} GiB" if n >= 1 << 30 else f"{n >> 20} MiB"


def is_pid_name(name):
    """Whether a /proc entry (or capture member) names a process: ASCII digits only.

    str.isdigit() also passes "²" and "٣", which int() refuses or reads as another number.
    """
    return _PID_NAME.fullmatch(name) is not None


def pid_names(names):
    """The process names among ``names`` (a directory's entries), as :func:`is_pid_name` takes
    them, as ints in ascending order: one C loop over 10,000 entries, not a Python call each."""
    return sorted(map(int, filter(_PID_NAME.fullmatch, names)))


#: the capture member holding the kernel's configuration, gzip'd (as /proc/config.gz)
KERNEL_CONFIG_MEMBER = "config.gz"

#: the capture member listing tmpfs mounts, their files and memfds (parsers/shmem_inventory.py)
SHMEM_MEMBER = "smem/shmem"


#: capabilities a source may have (Source.capabilities)
PAGEMAP = "pagemap"      # pagemap, kpagecount and kpageflags can be read from it (--exact live)
OWN_PID = "own_pid"      # our own pid and our parents are among its processes
VANISHING = "vanishing"  # a process file that is missing means the process exited meanwhile


class NeedHeld(Exception):
    """A streamed source cannot be read in one pass (its members are out of order, or only
    tarfile reads it): the caller reads it whole (``source.held()``) and loads from that."""


class Source(abc.ABC):
    """A source: four primitives (pids, read, owner, facts), the optional capabilities below
    with their defaults, and the derived methods (sources/derived.py), which no source
    overrides.  A new source subclasses it and writes the primitives; that is all it must do.
    Errors: a missing file raises FileNotFoundError (or another OSError of errors.GONE_ERRNOS),
    an unreadable one PermissionError, as the live /proc does; smem.errors translates them in
    one place."""

    # -- the primitives ---------------------------------------------------------------------------

    @abc.abstractmethod
    def pids(self):
        """The numeric process ids present, in ascending order."""

    @abc.abstractmethod
    def read(self, path):
        """The whole content of ``path`` (relative to the proc root: "meminfo", "1234/smaps") as bytes."""

    @abc.abstractmethod
    def owner(self, pid):
        """The uid owning the process, or None if unknown."""

    def facts(self):
        """The machine's facts as capture-info strings (``pagesize``, ``kernel``, ...); {} if none."""
        return {}

    # -- optional capabilities, with their defaults ------------------------------------------------

    #: the data is this machine's, now: user names from this machine, timing meaningful
    local = False

    #: what else the source can do (PAGEMAP, OWN_PID, VANISHING)
    capabilities = frozenset()

    #: Whether smaps_rollup may stand in for smaps when no per-mapping data is
    #: needed: the kernel sums the mappings once, and its PSS is not rounded
    #: down per mapping (Documentation/filesystems/proc.rst).  A source without
    #: the file for a process falls back to its smaps.
    prefer_rollup = True

    #: Short human description, e.g. "live system" or "capture foo.tgz".
    description = ""

    #: What the report's reader should be told of the data chosen (warnings): a recording's frame
    #: far older than the time --at asked for.
    notes = ()

    def user_name(self, uid):
        """The user name for ``uid`` on the source's machine, or None if unknown (shown as the uid)."""
        return None

    def read_ahead(self, paths):
        """Read now the files of ``paths`` that :meth:`read` will be asked for next (the next chunk
        of processes), where reading them together costs less than reading each as it is asked
        for; a file gone or refused is left for :meth:`read` to say so.  What was read ahead and not
        read is let go at the next call (none: the loader's, once a reading ends, so that nothing
        read ahead is served later as the file's content then).  By default nothing."""

    def read_at(self, path, offset, length):
        """``length`` bytes of a binary file from ``offset`` (pagemap, kpagecount)."""
        return derived.read_at(self, path, offset, length)

    def firmware_memmap(self):
        """/sys/firmware/memmap as a list of (start, end, type) byte strings, or None.

        Documentation/ABI/testing/sysfs-firmware-memmap: the firmware's view of
        installed RAM, which /proc/meminfo's MemTotal understates.
        """
        return None

    def boot_log(self):
        """The kernel's boot messages (bytes), or None where they cannot be had."""
        return None

    def shmem_inventory(self):
        """The tmpfs mounts, their largest files and the memfds processes hold, as the text of
        the ``smem/shmem`` member (parsers/shmem_inventory.py), or None where the source has
        none (a capture older than the member).  A capture holds it; the live system makes it."""
        return derived.read_optional(self, SHMEM_MEMBER)

    def device_fdinfo(self, pid):
        """[(fd, fdinfo bytes)] of the descriptors of ``pid`` that hold device memory (DRM and
        accel clients, dma-bufs), in fd order; None where they cannot be listed (another
        user's process, a capture made before captures carried them).  A capture holds them as
        ``N/fdinfo/FD`` members; the live system picks them by their links."""
        return None

    def kernel_config(self):
        """The kernel's build configuration as text, or None where the source has none: a
        capture's ``config.gz`` member (/proc/config.gz, or /boot/config-RELEASE gzip'd)."""
        from ..parsers.kernel_config import gunzip_config
        data = derived.read_optional(self, KERNEL_CONFIG_MEMBER)
        return gunzip_config(data) if data else None

    def read_sys(self, path):
        """The /sys file ``path`` ("kernel/mm/ksm/pages_shared") as bytes; a capture keeps /sys
        files under ``sys/``.  FileNotFoundError where it has none."""
        return self.read(f"sys/{path}")

    def list_sys(self, path):
        """The names in the /sys directory ``path`` ("block"), sorted; [] where there is none."""
        return []

    def close(self):
        pass

    def smaps_seen(self):
        """For a source read in one pass (a streamed archive), once read: (whether it held any
        process, whether any held smaps or smaps_rollup); None where its pids can be asked again."""
        return None

    def hidden(self):
        """Why processes are missing from :meth:`pids` that no unreadable file shows: a proc
        mount's hidepid= (hidden_pids.Hiding, said as a clause by str()); None where every
        process is listed."""
        return None

    # -- derived from the above, the same for every source (sources/derived.py) --------------------

    def read_optional(self, path):
        """Like :meth:`read`, but None where the file does not exist or cannot be read."""
        return derived.read_optional(self, path)

    def read_sys_optional(self, path):
        """Like :meth:`read_sys`, but None where the file cannot be had, whatever the error."""
        return derived.read_sys_optional(self, path)

    def read_process(self, pid, name):
        """A file of process ``pid`` ("smaps"); ProcessGone if the process exited,
        ProcessUnreadable if it may not be read (smem.errors.translated)."""
        return derived.read_process(self, pid, name)

    def open_process(self, pid, name):
        """A descriptor of process ``pid``'s file ``name`` (pagemap) for positioned reads and
        ioctls, which the caller closes; None where the source has no such file to open.
        OSError as ``open`` raises it (the caller translates it: smem.errors.translated)."""
        return None

    def read_process_at(self, pid, name, offset, length):
        """Like :meth:`read_process`, ``length`` bytes from ``offset`` (pagemap)."""
        return derived.read_process_at(self, pid, name, offset, length)

    def _status_owner(self, pid):
        return derived.status_owner(self, pid)

    def has(self, capability):
        return capability in self.capabilities

    def machine(self) -> Machine:
        """The machine the data came from (page size, kernel, host, time); read once."""
        return derived.machine_of(self)


class StreamedSource(Source):
    """A source that hands its processes over as they come, in one pass (a capture's archive
    read front to back): what is global (meminfo, passwd, ...) is read through the Source
    methods once :meth:`each_process` has passed it, and in full once it is done."""

    @abc.abstractmethod
    def each_process(self):
        """(pid, a Source of that process's files) of each process, in one pass and only once;
        NeedHeld where one pass cannot read it (the caller then loads :meth:`held`)."""

    @abc.abstractmethod
    def held(self):
        """The same data as a Source read whole (its pids listed, any file read at any time)."""

    @property
    def replayable(self):
        """Whether :meth:`replayed` can give another pass over the same data."""
        return False

    def replayed(self):
        """Another such source over the same data, read from its start (a worker's walk)."""
        raise NotImplementedError

    def processes_suggested(self):
        """About how many processes it holds (to decide how many walk it), 0 if unknown."""
        return 0

    def knows_user(self, uid):
        """Whether the user name of ``uid`` is known for sure before the pass is done."""
        return True
