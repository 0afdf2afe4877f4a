"""Capture archives: a tar of /proc files, compressed or not, read in memory and never extracted.

Archive layouts accepted (docs/capture-format.md): C smemcap's plain tar
(``meminfo``, ``version``, ``N/``, ``N/smaps``, ``N/cmdline``, ``N/stat``),
our scripts/smemcap.sh and ``smem capture`` (the same plus ``N/status``,
``N/smaps_rollup``, ``iomem``, ``passwd``, ``capture-info``, ...), and the old
``capture`` script's ``proc/``-prefixed archive; members may start with
``./``.  Compression (gzip, bzip2, xz, zstd) is recognised by content, not by
name.  An archive is read in memory and never extracted: members that are
links, devices, absolute paths or contain ``..`` are ignored.
"""

import bz2
import gzip
import io
import lzma
import os
import zlib

from ..compression import compression_of
from ..errors import CaptureError
from .base import (MAX_FRAME_MEMBER_BYTES, MAX_MEMBER_BYTES, NeedHeld, Source, StreamedSource, is_pid_name, member_limit,
                   size_text)
from .captured import CaptureFacts
from .tar_index import BLOCK, NeedTarfile, data_length, read_header

__all__ = ["ArchiveSource", "CaptureFile", "read_capture", "MAX_CAPTURE_BYTES", "MAX_MEMBER_BYTES",
           "MAX_FRAME_MEMBER_BYTES"]

#: A capture decompressing to more than this is refused: a 10,000-process server's
#: capture is about 2 GiB; more is a bomb, and reading it would only cost time.
MAX_CAPTURE_BYTES = 4 << 30
#: The memory an xz stream may ask for (xz -9 needs 65 MiB); a 4 GiB dictionary is refused.
MAX_XZ_MEMORY = 256 << 20
#: The largest zstd window accepted (zstd's own default limit for decoding, 2**27).
MAX_ZSTD_WINDOW = 1 << 27

#: After the end-of-archive blocks, at most this much is read (to find garbage or a cut);
#: tar pads records with zeros, 10 KiB by default.  More is not read, whatever it holds.
MAX_TRAILER_BYTES = 16 << 20

#: The most tarfile may read at once outside members' data: a pax or GNU extension
#: header (a long name, extended attributes) is some KiB.
MAX_HEADER_BYTES = 16 << 20

#: Decompressed data asked of the decompressor at a time, and at most read ahead of the members
#: (a C smemcap capture of 1,510 processes, serial: 303 ms of CPU, 312 at 512 KiB, 338 at 256 KiB;
#: the peak, 2 MiB more than at 256 KiB).
READ_AHEAD = 1 << 20


def read_capture(stream, name):
    """The bytes of a capture from a file or pipe, refusing what cannot be one early.

    A tar or compressed stream never starts with a zero block, so an endless stream of
    zeros (or an empty one) is refused at once; anything else is read up to the limit.
    """
    first = stream.read(512)
    if not first:
        raise CaptureError(f"{name}: empty (no capture)")
    if not first.strip(b"\0"):
        raise CaptureError(f"{name}: starts with zeros: not a capture")
    buffer = bytearray(first)  # one growing buffer: a list of chunks joined would hold it twice
    while True:
        chunk = stream.read(1 << 20)
        if not chunk:
            return buffer
        if len(buffer) + len(chunk) > MAX_CAPTURE_BYTES:
            raise CaptureError(f"{name}: larger than {MAX_CAPTURE_BYTES >> 30} GiB: not a capture")
        buffer += chunk


