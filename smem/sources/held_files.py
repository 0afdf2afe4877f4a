"""A process's smaps_rollup and statm, read through descriptors held from one collection to the next.

smem.incremental walks the rollup of each process that moved, and reads its statm (the counters
smem.private_growth compares), collection after collection: the busy processes of a machine are
mostly the same ones.  Opening /proc/PID/smaps_rollup checks that this process may read the other's
memory (ptrace access mode, Documentation/filesystems/proc.rst) and sets up a file, a sixth of what
the walk of a small process costs; a held descriptor is read again at offset 0, where the kernel
makes its text anew (fs/seq_file.c).

A held descriptor stays bound to what it was opened for: statm's to the process, smaps_rollup's to
its address space at the open.  Once the process exits, or the rollup's process execs another
program (a new address space), the read fails (ESRCH) and the caller reads the file by its path
as before, which also finds a live thread where the first one has exited (smem.sources.proc_files).

Only the processes the caller marks as moving are held, within a budget it sets from the limit
on open files: the held stats (smem.sources.held_stats) come first, since every process's stat is
read at every collection.  Each descriptor costs the kernel about a page while held.
"""

import fcntl
import os

from .held_stats import FLOOR, room

__all__ = ["HeldFiles", "MovingFiles", "share_room"]

#: the most one read takes: a rollup is about a kilobyte, a statm a line; more is read by path
WHOLE = 1 << 16


class HeldFiles:
    """Descriptors of one file ``name`` of the processes under ``proc``, kept open."""

    def __init__(self, proc, name):
        self.proc, self.name = proc, name
        self.budget = 0   # how many may be held (set by the caller at each collection)
        self._fds = {}    # pid -> descriptor held

    def __len__(self):
        return len(self._fds)

    def read(self, pid, hold):
        """The file's bytes through the descriptor held, or one opened now, kept for the next
        collection where ``hold`` and the budget allow (else closed once read); None where it
        cannot be read so (gone, another address space: the caller reads by path, which says why)."""
        fd = self._fds.get(pid)
        if fd is None:
            if not hold or len(self._fds) >= self.budget:
                return None
            fd = self._open(pid)
            if fd is None:
                return None
        try:
            data = os.pread(fd, WHOLE, 0)
        except OSError:
            data = None
        if data is None or len(data) >= WHOLE or not hold:
            self.forget(pid)
        return data if data is not None and len(data) < WHOLE else None

    def _open(self, pid):
        try:
            fd = os.open(f"{self.proc}/{pid}/{self.name}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:  # (numbered over FLOOR: the program's own stay below, where select() takes them)
            held = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, FLOOR)
        except OSError:
            return None
        finally:
            os.close(fd)
        self._fds[pid] = held
        return held

    def forget(self, pid):
        """Close ``pid``'s descriptor, if one is held."""
        fd = self._fds.pop(pid, None)
        if fd is not None:
            os.close(fd)

    def close(self):
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)

    def __del__(self):
        self.close()


def share_room(files, processes, moving):
    """Set each of ``files``' budget: room for ``moving`` processes each, where the limit on open
    files leaves it once the held stats (two descriptors for each of ``processes``, and a margin)
    have theirs."""
    theirs = 2 * processes + 512
    spare = max(room(theirs + len(files) * moving) - theirs, 0)
    for held in files:
        held.budget = spare // len(files)


class MovingFiles:
    """The smaps_rollup and statm of the processes that move at a collection, held (HeldFiles)."""

    NAMES = ("smaps_rollup", "statm")

    def __init__(self):
        self._held = {}             # name -> HeldFiles
        self.moving = frozenset()   # the pids read at this collection because their memory moved

    def collection(self, proc, processes, moving):
        """A collection starts, of ``processes`` processes, ``moving`` those that moved; ``proc``
        None: nothing is held (the stats are not either)."""
        if proc is None:
            self.close()
            return
        self.moving = moving
        self._held = self._held or {name: HeldFiles(proc, name) for name in self.NAMES}
        share_room(list(self._held.values()), processes, len(moving))

    def read(self, source, pid, name):
        """``pid``'s file ``name``: through a descriptor held where there is one, else by path."""
        held = self._held.get(name)
        raw = held.read(pid, pid in self.moving) if held is not None else None
        return raw if raw is not None else source.read_optional(f"{pid}/{name}")

    def forget(self, pid):
        for held in self._held.values():
            held.forget(pid)

    def close(self):
        held, self._held, self.moving = self._held, {}, frozenset()
        for files in held.values():
            files.close()
