"""Captures: a tar archive of /proc files, or a directory holding them.

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
import pwd
import zlib

from ..errors import CaptureError, SourceError
from ..parsers.capture_info import parse_capture_info
from ..parsers.passwd import parse_passwd
from ..parsers.status import parse_status, status_ids
from .base import Source
from .tar_index import BLOCK, NeedTarfile, data_length, read_header

__all__ = ["ArchiveSource", "DirectorySource", "decompress", "read_capture"]

#: A decompressed capture larger than this is refused (a bomb, not a capture).
MAX_CAPTURE_BYTES = 8 << 30


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
    return _bounded_read(stream, f"{name}: larger than {MAX_CAPTURE_BYTES >> 30} GiB: not a capture",
                         bytearray(first))


def _zstd_reader(stream):
    try:
        import zstandard
    except ImportError:
        raise CaptureError("capture is zstd-compressed; install the 'zstandard' package to read it") from None
    return zstandard.ZstdDecompressor().stream_reader(stream)


def _bounded_read(stream, too_large, buffer=None):
    """All of ``stream`` in one growing buffer (a list of chunks joined at the end
    would hold the capture twice at its peak)."""
    buffer = bytearray() if buffer is None else buffer
    while True:
        chunk = stream.read(1 << 20)
        if not chunk:
            return buffer
        if len(buffer) + len(chunk) > MAX_CAPTURE_BYTES:
            raise CaptureError(too_large)
        buffer += chunk


_TOO_LARGE = f"capture decompresses to more than {MAX_CAPTURE_BYTES >> 30} GiB"

#: (magic bytes, name, file object decompressing a stream) of each compression recognised
_COMPRESSIONS = (
    (b"\x1f\x8b", "gzip", lambda stream: gzip.GzipFile(fileobj=stream)),
    (b"BZh", "bzip2", bz2.BZ2File),
    (b"\xfd7zXZ\x00", "xz", lzma.LZMAFile),
    (b"\x28\xb5\x2f\xfd", "zstd", _zstd_reader),
)


def _decompressing_reader(data):
    """(compression name or None, a file object giving ``data`` decompressed as it is read)."""
    stream = io.BytesIO(data)
    for magic, kind, reader in _COMPRESSIONS:
        if data.startswith(magic):
            return kind, reader(stream)
    return None, stream


def decompress(data, name="capture"):
    """Undo gzip/bzip2/xz/zstd compression recognised by magic bytes."""
    kind, reader = _decompressing_reader(data)
    if kind is None:
        return data
    try:
        return _bounded_read(reader, _TOO_LARGE)
    except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as e:
        raise CaptureError(f"{name}: {kind} data is truncated or corrupt ({e})") from None


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


class _CaptureFacts:
    """Facts shared by archive and directory captures (read from their own files)."""

    def facts(self):
        facts = {}
        info = self.read_optional("capture-info")
        if info:
            facts.update(parse_capture_info(info))
        version = self.read_optional("version")
        if version and "kernel" not in facts:
            words = version.split()
            if len(words) > 2:
                facts["kernel"] = words[2].decode("utf-8", "replace")
        return facts

    def firmware_memmap(self):
        entries = sorted({p.split("/")[3] for p in self._paths("sys/firmware/memmap/")},
                         key=lambda e: (len(e), e))
        memmap = []
        for entry in entries:
            fields = [self.read_optional(f"sys/firmware/memmap/{entry}/{name}")
                      for name in ("start", "end", "type")]
            if None not in fields:
                memmap.append(tuple(fields))
        return memmap or None

    def boot_log(self):
        return self.read_optional("dmesg")

    def _passwd_names(self):
        if self._passwd is None:
            data = self.read_optional("passwd")
            self._passwd = parse_passwd(data) if data else {}
        return self._passwd

    def _status_owner(self, pid):
        data = self.read_optional(f"{pid}/status")
        if data:
            ids = status_ids(parse_status(data), "Uid")
            if ids and len(ids) > 1:
                return ids[1]
        return None


def _read_exact(stream, size):
    """``size`` bytes, or fewer at the end of the stream."""
    data = stream.read(size)
    if len(data) == size or not data:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = stream.read(size - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


class ArchiveSource(_CaptureFacts, Source):
    """A capture archive held in memory (from a file, stdin or a remote host).

    The archive is decompressed as its members are read, and only their contents are
    kept, never the whole decompressed stream.  With ``per_mapping=False`` (a report
    that smaps_rollup serves) a process's smaps is kept only where the capture holds
    no smaps_rollup for it, so a process view does not hold every mapping of every
    process.  Anything unusual (pax or GNU extension headers, damage) sends the whole
    archive, decompressed at once, through tarfile, which also words the errors.
    """

    def __init__(self, data, name, per_mapping=True):
        self.description = f"capture {name}"
        self.name = name
        self._passwd = None
        self._files = {}   # path -> bytes, or a memoryview of the archive read by tarfile
        self._dirs = {}    # pid -> uid, from the pid directory members
        self._unames = {}  # uid -> user name, from the same members
        try:
            self._read_stream(data, per_mapping)
        except NeedTarfile:  # pax or GNU extensions, or damage: tarfile reads all and tells
            self._files, self._dirs, self._unames = {}, {}, {}
            raw = memoryview(decompress(data, name))
            end = self._index_with_tarfile(raw)
            # tarfile stops quietly at a cut header; what follows the last member must be
            # nothing (C smemcap writes no end marker) or the zero blocks that end an archive.
            if any(raw[end:]):
                raise CaptureError(f"{name}: capture archive is truncated or corrupt after member "
                                   f"{len(self._files)}")
        if "meminfo" not in self._files:
            raise CaptureError(f"{name}: capture has no meminfo (not an smem capture?)")

    def _read_stream(self, data, per_mapping):
        """Read the members as the data decompresses; NeedTarfile for anything unusual."""
        if not data:
            raise NeedTarfile
        rollups = set()   # pids whose smaps_rollup was read (per_mapping=False)
        total = 0
        try:
            _, stream = _decompressing_reader(data)  # (zstd without its package: CaptureError)
            while True:
                header = _read_exact(stream, BLOCK)
                if not header:
                    return  # no end marker, as C smemcap writes
                member = read_header(header)
                if member is None:  # the end: only zero blocks may follow
                    while True:
                        rest = stream.read(1 << 20)
                        if not rest:
                            return
                        if rest.strip(b"\0"):
                            raise NeedTarfile
                length = data_length(member)
                total += BLOCK + length
                if total > MAX_CAPTURE_BYTES:
                    raise NeedTarfile
                path = self._add(member)
                wanted = member.isreg() and path is not None
                if wanted and not per_mapping:
                    pid, _, leaf = path.partition("/")
                    if leaf == "smaps_rollup" and member.size:
                        rollups.add(pid)
                        self._files.pop(f"{pid}/smaps", None)
                    wanted = not (leaf == "smaps" and pid in rollups)
                skip = length
                if wanted:
                    content = _read_exact(stream, member.size)
                    if len(content) < member.size:
                        raise NeedTarfile
                    self._files[path] = content
                    skip -= member.size
                while skip:
                    step = len(stream.read(min(skip, 1 << 20)))
                    if not step:
                        raise NeedTarfile  # cut short: tarfile tells which error
                    skip -= step
        except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError, ImportError):
            raise NeedTarfile from None

    def _index_with_tarfile(self, raw):
        """Index with tarfile (imported only here); gives where the member headers end."""
        import tarfile
        try:
            with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
                for member in tar:
                    path = self._add(member)
                    if path is not None and member.isreg():
                        if member.offset_data + member.size > len(raw):
                            raise CaptureError(f"{self.name}: capture archive is truncated (member {member.name})")
                        self._files[path] = raw[member.offset_data:member.offset_data + member.size]
                return tar.offset
        except tarfile.TarError as e:
            raise CaptureError(f"{self.name}: not a readable capture archive ({e})") from None
        except EOFError:
            raise CaptureError(f"{self.name}: capture archive is truncated") from None

    def _add(self, member):
        """Note a pid directory's owner; the path a regular file is to be kept under, else None.

        ``member`` is a tarfile.TarInfo or a tar_index.Member.
        """
        path = _member_path(member.name)
        if path is None:
            return None
        if member.isdir():
            if path.isdigit():
                self._dirs[int(path)] = member.uid
                if member.uname:
                    self._unames.setdefault(member.uid, member.uname)
            return None
        if not member.isreg():
            return None  # links, devices, fifos: never followed
        return path

    def _paths(self, prefix):
        return [p for p in self._files if p.startswith(prefix) and p.count("/") == 4]

    def pids(self):
        pids = set(self._dirs)
        for path in self._files:
            head, sep, _ = path.partition("/")
            if sep and head.isdigit():
                pids.add(int(head))
        return sorted(pids)

    def read(self, path):
        try:
            return bytes(self._files[path])
        except KeyError:
            raise FileNotFoundError(2, "not in capture", path) from None

    def owner(self, pid):
        uid = self._dirs.get(pid)
        return uid if uid is not None else self._status_owner(pid)

    def user_name(self, uid):
        return self._unames.get(uid) or self._passwd_names().get(uid)


class DirectorySource(_CaptureFacts, Source):
    """A capture extracted into a directory, or any proc-like tree.

    The directory may hold ``proc/`` (smem 1.5's layout) or the proc files
    themselves.  Owners come from the pid directories' owners, as smem 1.5
    takes them; names from the capture's passwd copy, else this machine's.
    """

    def __init__(self, path):
        self.path = path
        self.description = f"capture {path}"
        self._passwd = None
        proc = os.path.join(path, "proc")
        self.root = proc if os.path.isdir(proc) else path
        if not os.path.exists(os.path.join(self.root, "meminfo")):
            raise SourceError(f"{path}: no meminfo in this directory (not a capture or a proc tree?)")

    def pids(self):
        try:
            return sorted(int(e) for e in os.listdir(self.root) if e.isdigit())
        except OSError as e:
            raise SourceError(f"{self.path}: {e.strerror}") from None

    def read(self, path):
        with open(os.path.join(self.root, path), "rb") as f:
            return f.read()

    def _paths(self, prefix):
        top = os.path.join(self.root, prefix)
        found = []
        for dirpath, _, files in os.walk(top):
            rel = os.path.relpath(dirpath, self.root)
            found.extend(f"{rel}/{f}" for f in files)
        return [p for p in found if p.count("/") == 4]

    def owner(self, pid):
        try:
            return os.stat(os.path.join(self.root, str(pid))).st_uid
        except OSError:
            return self._status_owner(pid)

    def user_name(self, uid):
        names = self._passwd_names()
        if names:
            return names.get(uid)
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return None
