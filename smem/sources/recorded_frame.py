"""A recording's frame as it is stored, and its anchor inflated within a bound.

A frame is never inflated whole: the archive readers (decompressed.py) inflate it as they read
its members, as they do a compressed capture, so a frame costs the memory of its compressed
bytes and its anchor, not of what it inflates to (a 35 KB frame or anchor inflating to a GiB
took a GiB before it was refused).  The anchor is the dictionary, which zstd needs whole in
memory: it is inflated only as far as its compressed size can honestly make it
(:func:`anchor_limit`).
"""

from dataclasses import dataclass

from ..errors import CaptureError
from .zstd_frames import MAX_ZSTD_WINDOW, zstd_frames_end

__all__ = ["StoredFrame", "MAX_FRAME_BYTES", "anchor_limit", "inflate_anchor", "zstandard"]

#: A frame (or anchor) inflating past this is refused: a 10,000-process frame with every smaps
#: is some hundreds of MiB.
MAX_FRAME_BYTES = 1 << 30

#: An anchor inflates to at most ANCHOR_RATIO times its compressed size, plus ANCHOR_SLACK.  An
#: anchor is a frame without smaps; the most compressible honest one is thousands of copies of one
#: process differing only in their pids, and this ratio is several times what those reach, and
#: far above a real machine's (measured in docs/benchmarks.md, "Reading a recording: memory");
#: zstd itself reaches tens of times more on zeros.  Only an anchor file of under a MiB meets it
#: before MAX_FRAME_BYTES; its inflating costs at most about twice the bound (the output and
#: zstd's window), then the dictionary is all that is kept.  The slack lets a small recording
#: never meet the ratio.
ANCHOR_RATIO = 2048
ANCHOR_SLACK = 16 << 20


def zstandard():
    """zstandard, or the one line saying which extra brings it."""
    from ..extras import require
    return require("zstandard", "a recording (smem record, -S RECORDING)")


@dataclass(frozen=True)
class StoredFrame:
    """A frame's zstd data as its file holds it, the dictionary that inflates it (its anchor, a
    zstandard.ZstdCompressionDict), the name its errors give (``REC: frames/000007.zst``) and the
    processes the index says it holds (None where it does not say)."""

    data: bytes
    dictionary: object
    name: str
    processes: int = None

    def reader(self, stream, max_window):
        """A file object inflating ``stream`` (this frame's data read from its start)."""
        decompressor = zstandard().ZstdDecompressor(dict_data=self.dictionary, max_window_size=max_window)
        return decompressor.stream_reader(stream, read_across_frames=True)


def anchor_limit(compressed):
    """The most an anchor of ``compressed`` bytes may inflate to."""
    return min(MAX_FRAME_BYTES, ANCHOR_RATIO * compressed + ANCHOR_SLACK)


def inflate_anchor(data, name):
    """The dictionary (a zstandard.ZstdCompressionDict) of the anchor whose file holds ``data``; a
    CaptureError naming ``name`` for damage, a cut, or more than anchor_limit(len(data))."""
    z = zstandard()
    if zstd_frames_end(data) != len(data):
        raise CaptureError(f"{name}: damaged or cut short: not a zstd frame")
    limit = anchor_limit(len(data))
    out = bytearray()
    try:
        reader = z.ZstdDecompressor(max_window_size=MAX_ZSTD_WINDOW).stream_reader(
            memoryview(data), read_across_frames=True)
        while True:
            chunk = reader.read(min(1 << 20, limit + 1 - len(out)))
            if not chunk:
                break
            out += chunk
            if len(out) > limit:
                raise CaptureError(_too_large(name, len(data), limit))
    except z.ZstdError as e:
        raise CaptureError(f"{name}: damaged ({e})") from None
    if not out:
        raise CaptureError(f"{name}: empty: not a frame")
    return z.ZstdCompressionDict(out, dict_type=z.DICT_TYPE_RAWCONTENT)


def _too_large(name, compressed, limit):
    if limit == MAX_FRAME_BYTES:
        return f"{name}: inflates past {MAX_FRAME_BYTES >> 20} MiB: not a frame"
    return (f"{name}: inflates past {limit >> 20} MiB, {ANCHOR_RATIO} times its {compressed:,} bytes and "
            f"{ANCHOR_SLACK >> 20} MiB more: not an anchor smem record wrote")
