"""A capture's data decompressed as it is read forward, within bounds.

Compression (gzip, bzip2, xz, zstd) is recognised by content, not by name (compression.py's
table).  Every decompressor is bounded: xz's memory, zstd's window, the whole capture
(MAX_CAPTURE_BYTES) and each read (a member's size, else MAX_HEADER_BYTES); damaged or hostile
data is a CaptureError naming the capture, never a traceback.  A recording's frame
(recorded_frame.StoredFrame) is zstd inflated with its anchor as the dictionary, up to MAX_FRAME_BYTES.
"""

import bz2
import gzip
import io
import lzma
import zlib

from ..compression import compression_of
from ..errors import CaptureError
from .base import size_text
from .capture_file import MAX_CAPTURE_BYTES, CaptureFile
from .recorded_frame import MAX_FRAME_BYTES, StoredFrame
from .zstd_frames import MAX_ZSTD_WINDOW, zstd_frames_end

__all__ = ["DecompressedStream", "READERS", "zstd_frames_end", "MAX_ZSTD_WINDOW", "MAX_HEADER_BYTES"]

#: The memory an xz stream may ask for (xz -9 needs 65 MiB); a 4 GiB dictionary is refused.
MAX_XZ_MEMORY = 256 << 20

#: The most tarfile may read at once outside members' data: a pax or GNU extension
#: header (a long name, extended attributes) is some KiB.
MAX_HEADER_BYTES = 16 << 20

#: Decompressed data asked of the decompressor at a time, and at most read ahead of the members:
#: smaller costs CPU, larger memory (docs/benchmarks.md, "Captures parsed by two walkers").
READ_AHEAD = 1 << 20


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


#: the file object decompressing a stream, of each compression a capture may have (compression.py)
READERS = {
    "gzip": lambda stream: gzip.GzipFile(fileobj=stream),
    "bzip2": bz2.BZ2File,
    "xz": lambda stream: io.BufferedReader(_XzReader(stream), 1 << 16),
    "zstd": _zstd_reader,
}


def _decompression_errors(kind):
    """What a decompressor of ``kind`` raises for damaged or hostile data."""
    errors = (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError, MemoryError)
    return errors + (_zstd().ZstdError,) if kind == "zstd" else errors


class DecompressedStream:
    """The decompressed archive read forward, counting, refusing what is too large.

    tarfile (for the archives the fast index leaves to it) seeks and asks for
    extension headers whole: it may seek forward (the data is read and dropped) or back
    into the last read (a header it read and refused), and no read may ask for more
    than a member may hold.
    """

    def __init__(self, data, name):
        self.name = name
        self.kind = None
        self._frame = data if isinstance(data, StoredFrame) else None  # (its errors name its file)
        self._raw = io.BufferedReader(_ReadFrom(data if self._frame is None else data.data), 1 << 17)
        found = compression_of(data) if self._frame is None else None
        if self._frame is not None:
            self.kind, self._raw = "zstd", self._frame.reader(self._raw, MAX_ZSTD_WINDOW)
        elif found is not None:
            self.kind, reader = found.name, READERS[found.name]
            if self.kind == "zstd" and zstd_frames_end(data) is None:
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
            if self._frame is not None:
                raise CaptureError(f"{self._frame.name}: damaged ({e or type(e).__name__})") from None
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
        self._advance(len(data))
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
        """Drop ``size`` bytes; False if the data ends first.  All but the last MiB are dropped as
        they inflate, never copied (a member no reader asks for may be hundreds of MiB)."""
        while size > 1 << 20 and not self._pending:
            step = self._drop(size - (1 << 20))
            if not step:
                return False
            size -= step
        while size > 0:
            step = len(self.read(min(size, 1 << 20)))
            if not step:
                return False
            size -= step
        return True

    def _drop(self, size):
        """Drop up to ``size`` bytes (what was read ahead, else one inflated piece); how many."""
        ahead, at = self._ahead, self._ahead_at
        if at < len(ahead):
            step = min(size, len(ahead) - at)
            self._ahead_at = at + step
        else:
            self._ahead, self._ahead_at = b"", 0
            step = len(self._inflate(min(size, READ_AHEAD)))
        self._advance(step)
        return step

    def _advance(self, step):
        self.pos += step
        if self._frame is not None and self.pos > MAX_FRAME_BYTES:
            raise CaptureError(f"{self._frame.name}: inflates past {MAX_FRAME_BYTES >> 20} MiB: not a frame")
        if self.pos > MAX_CAPTURE_BYTES:
            raise CaptureError(f"{self.name}: capture decompresses to more than "
                               f"{MAX_CAPTURE_BYTES >> 30} GiB: not a capture")

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

