"""Capture archives read in one pass, process by process (a StreamedSource, sources/base.py).

The loader takes each process as its members arrive, so a report's memory need not grow with
the capture; an archive one pass cannot read (a process's members apart, or one only tarfile
reads) raises NeedHeld, and the loader reads it whole as an ArchiveSource (archive.py).
"""

from ..compression import compression_of
from .archive import ArchiveSource, Archive, fdinfo_members, member_bytes
from .base import NeedHeld, Source, StreamedSource, is_pid_name
from .decompressed import DecompressedStream
from .recorded_frame import StoredFrame
from .tar_index import NeedTarfile

__all__ = ["ArchiveStream", "PROCESS_FILES", "is_process_file"]


class ArchiveStream(Archive, StreamedSource):
    """A capture archive read in one pass: nothing is read at first; :meth:`each_process` reads
    the archive once (per walker: :meth:`replayed`), front to back, handing out each process's
    files as the next process (or a global member) starts and keeping only the small global
    members (meminfo, passwd, capture-info, ...), so a report's memory need not grow with the
    capture.  A member met again replaces the one before (smem capture's capture-info: first what
    it knew at the start, last every fact), as the held form keeps the last."""

    def each_process(self):
        """Each process's files as the archive is read once, front to back: ``(pid, source)``
        with ``source`` a Source holding that process's files (and asking this archive for
        owners and user names).  A process's members must be together (as every capture
        writer puts them); one found apart raises NeedHeld, as does an archive only tarfile
        reads: the caller then reads it whole (:meth:`held`).  Global members are kept here;
        meminfo is checked at the end."""
        per_mapping = self._per_mapping
        self._seen = (False, False)  # (any process, any smaps): what pids() cannot say once gone past
        done = set()
        current, files = None, {}

        def wanted(path, member):
            head, sep, leaf = path.partition("/")
            if not (sep and is_pid_name(head)):
                return True  # a global member: small, kept
            return is_process_file(leaf)

        def finish(pid, files):
            # (a kernel thread's smaps is there, empty: the kernel gives them)
            self._seen = (True, self._seen[1] or f"{pid}/smaps_rollup" in files or f"{pid}/smaps" in files)
            if not per_mapping and files.get(f"{pid}/smaps_rollup"):
                files.pop(f"{pid}/smaps", None)  # as the held form drops it
            done.add(pid)
            return pid, _ProcessFiles(self, pid, files)

        unusual = False
        try:
            for path, content in self._walk(DecompressedStream(self._data, self.name), wanted):
                head, sep, _ = path.partition("/")
                pid = int(head) if is_pid_name(head) and (sep or content is None) else None
                if pid is None:
                    if content is not None:
                        self._files[path] = content
                        if path == "passwd":
                            self._passwd = None  # user names asked before it came are asked again
                        elif path == "capture-info":  # (smem capture's last, whole, after its first)
                            self.__dict__.pop("_machine", None)  # facts asked before it came are asked again
                    continue
                if pid != current:
                    if current is not None:
                        yield finish(current, files)
                    if pid in done:
                        raise NeedHeld  # a process's members apart: it must be read whole
                    current, files = pid, {}
                if content is not None:
                    files[path] = content
            if current is not None:
                yield finish(current, files)
        except NeedTarfile:
            unusual = True
        if unusual:  # (raised here, not in the handler: its traceback would hold what was read)
            raise NeedHeld
        self._check_meminfo()

    def smaps_seen(self):
        return getattr(self, "_seen", None)

    @property
    def replayable(self):
        """Whether :meth:`replayed` can give another reading (not once read whole)."""
        return self._data is not None

    def replayed(self):
        """Another streamed reading of the same archive, from its start: a worker forked
        before this one is read walks it too, loading its share of the processes."""
        return ArchiveStream(self._data, self.name, self._per_mapping, self.description, self.notes,
                             self.recording_frame)

    def processes_suggested(self):
        """About how many processes the archive holds, from its stored size: a process of 90
        mappings is about 4 KiB compressed (gzip: ours 4.6, C smemcap's 2.7) and 64-73 KiB in
        a plain tar (C smemcap's); a recording's frame, what its index says; 0 once read whole."""
        if self._data is None:
            return 0
        if isinstance(self._data, StoredFrame):  # (its size is its changes since its anchor)
            return self._data.processes or 0
        compressed = compression_of(self._data) is not None
        return len(self._data) // (4 << 10 if compressed else 64 << 10)

    def knows_user(self, uid):
        """Whether a user name for ``uid`` is already known for sure while streaming (a
        directory member named it: the held form gives the first such name too)."""
        return uid in self._unames

    def held(self):
        """The same archive read whole (an :class:`ArchiveSource`), where one pass cannot do."""
        return ArchiveSource(self._data, self.name, self._per_mapping, owned=False, description=self.description,
                             notes=self.notes, recording_frame=self.recording_frame)



#: The files of a process the loader reads (smem.model): a streamed archive keeps only these,
#: and its ``fdinfo/FD`` members (is_process_file).
PROCESS_FILES = frozenset({"cmdline", "stat", "status", "smaps", "smaps_rollup", "cgroup"})


def is_process_file(leaf):
    return leaf in PROCESS_FILES or leaf.startswith("fdinfo/")


class _ProcessFiles(Source):
    """One process's files from a streamed archive, as a Source of that process alone."""

    def __init__(self, archive, pid, files):
        self.description = archive.description
        self._archive = archive
        self._pid = pid
        self._files = files  # "pid/leaf" -> bytes

    def pids(self):
        return [self._pid]

    def read(self, path):
        return member_bytes(self._files, path)

    def device_fdinfo(self, pid):
        return fdinfo_members(self._files, pid)

    def owner(self, pid):
        uid = self._archive._dirs.get(pid)
        return uid if uid is not None else self._status_owner(pid)

    def user_name(self, uid):
        return self._archive.user_name(uid)
