"""Writing a recording's directory: frames and anchors written whole, then named in the index.

Each file is written under a hidden temporary name, synced and renamed into place, and only then
is its line appended to ``index.jsonl`` (and synced): smem killed at any moment (``kill -9``, a
power cut after the sync) leaves every frame the index names whole, and at most a temporary
file and a last index line cut short, which the reader ignores and a resumed recording
removes.  The directory is made 0700 (a frame holds every process's command line); an existing
one is written only if it is ours (or root's) and is a recording already (then it is resumed:
numbering goes on, and the next frame is a key frame) or empty.
"""

import contextlib
import errno
import fcntl
import json
import os
import secrets
import stat
import time

from .. import __version__
from ..errors import CaptureError, OutputError, SourceError
from ..sources.recorded import FORMAT, INDEX, VERSION, FrameEntry, Recording, anchor_path, frame_path
from .frames import compress, repack, zstd

__all__ = ["RecordingWriter", "DEFAULT_SMAPS_EVERY"]

#: A key frame (every smaps) every this many frames: hourly at one frame every 10 s.
DEFAULT_SMAPS_EVERY = 360
#: A frame this many times the size per process of the first after its anchor makes the next frame a
#: new anchor (processes started since, and counters moved, cost more and more against an old one) ...
RENEW_GROWTH = 2
#: ... if it is larger than this, too (below, an anchor costs more than it saves)
RENEW_MIN_BYTES = 4096


