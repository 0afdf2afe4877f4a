"""Capture archives held: a tar of /proc files, compressed or not, read in memory and never extracted.

Archive layouts accepted (docs/capture-format.md): C smemcap's plain tar
(``meminfo``, ``version``, ``N/``, ``N/smaps``, ``N/cmdline``, ``N/stat``),
our scripts/smemcap.sh and ``smem capture`` (the same plus ``N/status``,
``N/smaps_rollup``, ``iomem``, ``passwd``, ``capture-info``, ...), and the old
``capture`` script's ``proc/``-prefixed archive; members may start with
``./``.  The data is decompressed as it is read (decompressed.py).  An archive
is read in memory and never extracted: members that are links, devices,
absolute paths or contain ``..`` are ignored.  archive_stream.py reads the
same archives in one pass, process by process.
"""

import io

from ..errors import CaptureError
from .base import Source, is_pid_name, member_limit, size_text
from .capture_file import CaptureFile
from .capture_members import is_read_member, member_path
from .captured import CaptureFacts
from .decompressed import MAX_HEADER_BYTES, DecompressedStream
from .looks_like import not_a_capture
from .tar_index import BLOCK, NeedTarfile, data_length, read_header

__all__ = ["Archive", "ArchiveSource", "member_bytes", "fdinfo_members"]

#: After the end-of-archive blocks, at most this much is read (to find garbage or a cut);
#: tar pads records with zeros, 10 KiB by default.  More is not read, whatever it holds.
MAX_TRAILER_BYTES = 16 << 20