class CaptureFile:
    """A regular capture file read in place: its bytes as they are needed, never all at
    once (os.pread, not mmap: a file cut short under us reads short, not SIGBUS)."""

    def __init__(self, f, name):
        self._f = f
        self._size = os.fstat(f.fileno()).st_size
        if self._size == 0:
            raise CaptureError(f"{name}: empty (no capture)")
        first = self[:512]
        if not first.strip(b"\0"):
            raise CaptureError(f"{name}: starts with zeros: not a capture")

    def __len__(self):
        return self._size

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, _ = key.indices(self._size)
            return os.pread(self._f.fileno(), max(0, stop - start), start)
        data = os.pread(self._f.fileno(), 1, key)
        if not data:
            raise IndexError(key)
        return data[0]

    def close(self):
        self._f.close()


class _ReadFrom(io.RawIOBase):
    """A capture's data read forward from its start at an offset of its own: two walkers of
    one archive (a process and a worker forked from it) do not move each other's place, and
    data held in memory (standard input, a remote host) is never copied whole (a BytesIO of a
    bytearray would copy it, once per walker).  A file is read with pread to its size when it
    was opened."""

    def __init__(self, data):
        self._data = data if isinstance(data, CaptureFile) else memoryview(data)
        self._pos = 0

    def readable(self):
        return True

    def readinto(self, buffer):
        chunk = self._data[self._pos:self._pos + len(buffer)]
        buffer[:len(chunk)] = chunk
        self._pos += len(chunk)
        return len(chunk)


class _XzReader(io.RawIOBase):
    """xz streams (concatenated, as xz allows) decompressed with a memory limit.

    lzma.LZMAFile takes no limit, and a header asking for a 4 GiB dictionary gets it.
    """

    def __init__(self, stream):
        self._in = stream
        self._d = lzma.LZMADecompressor(memlimit=MAX_XZ_MEMORY)

    def readable(self):
        return True

    def readinto(self, buffer):
        while True:
            if self._d.eof:
                data = self._d.unused_data or self._in.read(1 << 16)
                if not data:
                    return 0
                self._d = lzma.LZMADecompressor(memlimit=MAX_XZ_MEMORY)
            elif self._d.needs_input:
                data = self._in.read(1 << 16)
                if not data:
                    raise EOFError("compressed data ended before the end-of-stream marker")
            else:
                data = b""
            out = self._d.decompress(data, len(buffer))
            if out:
                buffer[:len(out)] = out
                return len(out)


def _zstd():
    try:
        import zstandard
    except ImportError:
        raise CaptureError("capture is zstd-compressed; install the 'zstandard' package to read it") from None
    return zstandard


def _zstd_reader(stream):
    """Every frame (data after the first is read, not ignored), with a bounded window."""
    decompressor = _zstd().ZstdDecompressor(max_window_size=MAX_ZSTD_WINDOW)
    return decompressor.stream_reader(stream, read_across_frames=True)


