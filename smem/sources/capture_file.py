"""A capture's bytes: a regular file read in place as they are needed, or a pipe read whole
(standard input, a remote host), refusing early what cannot be a capture."""

import os

from ..errors import CaptureError

__all__ = ["CaptureFile", "read_capture", "MAX_CAPTURE_BYTES"]

#: A capture decompressing to more than this is refused: a 10,000-process server's
#: capture is about 2 GiB; more is a bomb, and reading it would only cost time.
MAX_CAPTURE_BYTES = 4 << 30


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

