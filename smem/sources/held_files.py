"""A process's smaps_rollup and statm, read through descriptors held from one collection to the next.

smem.incremental walks the rollup of each process that moved, and reads its statm (the counters
smem.private_growth compares), collection after collection: the busy processes of a machine are
mostly the same ones.  Opening /proc/PID/smaps_rollup checks that this process may read the other's
memory (ptrace access mode, Documentation/filesystems/proc.rst) and sets up a file, a good part of
what the walk of a small process costs; a held descriptor is read again at offset 0, where the
kernel makes its text anew (fs/seq_file.c).

A held descriptor stays bound to what it was opened for: statm's to the process, smaps_rollup's to
its address space at the open (fs/proc/task_mmu.c).  Once the process exits, the read fails
(ESRCH), whatever process has its pid since.  Once it execs, the rollup's fails too, but only
where no other process shares the old address space: a child cloned with CLONE_VM and no
CLONE_THREAD (vfork, posix_spawn, some runtimes) that execs leaves its parent the old one, which
its held rollup goes on reading.  And the open alone checks ptrace access: a process that later
makes itself undumpable (PR_SET_DUMPABLE) would still be read.  So each descriptor is held with
the process's stack start in /proc/PID/stat, which an exec sets anew (address space randomization
makes it another) and which says 0 to a reader without that access, and closed where the stat
says another.  The caller then reads the file by its path, which also finds a live thread where
the first one has exited (smem.sources.proc_files), and is refused where access is.

Only the processes the caller marks as moving are held, within a budget it sets from the limit
on open files: the held stats (smem.sources.held_stats) come first, since every process's stat is
read at every collection.  Each descriptor costs the kernel about a page while held, and a
rollup's keeps its address space's bookkeeping (not its pages) until it is closed: at the
collection after the process exits; after an exec, at its next read.
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
        self._fds = {}    # pid -> (descriptor held, the process's stack start at the open)

    def __len__(self):
        return len(self._fds)

    def read(self, pid, hold, start=None):
        """The file's bytes through the descriptor held, or one opened now, kept for the next
        collection where ``hold`` and the budget allow (else closed once read); None where it
        cannot be read so (gone, another address space: the caller reads by path, which says why).
        ``start``: the process's stack start now (PidStat.start_stack); one held with another is
        of the program before an exec, and closed.  None or 0 (to a reader without access, and
        while an exec has not yet set it) says nothing: nothing is held then."""
        fd, at = self._fds.get(pid, (None, None))
        if fd is not None and at != start:
            self.forget(pid)
            fd = None
        if fd is None:
            if not hold or not start or len(self._fds) >= self.budget:
                return None
            fd = self._open(pid, start)
            if fd is None:
                return None
        try:
            data = os.pread(fd, WHOLE, 0)
        except OSError:
            data = None
        if data is None or len(data) >= WHOLE or not hold:
            self.forget(pid)
        return data if data is not None and len(data) < WHOLE else None

    def _open(self, pid, start):
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
        self._fds[pid] = held, start
        return held

    def trim(self, keep):
        """Close what is held over the budget, the pids not in ``keep`` first: the budget shrinks as
        processes come (the held stats' room is theirs first), and what was held stays otherwise
        until its process exits or is read without moving."""
        over = len(self._fds) - self.budget
        if over > 0:
            for pid in sorted(self._fds, key=lambda pid: pid in keep)[:over]:
                self.forget(pid)

    def forget(self, pid):
        """Close ``pid``'s descriptor, if one is held."""
        held = self._fds.pop(pid, None)
        if held is not None:
            os.close(held[0])

    def close(self):
        fds, self._fds = self._fds, {}
        for fd, _ in fds.values():
            os.close(fd)

    def __del__(self):
        self.close()


def share_room(files, processes, moving):
    """Set each of ``files``' budget: room for ``moving`` processes each, where the limit on open
    files leaves it once the held stats (two descriptors for each of ``processes``, every pid they
    list, kernel threads too, and a margin) have theirs."""
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
        """A collection starts: ``processes`` the pids the held stats list, ``moving`` those that
        moved; ``proc`` None: nothing is held (the stats are not either)."""
        if proc is None:
            self.close()
            return
        self.moving = moving
        self._held = self._held or {name: HeldFiles(proc, name) for name in self.NAMES}
        share_room(list(self._held.values()), processes, len(moving))
        for held in self._held.values():
            held.trim(moving)

    def read(self, source, pid, name, stat):
        """``pid``'s file ``name`` (``stat`` its PidStat now): through a descriptor held where
        there is one, else by path."""
        held = self._held.get(name)
        raw = held.read(pid, pid in self.moving, stat.start_stack) if held is not None else None
        return raw if raw is not None else source.read_optional(f"{pid}/{name}")

    def forget(self, pid):
        for held in self._held.values():
            held.forget(pid)

    def close(self):
        held, self._held, self.moving = self._held, {}, frozenset()
        for files in held.values():
            files.close()
