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
import tarfile

from ..compression import compression_of
from ..errors import CaptureError
from ..sources.decompressed import READERS
from ..sources.recorded import MAX_FRAME_BYTES
from ..sources.base import is_pid_name

__all__ = ["repack", "compress", "zstd", "LEVEL"]

#: zstd's level for frames and anchors (19 saves a tenth more for three times the CPU)
LEVEL = 12


def zstd():
    """zstandard, or the one line saying which extra brings it."""
    from ..extras import require
    return require("zstandard", "a recording (smem record, -S RECORDING)")


def _members(capture):
    """(TarInfo, bytes or None) of each directory and regular file of a capture (a file object
    at its start, gzip, bzip2, xz, zstd or plain), read once: a received capture was read whole
    by smem.sources.archive first, with its limits, so its form is known good; one that inflates
    past what a frame may hold (MAX_FRAME_BYTES, less than a capture may) is refused here, before
    it is held (a push of a few MiB of zeros inflates to gigabytes)."""
    head = capture.read(8)
    capture.seek(0)
    try:
        # the readers that read it first (sources.decompressed): tarfile's own stream mode stops
        # at the end of a gzip, bzip2 or xz stream's first part (pigz and pbzip2 write several)
        found = compression_of(head)
        reader = READERS[found.name](capture) if found is not None else capture
        tar = tarfile.open(fileobj=reader, mode="r|")
        held = 1024  # (the tar's end)
        with tar:
            for member in tar:
                held += 512 + -(-member.size // 512) * 512 if member.isreg() else 512
                if held > MAX_FRAME_BYTES:  # (a reader refuses it: it is not held, nor written)
                    raise CaptureError(f"the capture inflates past {MAX_FRAME_BYTES >> 20} MiB, the most a frame "
                                       f"holds (member {member.name[:80]!r})")
                if member.isdir():
                    yield member, None
                elif member.isreg():
                    yield member, tar.extractfile(member).read()
    except (tarfile.TarError, EOFError, OSError) as e:
        raise CaptureError(f"cannot re-read the capture as a frame ({e})") from None


def repack(capture, with_smaps):
    """(frame tar, anchor tar or None, processes) of a capture.

    ``with_smaps``: a key frame, holding every member, and its anchor (the same without the
    smaps that a smaps_rollup stands in for); else the frame without those smaps and no anchor.
    Member times are 0; names are kept as the capture had them (the reader vets them).
    """
    members = list(_members(capture))
    rolled = {m.name.strip("./").partition("/")[0] for m, data in members
              if data and m.name.rstrip("/").endswith("/smaps_rollup")}
    processes = sum(1 for m, _ in members if m.isdir() and is_pid_name(m.name.strip("./")))
    full = _tar(members) if with_smaps else None
    rolled_up = _tar((m, data) for m, data in members if not _stood_in_for(m.name, rolled))
    return (full, rolled_up, processes) if with_smaps else (rolled_up, None, processes)


def _stood_in_for(name, rolled):
    pid, _, leaf = name.strip("./").partition("/")
    return leaf == "smaps" and pid in rolled


def _tar(members):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for member, data in members:
            member = copy.copy(member)
            member.mtime = 0
            if data is None:
                tar.addfile(member)
            else:
                member.size = len(data)
                tar.addfile(member, io.BytesIO(data))
    return out.getvalue()


def compress(data, anchor=None):
    """``data`` as one zstd frame, with the anchor's bytes as its dictionary where given."""
    zstandard = zstd()
    dictionary = (zstandard.ZstdCompressionDict(anchor, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
                  if anchor is not None else None)
    return zstandard.ZstdCompressor(level=LEVEL, dict_data=dictionary).compress(data)
