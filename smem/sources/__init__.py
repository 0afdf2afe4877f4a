"""Where the /proc data comes from: the live system, a capture, a remote host.

:func:`open_source` turns the ``-S`` argument into a :class:`Source`.
"""

import os
import sys

from ..errors import SourceError
from .base import Source
from .live import LiveSource

__all__ = ["Source", "LiveSource", "open_source"]


def open_source(spec=None, stdin=None):
    """``None`` for the live system, ``-`` for a capture on stdin, ``ssh://...`` for
    a remote host, else a capture file or directory."""
    if spec is None or spec == "":
        return LiveSource()
    from .capture import ArchiveSource, DirectorySource  # tarfile and friends: only for captures
    if spec == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        data = stream.read()
        if not data:
            raise SourceError("no capture on standard input")
        return ArchiveSource(data, "<stdin>")
    if spec.startswith("ssh://"):
        from .remote import RemoteSource
        return RemoteSource(spec)
    if os.path.isdir(spec):
        return DirectorySource(spec)
    try:
        with open(spec, "rb") as f:
            data = f.read()
    except OSError as e:
        raise SourceError(f"cannot read {spec}: {e.strerror}") from None
    return ArchiveSource(data, os.path.basename(spec))