def _zstd_frames_end(data):
    """Where the zstd frames in ``data`` end, or None if the last one is cut short.

    zstandard's stream reader ends quietly at a frame cut short, so the frames are
    walked first (RFC 8878: frame header, then blocks until the last, then checksum);
    bytes left after the last frame are left to the decoder, which refuses them.
    """
    pos, n = 0, len(data)
    while pos + 4 <= n:
        magic = int.from_bytes(data[pos:pos + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # a skippable frame
            pos += 8 + int.from_bytes(data[pos + 4:pos + 8], "little")
            continue
        if magic != 0xFD2FB528 or pos + 5 > n:
            return pos
        descriptor = data[pos + 4]
        single = descriptor >> 5 & 1
        pos += 5 + (not single) + (0, 1, 2, 4)[descriptor & 3] + (single, 2, 4, 8)[descriptor >> 6]
        while True:
            if pos + 3 > n:
                return None
            block = int.from_bytes(data[pos:pos + 3], "little")
            pos += 3 + (1 if block >> 1 & 3 == 1 else block >> 3)
            if block & 1:
                break
        pos += 4 * (descriptor >> 2 & 1)
        if pos > n:
            return None
    return pos


#: the file object decompressing a stream, of each compression a capture may have (compression.py)
_READERS = {
    "gzip": lambda stream: gzip.GzipFile(fileobj=stream),
    "bzip2": bz2.BZ2File,
    "xz": lambda stream: io.BufferedReader(_XzReader(stream), 1 << 16),
    "zstd": _zstd_reader,
}


def _decompression_errors(kind):
    """What a decompressor of ``kind`` raises for damaged or hostile data."""
    errors = (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError, MemoryError)
    return errors + (_zstd().ZstdError,) if kind == "zstd" else errors


class _Stream:
    """The decompressed archive read forward, counting, refusing what is too large.

    tarfile (for the archives the fast index leaves to it) seeks and asks for
    extension headers whole: it may seek forward (the data is read and dropped) or back
    into the last read (a header it read and refused), and no read may ask for more
    than a member may hold.
    """

    def __init__(self, data, name):
        self.name = name
        self.kind = None
        self._raw = io.BufferedReader(_ReadFrom(data), 1 << 17)
        found = compression_of(data)
        if found is not None:
            self.kind, reader = found.name, _READERS[found.name]
            if self.kind == "zstd" and _zstd_frames_end(data) is None:
                raise CaptureError(f"{name}: zstd data is truncated or corrupt (a frame is cut short)")
            self._raw = reader(self._raw)
        self._errors = _decompression_errors(self.kind)
        self.pos = 0
        self.members = 0          # members seen, for the messages
        self.end = 0              # where the end-of-archive block was read
        self.limit = MAX_HEADER_BYTES  # the largest read: more only for a member's data
        self._last = (0, b"")     # (offset, bytes) of the last read: a seek back may replay it
        self._pending = b""
        self._ahead, self._ahead_at = b"", 0  # decompressed, not yet read: READ_AHEAD at a time

    def _inflate(self, size):
        try:
            return self._raw.read(size)
        except self._errors as e:
            if self.kind is None:
                raise CaptureError(f"{self.name}: cannot be read ({e or type(e).__name__})") from None
            raise CaptureError(f"{self.name}: {self.kind} data is truncated or corrupt "
                               f"({e or type(e).__name__})") from None

    def read(self, size=-1):
        if size is None or size < 0 or size > self.limit:
            raise CaptureError(f"{self.name}: member {self.members + 1} inflates past the limit of "
                               f"{size_text(self.limit)} per member")
        start = self.pos
        data, self._pending = self._pending[:size], self._pending[size:]
        if len(data) < size:
            more = self._take(size - len(data))
            data = data + more if data else more
        self.pos += len(data)
        if self.pos > MAX_CAPTURE_BYTES:
            raise CaptureError(f"{self.name}: capture decompresses to more than "
                               f"{MAX_CAPTURE_BYTES >> 30} GiB: not a capture")
        if len(data) <= 1 << 16:
            self._last = (start, data)
        return data

    def _take(self, size):
        """``size`` bytes (fewer where the data ends) of the decompressed stream: from what was
        read ahead, the decompressor asked for READ_AHEAD at a time (a capture's 6,000 members
        are 15,000 reads; each through the gzip module's layers cost more than the inflating).
        A member of over 1 MiB comes as a bytearray, grown in place (joining parts would hold
        it twice)."""
        ahead, at = self._ahead, self._ahead_at
        if at + size <= len(ahead):
            self._ahead_at = at + size
            return ahead[at:at + size]
        buffer = bytearray(memoryview(ahead)[at:])  # (less than size)
        self._ahead, self._ahead_at = b"", 0
        while len(buffer) < size:
            more = self._inflate(READ_AHEAD)
            if not more:
                break
            need = size - len(buffer)
            if len(more) > need:  # the rest is read ahead, kept as it came
                buffer += memoryview(more)[:need]
                self._ahead, self._ahead_at = more, need
                break
            buffer += more
        return buffer if len(buffer) > 1 << 20 else bytes(buffer)

    def skip(self, size):
        """Drop ``size`` bytes; False if the data ends first."""
        while size > 0:
            step = len(self.read(min(size, 1 << 20)))
            if not step:
                return False
            size -= step
        return True

    # what tarfile asks of a file object
    def tell(self):
        return self.pos

    def seek(self, offset, whence=io.SEEK_SET):
        if whence == io.SEEK_CUR:
            offset += self.pos
        elif whence != io.SEEK_SET:
            raise io.UnsupportedOperation("seek from the end of a stream")
        if offset < self.pos:
            start, last = self._last
            if not start <= offset <= start + len(last) or self._pending:
                raise io.UnsupportedOperation("seek back in a stream")
            self._pending = last[offset - start:self.pos - start]
            self.pos = offset
        else:
            self.skip(offset - self.pos)
        return self.pos


def _member_path(name):
    """The proc-relative path of a member, or None for one we must not use."""
    if name.startswith("/") or "\\" in name:
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        return None
    if parts and parts[0] == "proc" and len(parts) > 1:
        parts = parts[1:]
    return "/".join(parts) or None


class _Archive(CaptureFacts, Source):
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

    def __init__(self, data, name, per_mapping=True):
        self.description = f"capture {name}"
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
        NeedTarfile for anything unusual."""
        while True:
            header = stream.read(BLOCK)
            if not header:
                if stream.pos == 0:
                    raise NeedTarfile  # tarfile's "empty file" error
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
                yield path, content
            elif member.isdir():
                name = _member_path(member.name)
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
                    if path is not None and member.isreg():
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
            raise CaptureError(f"{self.name}: not a readable capture archive ({e})") from None
        except EOFError:
            raise CaptureError(f"{self.name}: capture archive is truncated") from None
        # tarfile stops quietly at a cut or bad header; what follows the last member must be
        # nothing (C smemcap writes no end marker) or the zero blocks that end an archive.
        try:
            stream.seek(end)
        except io.UnsupportedOperation:
            pass
        while stream.pos - end <= MAX_TRAILER_BYTES:
            rest = stream.read(1 << 20)
            if not rest:
                return
            if rest.strip(b"\0"):
                raise CaptureError(f"{self.name}: capture archive is truncated or corrupt after member "
                                   f"{len(self._files)}")

    def _add(self, member):
        """Note a pid directory's owner; the path a regular file is to be kept under, else None.

        ``member`` is a tarfile.TarInfo or a tar_index.Member.
        """
        path = _member_path(member.name)
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
        return _fdinfo_members(index[1].get(pid, {}), pid)

    def pids(self):
        pids = set(self._dirs)
        for path in self._files:
            head, sep, _ = path.partition("/")
            if sep and is_pid_name(head):
                pids.add(int(head))
        return sorted(pids)

    def read(self, path):
        return _member(self._files, path)

    def owner(self, pid):
        uid = self._dirs.get(pid)
        return uid if uid is not None else self._status_owner(pid)

    def user_name(self, uid):
        return self._unames.get(uid) or self._passwd_names().get(uid)


class ArchiveSource(_Archive):
    """A capture archive held: every member a report may read, read as it is opened; the file
    is closed then, unless another owns it (``owned=False``: a stream's held form)."""

    def __init__(self, data, name, per_mapping=True, owned=True):
        super().__init__(data, name, per_mapping)
        try:
            self._read_stream(_Stream(self._data, self.name), self._per_mapping)
        except NeedTarfile:  # pax or GNU extensions, or damage: tarfile reads all and tells
            self._files, self._dirs, self._unames = {}, {}, {}
            self._read_with_tarfile(_Stream(self._data, self.name))
        self._check_meminfo()
        if owned and isinstance(self._data, CaptureFile):  # everything is read: neither file nor bytes are needed
            self._data.close()
        self._data = None


class ArchiveStream(_Archive, StreamedSource):
    """A capture archive read in one pass: nothing is read at first; :meth:`each_process` reads
    the archive once (per walker: :meth:`replayed`), front to back, handing out each process's
    files as the next process (or a global member) starts and keeping only the small global
    members (meminfo, passwd, capture-info, ...), so a report's memory need not grow with the
    capture."""

    def each_process(self):
        """Each process's files as the archive is read once, front to back: ``(pid, source)``
        with ``source`` a Source holding that process's files (and asking this archive for
        owners and user names).  A process's members must be together (as every capture
        writer puts them); one found apart raises NeedHeld, as does an archive only tarfile
        reads: the caller then reads it whole (:meth:`held`).  Global members are kept here;
        meminfo is checked at the end."""
        per_mapping = self._per_mapping
        done = set()
        current, files = None, {}

        def wanted(path, member):
            head, sep, leaf = path.partition("/")
            if not (sep and is_pid_name(head)):
                return True  # a global member: small, kept
            return is_process_file(leaf)

        def finish(pid, files):
            if not per_mapping and files.get(f"{pid}/smaps_rollup"):
                files.pop(f"{pid}/smaps", None)  # as the held form drops it
            done.add(pid)
            return pid, _ProcessFiles(self, pid, files)

        unusual = False
        try:
            for path, content in self._walk(_Stream(self._data, self.name), wanted):
                head, sep, _ = path.partition("/")
                pid = int(head) if is_pid_name(head) and (sep or content is None) else None
                if pid is None:
                    if content is not None:
                        self._files[path] = content
                        if path == "passwd":
                            self._passwd = None  # user names asked before it came are asked again
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

    @property
    def replayable(self):
        """Whether :meth:`replayed` can give another reading (not once read whole)."""
        return self._data is not None

    def replayed(self):
        """Another streamed reading of the same archive, from its start: a worker forked
        before this one is read walks it too, loading its share of the processes."""
        return ArchiveStream(self._data, self.name, self._per_mapping)

    def processes_suggested(self):
        """About how many processes the archive holds, from its stored size: a process of 90
        mappings is about 4 KiB compressed (gzip: ours 4.6, C smemcap's 2.7) and 64-73 KiB in
        a plain tar (C smemcap's); 0 once read whole."""
        if self._data is None:
            return 0
        compressed = compression_of(self._data) is not None
        return len(self._data) // (4 << 10 if compressed else 64 << 10)

    def knows_user(self, uid):
        """Whether a user name for ``uid`` is already known for sure while streaming (a
        directory member named it: the held form gives the first such name too)."""
        return uid in self._unames

    def held(self):
        """The same archive read whole (an :class:`ArchiveSource`), where one pass cannot do."""
        return ArchiveSource(self._data, self.name, self._per_mapping, owned=False)


def _member(files, path):
    """A held member's bytes; FileNotFoundError where the capture has none (as a missing file)."""
    try:
        return bytes(files[path])
    except KeyError:
        raise FileNotFoundError(2, "not in capture", path) from None


#: The files of a process the loader reads (smem.model): a streamed archive keeps only these,
#: and its ``fdinfo/FD`` members (is_process_file).
PROCESS_FILES = frozenset({"cmdline", "stat", "status", "smaps", "smaps_rollup", "cgroup"})


def is_process_file(leaf):
    return leaf in PROCESS_FILES or leaf.startswith("fdinfo/")


def _fdinfo_members(files, pid):
    """[(fd, bytes)] of the ``PID/fdinfo/FD`` members of ``files``, in fd order; None where the
    process has none (a capture made before captures carried them, or a process without)."""
    prefix = f"{pid}/fdinfo/"
    found = sorted((int(path[len(prefix):]), bytes(content)) for path, content in files.items()
                   if path.startswith(prefix) and is_pid_name(path[len(prefix):]))
    return found or None


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
        return _member(self._files, path)

    def device_fdinfo(self, pid):
        return _fdinfo_members(self._files, pid)

    def owner(self, pid):
        uid = self._archive._dirs.get(pid)
        return uid if uid is not None else self._status_owner(pid)

    def user_name(self, uid):
        return self._archive.user_name(uid)
