"""A recording's frames: captures made small enough to keep one every few seconds for days.

A frame is a capture tar (docs/capture-format.md), so every view reads it as it reads a
capture.  Three things make it small (the figures are in docs/benchmarks.md):

* most frames keep a process's ``smaps_rollup`` and not its ``smaps`` (the kernel's sums of the
  same mappings: every view but ``-m`` and ``-M`` reads only those); a frame every
  ``smaps_every``, the first, the first after a resume, and the last (of a ``--count`` or
  ``--duration``, or after a stopping signal) keep every smaps (a *key frame*);
* every member's time is 0, so a member that did not change is the same bytes in every frame;
* each frame is zstd-compressed with a dictionary: the *anchor*, an earlier frame without the
  smaps (its key frame, or a later frame once the frames have drifted far from it: processes
  started since cost their whole size against an old anchor).  A process whose counters barely
  moved costs a few bytes; a frame depends on its anchor only, never on the frames before it, so
  one damaged frame costs only itself.
"""

import copy
import io
import os
import tarfile
import tempfile

from ..compression import compression_of
from ..errors import CaptureError
from ..sources.base import is_pid_name
from ..sources.capture_members import is_read_member, member_path
from ..sources.decompressed import READERS
from ..sources.recorded import MAX_FRAME_BYTES

__all__ = ["repack", "compress", "zstd", "LEVEL"]

#: zstd's level for frames and anchors (19 saves a tenth more for three times the CPU)
LEVEL = 12
#: what is copied at a time between the temporary tars
_CHUNK = 1 << 20
#: a frame's tars are held in memory up to this size each, then spooled to TMPDIR
SPOOL_BYTES = 32 << 20


def zstd():
    """zstandard, or the one line saying which extra brings it."""
    from ..extras import require
    return require("zstandard", "a recording (smem record, -S RECORDING)")


def _kept(member):
    """Whether a frame keeps ``member``: a process's directory (its owner), or a regular file a
    reader asks for (sources/capture_members.py: anything else the reader would drop)."""
    path = member_path(member.name)
    if path is None:
        return False
    if member.isdir():
        return is_pid_name(path)
    return member.isreg() and is_read_member(path)


