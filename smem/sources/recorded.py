"""A recording (``smem record``) read back: its index, a frame chosen by ``--at``, as a capture.

A recording is a directory: ``index.jsonl`` (a header line, then one line per frame), the
frames under ``frames/`` and their anchors under ``anchors/`` (docs/capture-format.md; how
they are made: smem.recording).  A frame is a capture tar compressed with its anchor as the
dictionary, so it is read as any compressed capture, inflated as its members are read
(smem.sources.archive, with its limits; recorded_frame.py: the anchor's bound).  A recording
is data like a capture: its index is parsed strictly, names of files are made from frame
numbers, never taken from it, and only regular files are opened.

A line of the index is written once its frame is whole, so every frame the index lists is
complete; a last line cut short (smem killed while appending it) is not a frame.
"""

import datetime
import io
import json
import os
import re
import stat
from typing import NamedTuple

from ..errors import CaptureError, SourceError, UsageError
from .recorded_frame import MAX_FRAME_BYTES, StoredFrame, inflate_anchor

__all__ = ["INDEX", "FORMAT", "FrameEntry", "Recording", "is_recording", "frame_path", "anchor_path",
           "parse_duration", "open_recording", "RecordingFrame", "MAX_FRAME_BYTES", "span", "usual_spacing"]

#: the index's name: a directory holding it is a recording
INDEX = "index.jsonl"
#: the header line's format name and version
FORMAT = "smem-recording"
VERSION = 1
#: An index larger than this is not one (a year of frames every second is 2 GiB; a day at 10 s, 1 MiB).
MAX_INDEX_BYTES = 256 << 20


class RecordingFrame(NamedTuple):
    """The frame of a recording a source was asked for, and the one it read (its key frame, where
    the frame asked for kept no smaps and the report reads mappings)."""

    path: str                          # (real path: the same recording however it is named)
    asked: int
    read: int
    name: str = ""                     # as it was given


def frame_path(number):
    return f"frames/{number:06d}.zst"


def anchor_path(number):
    return f"anchors/{number:06d}.zst"


def is_recording(path):
    """Whether ``path`` is a directory holding a recording's index."""
    return os.path.isfile(os.path.join(path, INDEX))