class RecordingWriter:
    """A recording open for new frames (a context manager): :meth:`add` one capture at a time."""

    def __init__(self, path, smaps_every=DEFAULT_SMAPS_EVERY, hold=contextlib.nullcontext):
        """``hold``: what a frame is named in the index and counted inside (smem.recording.stopping's
        StopSignals.held: a signal raised there would leave the index a line cut short, or the next
        frame numbered the same, before the lines after it)."""
        self.path = path
        self.smaps_every = smaps_every
        self._hold = hold
        zstd()  # missing, it is one line before the directory is made, not an empty recording after
        self._dir = _open_directory(path)
        self._index = None
        try:  # two recorders would number the same frames, and the index would be refused whole
            fcntl.flock(self._dir, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                self.close()
                raise OutputError(f"refusing to record into {path}: another smem record is writing it") from None
        try:
            self.resumed = self._start()
        except OSError as e:  # (a read-only or full disk, a directory we may not write): one line
            self.close()
            raise OutputError(f"cannot record into {path}: {e.strerror or e}") from None
        except BaseException:
            self.close()
            raise
        self._anchor = None          # (frame number, anchor tar) of this session's last anchor
        self._since_key = 0
        self._after_anchor = None    # bytes per process of the first frame after the anchor
        self._drifted = False        # whether the next frame makes a new anchor
        self.written = 0             # bytes the last add() wrote (frame and anchor)
        self.last_key = None         # the number of this session's last key frame

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._index is not None:
            os.close(self._index)
            self._index = None
        if self._dir is not None:
            os.close(self._dir)
            self._dir = None

    def _start(self):
        """Open the index for appending: a new recording's header written, or an old one resumed.
        Whether it was resumed."""
        names = os.listdir(self._dir)
        if INDEX in names:
            with Recording(self.path) as existing:
                self.next_number = existing.frames[-1].number + 1 if existing.frames else 1
            self._index = os.open(INDEX, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW, dir_fd=self._dir)
            _cut_partial_line(self._index)
            for sub in ("frames", "anchors"):
                try:  # (a file or link where the directory should be: a damaged recording)
                    os.makedirs(os.path.join(self.path, sub), mode=0o700, exist_ok=True)
                    _remove_temporaries(self._dir, sub)
                except OSError as e:
                    raise OutputError(f"cannot resume {self.path}: {sub}: {e.strerror}") from None
            return True
        if names:
            raise OutputError(f"refusing to record into {self.path}: it is not empty and not a recording "
                              f"(no {INDEX})")
        for sub in ("frames", "anchors"):
            os.mkdir(sub, 0o700, dir_fd=self._dir)
        header = {"format": FORMAT, "version": VERSION, "created": round(time.time(), 3),
                  "tool": f"smem {__version__}", "smaps_every": self.smaps_every}
        _write_whole(self._dir, ".", INDEX, (json.dumps(header) + "\n").encode())
        self._index = os.open(INDEX, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW, dir_fd=self._dir)
        self.next_number = 1
        return False

    def wants_smaps(self):
        """Whether the next frame is a key frame: the first of this session, then every smaps_every."""
        return self._anchor is None or self._since_key >= self.smaps_every

    def add(self, capture, taken=None, with_smaps=None):
        """Add a frame of ``capture`` (a file object of a capture at its start, read whole already
        if it came from elsewhere); its FrameEntry.  ``taken``: its time (default now)."""
        taken = time.time() if taken is None else taken
        key = self.wants_smaps() if with_smaps is None else with_smaps or self._anchor is None
        frame, anchor, processes = repack(capture, key)
        with frame, anchor or contextlib.nullcontext():
            size = self._write_frame(frame, anchor, key)
        number = self.next_number
        if self._anchor[0] != number:  # how far the frames have drifted from the anchor, per process
            per_process = size / max(processes, 1)
            if self._after_anchor is None:
                self._after_anchor = per_process
            self._drifted = per_process > RENEW_GROWTH * self._after_anchor and size > RENEW_MIN_BYTES
        entry = FrameEntry(number, round(taken, 3), key, self._anchor[0], processes)
        line = json.dumps({"frame": number, "time": entry.time, "smaps": key, "anchor": entry.anchor,
                           "processes": processes}) + "\n"
        with self._hold():
            try:
                _append_line(self._index, line.encode())
            except OSError as e:
                raise OutputError(f"cannot write {self.path}/{INDEX}: {e.strerror}") from None
            self.next_number = number + 1
            self._since_key += 1
            if key:
                self.last_key = number
        return entry

    def _write_frame(self, frame, anchor, key):
        """Write the next frame (``frame``, a tar file) and, for a key frame or one that follows
        frames drifted from their anchor, an anchor (``anchor``, or the frame itself), each
        compressed as it is read; the frame's compressed size.  The anchor is read into memory:
        it is the dictionary of every frame until the next."""
        number = self.next_number
        if key or self._drifted:  # a key frame's anchor is itself without the smaps; another frame's, itself
            anchor = anchor if key else frame
            self.written = _write_whole(self._dir, "anchors", os.path.basename(anchor_path(number)),
                                        lambda out: compress(anchor, out))
            anchor.seek(0)
            self._anchor = (number, anchor.read())
            self._after_anchor, self._drifted = None, False
        else:
            self.written = 0
        if key:
            self._since_key = 0
        size = _write_whole(self._dir, "frames", os.path.basename(frame_path(number)),
                            lambda out: compress(frame, out, self._anchor[1]))
        self.written += size
        return size


def _open_directory(path):
    """The recording's directory, made (0700) if absent; refused if a link, or another user's."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise OutputError(f"cannot make {path}: {e.strerror}") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        raise OutputError(f"cannot record into {path}: {e.strerror}"
                          + (" (a symbolic link is not followed)" if os.path.islink(path) else "")) from None
    info = os.fstat(fd)
    if info.st_uid not in (0, os.geteuid()):
        os.close(fd)
        raise OutputError(f"refusing to record into {path}: it belongs to another user (uid {info.st_uid})")
    return fd


def _write_whole(directory, sub, leaf, data):
    """``sub/leaf`` under ``directory`` written under a temporary name, synced, renamed into place;
    the bytes written.  ``data``: bytes, or what writes them to a file it is given (and says how many)."""
    try:  # (the recording's directory removed or moved while recording)
        where = os.open(sub, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory)
    except OSError as e:
        raise OutputError(f"cannot write a frame ({sub}/{leaf}): {e.strerror}") from None
    scratch = f".{leaf}.{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=where)
        try:
            if callable(data):
                with os.fdopen(fd, "wb", closefd=False) as out:
                    written = data(out)
            else:
                written = len(data)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(scratch, leaf, src_dir_fd=where, dst_dir_fd=where)
        scratch = None
        os.fsync(where)
        return written
    except OSError as e:
        raise OutputError(f"cannot write a frame ({sub}/{leaf}): {e.strerror}") from None
    finally:
        if scratch is not None:
            try:
                os.unlink(scratch, dir_fd=where)
            except OSError:
                pass
        os.close(where)


def _append_line(fd, line):
    """Append ``line`` to the index whole, synced, or not at all: a write the disk's end (or the
    file size limit) cuts short is taken back, where the next line would have run on from it
    and made the index one the reader refuses."""
    start = os.fstat(fd).st_size
    view = memoryview(line)
    try:
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except OSError:
        try:
            os.ftruncate(fd, start)
        except OSError:
            pass  # (what the resumed recording's _cut_partial_line drops)
        raise


def _cut_partial_line(fd):
    """Drop a last index line cut short (no newline): smem was killed while appending it."""
    size = os.fstat(fd).st_size
    if size == 0:
        raise CaptureError("the recording's index is empty")
    tail = os.pread(fd, min(size, 1 << 16), max(0, size - (1 << 16)))
    if not tail.endswith(b"\n"):
        cut = tail.rfind(b"\n")
        if cut < 0:
            raise SourceError("the recording's index has a line longer than 64 KiB")
        os.ftruncate(fd, size - len(tail) + cut + 1)


def _remove_temporaries(directory, sub):
    """Temporary files a killed recorder left (``.NAME.tmp``): never named in the index."""
    where = os.open(sub, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory)
    try:
        for name in os.listdir(where):
            if name.startswith(".") and name.endswith(".tmp"):
                try:
                    if stat.S_ISREG(os.stat(name, dir_fd=where, follow_symlinks=False).st_mode):
                        os.unlink(name, dir_fd=where)
                except OSError:
                    pass
    finally:
        os.close(where)