def _copy_members(capture, out, cut):
    """Write each member a frame keeps of ``capture`` (a file object at its start, gzip, bzip2,
    xz, zstd or plain) to the tar file ``out``, times 0, member by member; its (processes, pids
    whose smaps_rollup has data, [(start, end, name)] of the smaps in ``out``, where its members
    end).  With ``cut`` (a frame without the smaps a smaps_rollup stands in for), a process's smaps
    is held until the next member: its smaps_rollup (as capture_writer.py writes them) drops it.

    A received capture was read whole by smem.sources.archive first, with its limits, so its
    form is known good; one whose kept members pass what a frame may hold (MAX_FRAME_BYTES, less
    than a capture may) is refused as they are read (a push of a few MiB of zeros inflates to
    gigabytes)."""
    head = capture.read(8)
    capture.seek(0)
    processes, rolled, smaps = 0, set(), []
    held = None  # (cut) a smaps and its TarInfo, until the member after it

    def write(frame, member, data, name):
        start = frame.offset
        member = copy.copy(member)
        member.mtime = 0
        frame.addfile(member, data)
        if name.partition("/")[2] == "smaps":
            smaps.append((start, frame.offset, name))
    try:
        # the readers that read it first (sources.decompressed): tarfile's own stream mode stops
        # at the end of a gzip, bzip2 or xz stream's first part (pigz and pbzip2 write several)
        found = compression_of(head)
        reader = READERS[found.name](capture) if found is not None else capture
        inflated = 1024  # (the tar's end)
        with tarfile.open(fileobj=reader, mode="r|") as tar, \
                tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as frame:
            for member in tar:
                if not _kept(member):
                    continue
                inflated += 512 + -(-member.size // 512) * 512 if member.isreg() else 512
                if inflated > MAX_FRAME_BYTES:  # (a reader refuses it: it is not written)
                    raise CaptureError(f"the capture inflates past {MAX_FRAME_BYTES >> 20} MiB, the most a frame "
                                       f"holds (member {member.name[:80]!r})")
                name = member.name.strip("./")
                pid, _, leaf = name.partition("/")
                if leaf == "smaps_rollup" and member.size:
                    rolled.add(pid)
                if held is not None:
                    if not (leaf == "smaps_rollup" and member.size and held[2] == f"{pid}/smaps"):
                        write(frame, held[0], io.BytesIO(held[1]), held[2])
                    held = None
                if member.isdir():
                    processes += is_pid_name(name)
                    write(frame, member, None, name)
                elif cut and leaf == "smaps":
                    held = (member, tar.extractfile(member).read(), name)
                else:
                    write(frame, member, tar.extractfile(member), name)
            if held is not None:
                write(frame, held[0], io.BytesIO(held[1]), held[2])
            end = frame.offset
    except (tarfile.TarError, EOFError, OSError) as e:
        raise CaptureError(f"cannot re-read the capture as a frame ({e})") from None
    return processes, rolled, smaps, end


def repack(capture, with_smaps):
    """(frame tar, anchor tar or None, processes) of a capture: the tars as temporary files at their
    start, in memory up to SPOOL_BYTES, on disk past it (the caller closes them).

    ``with_smaps``: a key frame, holding every member, and its anchor (the same without the
    smaps that a smaps_rollup stands in for); else the frame without those smaps and no anchor.
    Member times are 0; names are kept as the capture had them.  The anchor is the full tar
    copied but for those smaps: its members are the same bytes.
    """
    full = rolled_up = None
    try:
        full = tempfile.SpooledTemporaryFile(SPOOL_BYTES)
        processes, rolled, smaps, end = _copy_members(capture, full, cut=not with_smaps)
        full.seek(0)
        left_out = [(a, b) for a, b, name in smaps if _stood_in_for(name, rolled)]
        if not with_smaps and not left_out:  # (every stood-in smaps was dropped as it came)
            return full, None, processes
        rolled_up = tempfile.SpooledTemporaryFile(SPOOL_BYTES)
        _copy_without(full, rolled_up, end, left_out)
        full.seek(0)
    except BaseException as e:
        for spool in (full, rolled_up):
            _discard(spool)
        if isinstance(e, OSError):  # (TMPDIR full, or the file size limit)
            raise CaptureError(f"cannot spool the capture as a frame ({e.strerror or e})") from None
        raise
    if with_smaps:
        return full, rolled_up, processes
    full.close()
    return rolled_up, None, processes


def _discard(spool):
    """Close a temporary file whose data is not wanted (a write it still buffers may fail)."""
    if spool is not None:
        try:
            spool.close()
        except OSError:
            pass


def _stood_in_for(name, rolled):
    pid, _, leaf = name.partition("/")
    return leaf == "smaps" and pid in rolled


def _copy_without(source, out, end, left_out):
    """Copy ``source``'s bytes up to ``end`` to ``out`` but the ranges ``left_out``, then a tar's end
    (two zero blocks, padded to a record of 20, as tarfile writes)."""
    at = 0
    for start, stop in left_out + [(end, end)]:
        source.seek(at)
        while at < start:
            chunk = source.read(min(_CHUNK, start - at))
            if not chunk:
                raise CaptureError("a frame's temporary file was cut short")
            out.write(chunk)
            at += len(chunk)
        at = stop
    written = out.tell() + 1024
    out.write(bytes(1024 + -written % (20 * 512)))
    out.seek(0)


def compress(tar, out, anchor=None):
    """Write the tar file ``tar`` to the file ``out`` as one zstd frame, with the anchor's bytes as
    its dictionary where given; the bytes written.  A tar past SPOOL_BYTES is compressed as read."""
    zstandard = zstd()
    dictionary = (zstandard.ZstdCompressionDict(anchor, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
                  if anchor is not None else None)
    compressor = zstandard.ZstdCompressor(level=LEVEL, dict_data=dictionary)
    size = tar.seek(0, os.SEEK_END)
    tar.seek(0)
    if size <= SPOOL_BYTES:  # (held already: compressed at once, faster than zstd's stream)
        return out.write(compressor.compress(tar.read()))
    return compressor.copy_stream(tar, out, size=size)[1]