class FrameEntry:
    """One frame of the index: its number, its time (seconds since the epoch, when it was taken
    or received), whether it holds every smaps, the key frame whose anchor it needs."""

    __slots__ = ("number", "time", "smaps", "anchor", "processes")

    def __init__(self, number, time, smaps, anchor, processes):
        self.number, self.time, self.smaps, self.anchor, self.processes = number, time, smaps, anchor, processes

    @property
    def timestamp(self):
        return datetime.datetime.fromtimestamp(self.time, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    @property
    def local_and_utc(self):
        """Its time as --at reads a time (this machine's local time, with its offset), and in UTC
        where that differs: what an error about --at shows."""
        local = datetime.datetime.fromtimestamp(self.time).astimezone()
        if local.utcoffset() == datetime.timedelta(0):
            return self.timestamp
        return f"{local.isoformat(timespec='seconds')}, {self.timestamp}"


def _entry(line, where):
    """A FrameEntry of one index line, or a CaptureError saying what is wrong."""
    try:
        item = json.loads(line)
        number, when, smaps, anchor = item["frame"], item["time"], item["smaps"], item["anchor"]
        processes = item.get("processes")
    except (ValueError, KeyError, TypeError, RecursionError):  # (RecursionError: "[[[[..." past json's depth)
        raise CaptureError(f"{where}: not a frame line") from None
    if not (type(number) is int and 0 < number < 10 ** 9 and type(anchor) is int and 0 < anchor <= number
            and isinstance(when, (int, float)) and 0 <= when < 1e11 and isinstance(smaps, bool)
            and (processes is None or type(processes) is int)):
        raise CaptureError(f"{where}: not a frame line")
    return FrameEntry(number, float(when), smaps, anchor, processes)


#: (identity of the index file last parsed, what it parsed to): Recording._index
_LAST_INDEX = [None, None]


#: The last anchor inflated, of any recording: [its file's bytes, its dictionary].  A recording played
#: back (--all-frames, smem html's every frame, read twice) is opened again at every frame, and its
#: frames in order share an anchor: inflated once, not once a frame.  One kept, as one was kept
#: while a recording was open: the last is dropped before the next is inflated.
_LAST_ANCHOR = [None, None]


def _inflated_anchor(data, name):
    """inflate_anchor(data, name), the last one's dictionary again where its file's bytes are
    ``data`` (compared whole: a file replaced under the same name is inflated anew)."""
    kept_data, kept = _LAST_ANCHOR  # (one read of the pair: serve's page and metrics threads play back at once)
    if kept_data is not None and kept_data == data:
        return kept
    _LAST_ANCHOR[:] = [None, None]
    dictionary = inflate_anchor(data, name)
    _LAST_ANCHOR[:] = [data, dictionary]
    return dictionary


class Recording:
    """A recording's index, read once; :meth:`frame` reads a frame and its anchor."""

    def __init__(self, path):
        self.path = path
        try:
            self._dir = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as e:
            raise SourceError(f"cannot read {path}: {e.strerror}") from None
        try:
            self.header, self.frames = self._index()
        except BaseException:
            os.close(self._dir)
            raise

    def close(self):
        if self._dir is not None:
            os.close(self._dir)
            self._dir = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read(self, name, limit):
        """A regular file of the recording, at most ``limit`` bytes, reached through no link (frames/ too)."""
        sub, _, leaf = name.rpartition("/")
        where = None
        try:
            if sub:
                where = os.open(sub, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self._dir)
            fd = os.open(leaf, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=self._dir if where is None else where)
        except OSError as e:
            link = next((p for p in (sub, name) if p and os.path.islink(os.path.join(self.path, p))), None)
            why = f"{link} is a symbolic link (not followed)" if link else e.strerror
            raise CaptureError(f"{self.path}: cannot read {name}: {why}") from None
        finally:
            if where is not None:
                os.close(where)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise CaptureError(f"{self.path}: {name} is not a regular file")
            if info.st_size > limit:
                raise CaptureError(f"{self.path}: {name} is larger than {limit >> 20} MiB")
            with os.fdopen(fd, "rb", closefd=False) as f:
                return f.read(limit + 1)
        finally:
            os.close(fd)

    def _index(self):
        """(header, frames) of the index, parsed once while its file is the same (device, inode,
        size, time): a recording played back opens it at every frame, and parsing each line
        every time made --all-frames take time as the square of the frames."""
        try:
            info = os.stat(INDEX, dir_fd=self._dir, follow_symlinks=False)
            key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns) if stat.S_ISREG(info.st_mode) else None
        except OSError:
            key = None  # (_read says what is wrong)
        kept_key, kept = _LAST_INDEX  # (one read of the pair, as _inflated_anchor)
        if key is not None and kept_key == key:
            return kept
        parsed = self._parse(self._read(INDEX, MAX_INDEX_BYTES))
        if key is not None:
            _LAST_INDEX[:] = [key, parsed]
        return parsed

    def _parse(self, text):
        # (line by line: a list of every line of 256 MiB of short ones took gigabytes)
        lines = (line[:-1] if line.endswith(b"\n") else b"" for line in io.BytesIO(text))  # (b"": a line cut short)
        try:
            header = json.loads(next(lines, b""))
        except (ValueError, RecursionError):
            header = None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise CaptureError(f"{self.path}: not a smem recording (its {INDEX} has no header)")
        if header.get("version") != VERSION:
            raise CaptureError(f"{self.path}: a recording of format version {header.get('version')!r}: "
                               f"this smem reads version {VERSION}")
        frames, seen = [], set()
        for number, line in enumerate(lines, 2):
            if not line:
                continue
            entry = _entry(line, f"{self.path}: {INDEX} line {number}")
            if entry.number in seen or (frames and entry.number < frames[-1].number):
                raise CaptureError(f"{self.path}: {INDEX} line {number}: frame {entry.number} out of order")
            seen.add(entry.number)
            frames.append(entry)
        return header, frames

    def frame(self, entry):
        """Frame ``entry`` as stored (a StoredFrame: inflated as it is read), with its anchor inflated."""
        from .zstd_frames import zstd_frames_end
        name = anchor_path(entry.anchor)
        dictionary = _inflated_anchor(self._read(name, MAX_FRAME_BYTES), f"{self.path}: {name}")
        name = frame_path(entry.number)
        data = self._read(name, MAX_FRAME_BYTES)
        if zstd_frames_end(data) != len(data):
            raise CaptureError(f"{self.path}: {name}: damaged or cut short: not a zstd frame")
        return StoredFrame(data, dictionary, f"{self.path}: {name}", entry.processes)

    def choose(self, at=None, option="--at"):
        """The frame ``--at`` names (a frame number, ``first``, ``last``, a date and time, ``HH:MM``,
        ``+DURATION`` after the first frame or ``-DURATION`` before the last): the last frame taken at
        or before that time; the last frame without ``at``.  ``option``: the option that gave ``at``
        (smem diff's --from and --to take the same words), which an error names.  Returns (the
        frame, what to say of it: a warning, or None), the warning given, not kept on the recording."""
        if not self.frames:
            raise CaptureError(f"{self.path}: the recording has no frame yet")
        if at is None or at == "last":
            return self.frames[-1], None
        if at == "first":
            return self.frames[0], None
        text = at.strip()
        if text.isascii() and text.isdigit():
            number = text.lstrip("0") or "0"  # (compared as text: int() refuses 4,300 digits)
            for entry in self.frames:
                if str(entry.number) == number:
                    return entry, None
            said, frame = (s if len(s) <= 40 else s[:40] + "..." for s in (at, number))
            raise UsageError(f"{option} {said}: the recording has no frame {frame} (frames {self.frames[0].number} to "
                             f"{self.frames[-1].number})")
        when, within = self._time_of(text, at, option)
        chosen = [e for e in self.frames if (e.time < when + within if within else e.time <= when)]
        if not chosen:
            raise UsageError(f"{option} {at}: before the recording's first frame ({self.frames[0].local_and_utc})")
        return chosen[-1], self._far_before(chosen[-1], when, at, option)

    def _far_before(self, entry, when, at, option):
        """The warning for a frame ``entry`` chosen for the time ``when`` that is much older (after the
        recording's end, or in a gap while it was stopped): more than a minute and two of its usual
        spacings.  None where it is near."""
        usual = usual_spacing(self.frames)
        older = when - entry.time
        if older <= max(60.0, 2 * usual):
            return None
        where = "the recording's last frame" if entry is self.frames[-1] else "the frame before it"
        return (f"{option} {at}: {where}, frame {entry.number} ({entry.local_and_utc}), is {span(older)} older: "
                "it is shown" + ("" if entry is self.frames[-1] else " (the recording has none in between)"))

    def _time_of(self, text, at, option):
        """(seconds since the epoch, the span it names): a time to the minute names that minute, so
        16:05 takes a frame of 16:05:40."""
        if text[:1] in "+-" and len(text) > 1:
            seconds = parse_duration(text[1:], option, shown=at)
            return (self.frames[0].time + seconds if text[0] == "+" else self.frames[-1].time - seconds), 0.0
        clock = re.search(r"\d{1,2}:\d{2}(:\d{2}(\.\d*)?)?", text)
        within = 0.0 if clock is None or clock[2] else 1.0 if clock[1] else 60.0
        clock_only = re.fullmatch(r"\d{1,2}:\d{2}(:\d{2})?", text)
        if clock_only:
            day = datetime.datetime.fromtimestamp(self.frames[-1].time).date().isoformat()
            text = f"{day}T{text}"
        try:
            moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(f"{option} takes a frame number, first, last, a time (2026-12-04T16:05:00, 16:05, "
                             f"+10m after the first frame, -10m before the last), not {at[:40]!r}") from None
        if clock_only and moment.timestamp() > self.frames[-1].time:  # 23:00 in a night that ended at 06:00:
            before = moment - datetime.timedelta(days=1)              # the day before, if the recording has it
            if before.timestamp() + within > self.frames[0].time:
                moment = before
        try:
            return moment.timestamp(), within
        except (ValueError, OverflowError, OSError):  # (year 1 in local time: before any frame; 9999's end: after)
            return (-1e18 if moment.year < 1970 else 253402300799.0), within


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def usual_spacing(entries):
    """The time between two of ``entries`` (FrameEntry) as the recorder took them: the median
    spacing (the lower of two), which a gap while the recorder was stopped does not move; 0.0 for
    one frame."""
    times = sorted(b.time - a.time for a, b in zip(entries, entries[1:]))
    return times[(len(times) - 1) // 2] if times else 0.0


def span(seconds):
    """``3d 4h``, ``2h 5m``, ``7m 30s``, ``45s``: the two largest units of a duration."""
    parts, left = [], int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size or (unit == "s" and not parts):
            parts.append(f"{left // size}{unit}")
            left %= size
    return " ".join(parts[:2])


def parse_duration(text, option, shown=None):
    """``90``, ``90s``, ``10m``, ``2h``, ``1d`` (or ``1.5h``) as seconds above 0; an error quotes
    ``shown`` (what was typed: ``+0`` for --at's ``0``), else ``text``."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd]?)", text.strip())
    seconds = float(match[1]) * _UNITS[match[2] or "s"] if match else 0
    if not 0 < seconds < 1e9:
        typed = text if shown is None else shown
        raise UsageError(f"{option} takes a duration above 0: seconds, or 90s, 10m, 2h, 1d (not {typed[:40]!r})")
    return seconds


def rollups_carry_split(frame):
    """Whether the first smaps_rollup in ``frame`` (a StoredFrame) has the PSS split (Pss_Anon,
    Linux 5.9+): every process of a frame is read from one kernel.  False where the tar holds
    none, or anything the fast index leaves to tarfile.  Read as far as that smaps_rollup."""
    from .decompressed import DecompressedStream
    from .tar_index import BLOCK, NeedTarfile, data_length, read_header
    stream = DecompressedStream(frame, frame.name)
    try:
        while True:
            header = stream.read(BLOCK)
            member = read_header(header) if len(header) == BLOCK else None
            if member is None:
                return False
            if member.isreg() and member.size and member.name.endswith("/smaps_rollup"):
                return b"\nPss_Anon:" in stream.read(min(member.size, 1 << 16))  # (the split is near its start)
            if not stream.skip(data_length(member)):
                return False
    except NeedTarfile:
        return False


#: how a recording's source description names its frame: " frame 7, 2026-12-04T03:00:10Z", or the key
#: frame read for another (" frame 1 (the key frame for frame 7), ...")
_FRAME_NAMED = re.compile(r" frame \d+(?: \(the key frame for frame \d+\))?, \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def without_frame(text):
    """``text`` (a warning) without the recording frame it names: what makes one frame's warning
    the same warning as the next frame's, said once over many frames."""
    return _FRAME_NAMED.sub("", text)


def open_recording(path, at=None, per_mapping=True, streamed=False, every_mapping=None, option="--at"):
    """The frame of the recording at ``path`` that ``at`` names, as a capture source.  A report
    that reads mappings (-m, -M: ``every_mapping``, by default ``per_mapping``) reads the last
    frame at or before it that kept every smaps; one that wants of them only the PSS split
    (``per_mapping`` alone) reads the frame itself where its smaps_rollups carry the split."""
    from .archive import ArchiveSource
    from .archive_stream import ArchiveStream
    every_mapping = per_mapping if every_mapping is None else every_mapping
    with Recording(path) as recording:
        entry, note = recording.choose(at, option)
        asked = entry.number
        notes = [note] if note else []
        name = f"recording {path} frame {entry.number}"
        data = None
        if per_mapping and not entry.smaps:
            data = None if every_mapping else recording.frame(entry)
            if data is None or not rollups_carry_split(data):
                entry = [e for e in recording.frames if e.smaps and e.number <= entry.number][-1:] or [entry]
                entry = entry[0]  # (every figure, the time too, is the key frame's: it names itself)
                name = f"recording {path} frame {entry.number} (the key frame for frame {asked})"
                if entry.number != asked:  # (said in the text too, not only in -F json's description)
                    notes.append(_key_frame_note(entry, every_mapping))
                data = None
        if data is None:
            data = recording.frame(entry)
    # (which frame was read for which was asked: smem diff refuses two frames that read one key frame)
    frame = RecordingFrame(os.path.realpath(path), asked, entry.number, str(path))
    return (ArchiveStream if streamed else ArchiveSource)(
        data, name, per_mapping, description=f"{name}, {entry.timestamp}", notes=notes, recording_frame=frame)


def _key_frame_note(key, every_mapping):
    """What a report read from the key frame ``key`` instead of the frame asked for says; the
    same for every frame after that key frame (a playback says it once)."""
    why = ("a frame without smaps has no mappings: a report that reads them (-m, -M, --shm, the maps or vss columns)"
           if every_mapping else
           "a frame without smaps whose smaps_rollup has no PSS split (before Linux 5.9): a report that needs the split")
    return f"{why} shows the key frame before it, frame {key.number} ({key.timestamp}), every figure of that frame"