class Archive(CaptureFacts, Source):
    """A capture archive (from a file, stdin or a remote host), never extracted.

    The archive is decompressed as its members are read, and only their contents are
    kept, never the whole decompressed stream.  With ``per_mapping=False`` (a report
    that smaps_rollup serves) a process's smaps is kept only where the capture holds
    no smaps_rollup for it, so a process view does not hold every mapping of every
    process.  Anything unusual (pax or GNU extension headers, damage) sends the whole
    archive, decompressed at once, through tarfile, which also words the errors.

    :class:`ArchiveSource` holds it, read whole as it is opened; :class:`ArchiveStream`
    hands its processes over as they come.
    """

    def __init__(self, data, name, per_mapping=True, description=None, notes=(), recording_frame=None):
        # (description: where the name says it already, a pushed "capture from HOST:PORT")
        self.description = description or f"capture {name}"
        self.notes = tuple(notes)  # (a recording's frame: what the report must say of the frame chosen)
        self.recording_frame = recording_frame  # recorded.RecordingFrame: which frame, for which asked
        self.name = name
        self._data = data
        self._per_mapping = per_mapping
        self._files = {}   # path -> bytes
        self._dirs = {}    # pid -> uid, from the pid directory members
        self._unames = {}  # uid -> user name, from the same members

    def _check_meminfo(self):
        if "meminfo" not in self._files:
            raise CaptureError(f"{self.name}: capture has no meminfo (not an smem capture?)")

    def _checksize_text(self, number, member):
        """Refuse a member larger than its kind may be, before it is inflated."""
        limit = member_limit(member.name)
        if member.size > limit:
            raise CaptureError(f"{self.name}: member {number} ({member.name}) inflates past the limit "
                               f"of {size_text(limit)} per member ({member.size} bytes)")

    def _read_stream(self, stream, per_mapping):
        """Read the members as the data decompresses; NeedTarfile for anything unusual."""
        rollups = set()   # pids whose smaps_rollup was read (per_mapping=False)

        def wanted(path, member):
            if not per_mapping:
                pid, _, leaf = path.partition("/")
                if leaf == "smaps_rollup" and member.size:
                    rollups.add(pid)
                    self._files.pop(f"{pid}/smaps", None)
                return not (leaf == "smaps" and pid in rollups)
            return True

        for path, content in self._walk(stream, wanted):
            if content is not None:
                self._files[path] = content

    def _walk(self, stream, wanted):
        """(path, content) of each member as the data decompresses: a regular file's content
        where ``wanted(path, member)``, else None (and directories, noted by _add, with None).
        A member no reader asks for (capture_members.py) is read past, not handed out.
        NeedTarfile for anything unusual."""
        ours = False  # a capture-info read: the writer is one of ours, which put it first and end the archive
        while True:
            header = stream.read(BLOCK)
            if not header:
                if stream.pos == 0:
                    raise NeedTarfile  # tarfile's "empty file" error
                if ours:
                    raise CaptureError(_cut_between_members(self.name, stream.members))
                return  # no end marker, as C smemcap writes
            member = read_header(header)
            stream.end = stream.pos
            if member is None:  # the end: only zero blocks may follow
                while stream.pos - stream.end <= MAX_TRAILER_BYTES:
                    rest = stream.read(1 << 20)
                    if not rest:
                        return
                    if rest.strip(b"\0"):
                        raise NeedTarfile
                return
            stream.members += 1
            self._checksize_text(stream.members, member)
            length = data_length(member)
            path = self._add(member)
            if path is not None and not is_read_member(path):
                if not stream.skip(length):
                    raise NeedTarfile
                continue
            content = None
            if path is not None and member.isreg() and wanted(path, member):
                stream.limit = member.size
                content = stream.read(member.size)
                stream.limit = MAX_HEADER_BYTES
                if len(content) < member.size:
                    raise NeedTarfile  # cut short: tarfile tells which error
                length -= member.size
            if not stream.skip(length):
                raise NeedTarfile
            if path is not None:
                ours = ours or (path == "capture-info" and member.isreg())
                yield path, content
            elif member.isdir():
                name = member_path(member.name)
                if name is not None and is_pid_name(name):
                    yield name, None

    def close(self):
        if isinstance(self._data, CaptureFile):
            self._data.close()
        self._data = None

    def _read_with_tarfile(self, stream):
        """Read with tarfile (imported only here), streaming: members are read as they come."""
        import tarfile
        try:
            with tarfile.open(fileobj=stream, mode="r:") as tar:
                for member in tar:
                    stream.members += 1
                    self._checksize_text(stream.members, member)
                    path = self._add(member)
                    if path is not None and not is_read_member(path):
                        self._read_past(tar, member)
                    elif path is not None and member.isreg():
                        stream.limit = member.size
                        content = tar.extractfile(member).read()
                        stream.limit = MAX_HEADER_BYTES
                        if len(content) < member.size:
                            raise CaptureError(f"{self.name}: capture archive is truncated (member {member.name})")
                        self._files[path] = content
                    tar.members = []  # (tarfile keeps every member read: not needed)
                end = tar.offset
        except tarfile.TarError as e:
            if "unexpected end of data" in str(e):  # tarfile's words for a member cut short
                raise CaptureError(f"{self.name}: capture archive is truncated ({e})") from None
            if stream.members == 0:  # (not one header read: most likely no tar at all)
                raise CaptureError(self._not_a_tar(stream.kind) or
                                   f"{self.name}: not a readable capture archive ({e})") from None
            raise CaptureError(f"{self.name}: not a readable capture archive ({e})") from None
        except EOFError:
            raise CaptureError(f"{self.name}: capture archive is truncated") from None
        # tarfile stops quietly at a cut or bad header; what follows the last member must be
        # nothing (C smemcap writes no end marker) or the zero blocks that end an archive.
        try:
            stream.seek(end)
        except io.UnsupportedOperation:
            pass
        first = True
        while stream.pos - end <= MAX_TRAILER_BYTES:
            rest = stream.read(1 << 20)
            if not rest:
                if first and "capture-info" in self._files:
                    raise CaptureError(_cut_between_members(self.name, stream.members))
                return
            first = False
            if rest.strip(b"\0"):
                raise CaptureError(f"{self.name}: capture archive is truncated or corrupt after member "
                                   f"{len(self._files)}")

    def _not_a_tar(self, kind):
        """The line for data whose first block is no tar header (a page, a script, a zip given as
        a capture), saying what it looks like; None for a tar whose first header is damaged, or a
        recording's frame (its own errors say it)."""
        if not isinstance(self._data, (bytes, bytearray, CaptureFile)):
            return None
        try:
            first = DecompressedStream(self._data, self.name).read(BLOCK)
        except CaptureError:
            return None
        if first[257:262] == b"ustar":
            return None
        return not_a_capture(self.name, self._data[:BLOCK], first, kind)

    def _read_past(self, tar, member):
        """Read a member no reader asks for a MiB at a time, dropping it: a cut is still one."""
        data, left = tar.extractfile(member), member.size
        while left:
            step = len(data.read(min(left, 1 << 20)))
            if not step:
                raise CaptureError(f"{self.name}: capture archive is truncated (member {member.name})")
            left -= step

    def _add(self, member):
        """Note a pid directory's owner; the path a regular file is to be kept under, else None.

        ``member`` is a tarfile.TarInfo or a tar_index.Member.
        """
        path = member_path(member.name)
        if path is None:
            return None
        if member.isdir():
            if is_pid_name(path):
                self._dirs[int(path)] = member.uid
                if member.uname:
                    self._unames.setdefault(member.uid, member.uname)
            return None
        if not member.isreg():
            return None  # links, devices, fifos: never followed
        return path

    def _paths(self, prefix):
        return [p for p in self._files if p.startswith(prefix) and p.count("/") == 4]

    def list_sys(self, path):
        prefix = f"sys/{path}/"
        return sorted({p[len(prefix):].partition("/")[0] for p in self._files if p.startswith(prefix)})

    def device_fdinfo(self, pid):
        index = self.__dict__.get("_fdinfo_index")
        if index is None or index[0] != len(self._files):  # (once per reading, not a walk per process)
            found = {}
            for path in self._files:
                head, _, leaf = path.partition("/")
                if leaf.startswith("fdinfo/") and is_pid_name(head):
                    found.setdefault(int(head), {})[path] = self._files[path]
            index = self._fdinfo_index = (len(self._files), found)
        return fdinfo_members(index[1].get(pid, {}), pid)

    def pids(self):
        pids = set(self._dirs)
        for path in self._files:
            head, sep, _ = path.partition("/")
            if sep and is_pid_name(head):
                pids.add(int(head))
        return sorted(pids)

    def read(self, path):
        return member_bytes(self._files, path)

    def owner(self, pid):
        uid = self._dirs.get(pid)
        return uid if uid is not None else self._status_owner(pid)

    def user_name(self, uid):
        return self._unames.get(uid) or self._passwd_names().get(uid)


class ArchiveSource(Archive):
    """A capture archive held: every member a report may read, read as it is opened; the file
    is closed then, unless another owns it (``owned=False``: a stream's held form)."""

    def __init__(self, data, name, per_mapping=True, owned=True, description=None, notes=(), recording_frame=None):
        super().__init__(data, name, per_mapping, description, notes, recording_frame)
        try:
            self._read_stream(DecompressedStream(self._data, self.name), self._per_mapping)
        except NeedTarfile:  # pax or GNU extensions, or damage: tarfile reads all and tells
            self._files, self._dirs, self._unames = {}, {}, {}
            self._read_with_tarfile(DecompressedStream(self._data, self.name))
        self._check_meminfo()
        if owned and isinstance(self._data, CaptureFile):  # everything is read: neither file nor bytes are needed
            self._data.close()
        self._data = None



def _cut_between_members(name, members):
    """An archive that holds a capture-info (smemcap.sh's, smem capture's, a recording's frame)
    and stops after a whole member, without the zero blocks that end a tar: every writer of ours
    ends its archives so, and a plain tar cut short (busybox without gzip, through nc) is cut where
    tar wrote a record, a member's edge, so the cut showed nothing.  Our writers put a capture-info
    first, so a cut anywhere after it is found (a capture of ours from before smem capture did,
    cut before its one capture-info, still cannot be told from a whole one).  C smemcap writes no
    end marker and no capture-info."""
    return (f"{name}: capture archive is truncated: it stops after member {members} without the "
            f"end-of-archive blocks its writer puts there (cut off while it was written or sent?)")


def member_bytes(files, path):
    """A held member's bytes; FileNotFoundError where the capture has none (as a missing file)."""
    try:
        return bytes(files[path])
    except KeyError:
        raise FileNotFoundError(2, "not in capture", path) from None



def fdinfo_members(files, pid):
    """[(fd, bytes)] of the ``PID/fdinfo/FD`` members of ``files``, in fd order; None where the
    process has none (a capture made before captures carried them, or a process without)."""
    prefix = f"{pid}/fdinfo/"
    found = sorted((int(path[len(prefix):]), bytes(content)) for path, content in files.items()
                   if path.startswith(prefix) and is_pid_name(path[len(prefix):]))
    return found or None

