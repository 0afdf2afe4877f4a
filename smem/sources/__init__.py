"""Where the /proc data comes from: the live system, a capture, a remote host.

:func:`open_source` turns the ``-S`` argument into a :class:`Source`.
"""

import os
import stat
import sys

from ..errors import SourceError, UsageError
from .base import Source
from .live import LiveSource

__all__ = ["Source", "LiveSource", "open_source"]


def open_source(spec=None, stdin=None, per_mapping=True, streamed=False, timeout=None, at=None, every_mapping=None,
                at_option="--at", said=None):
    """``None`` for the live system, ``-`` for a capture on stdin, ``ssh://...`` for
    a remote host, ``tcp://HOST:PORT`` for a capture pushed there (waiting at most ``timeout``
    seconds for a connected sender), a recording's directory (its frame ``at``, by default the
    last: smem.sources.recorded), else a capture file or directory.

    ``per_mapping=False``: the report needs no per-mapping data where smaps_rollup
    is there, so an archive need not keep those processes' smaps.  ``every_mapping`` (by default
    ``per_mapping``): the report reads every mapping (-m, -M), so a recording's frame that kept
    only smaps_rollup is read from the key frame before it; without it such a frame serves a
    report that wants of smaps only the PSS split, where its rollups carry it (Linux 5.9+).
    ``streamed=True``: an
    archive is an ArchiveStream, a StreamedSource read once, process by process, by whoever loads
    it (its each_process), else an ArchiveSource read whole as it is opened.  ``at`` is given only
    with a recording (smem.validate's rule); ``at_option``: the option that gave it (--at; smem
    diff's --from, --to), which an error about its value names.  ``said``: called
    with a line while a source waits (tcp://: where it listens), for the caller to show; a source
    prints nothing itself.
    """
    if spec is None or spec == "":
        return LiveSource()
    from .archive import ArchiveSource  # decompressors: only for captures
    from .archive_stream import ArchiveStream
    from .capture_file import CaptureFile, read_capture
    from .directory import DirectorySource
    if spec == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        return (ArchiveStream if streamed else ArchiveSource)(read_capture(stream, "standard input"), "standard input",
                                                              per_mapping)
    if spec.startswith("ssh://"):
        from .remote import RemoteSource
        return RemoteSource(spec, per_mapping)
    if spec.startswith("tcp://"):
        from .tcp import DEFAULT_TIMEOUT, receive_source
        return receive_source(spec, timeout or DEFAULT_TIMEOUT, per_mapping, streamed, said)
    if "\0" in spec:
        raise UsageError(f"-S {spec!r}: a path cannot hold a NUL byte")
    try:
        mode = os.stat(spec).st_mode
    except OSError as e:
        raise SourceError(f"cannot read {spec}: {e.strerror}") from None
    if stat.S_ISDIR(mode):
        from .recorded import is_recording, open_recording
        if is_recording(spec):
            return open_recording(spec, at, per_mapping, streamed,
                                  per_mapping if every_mapping is None else every_mapping, at_option)
        return DirectorySource(spec)
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):  # refused unopened: opening may block or act
        raise SourceError(f"{spec}: not a capture file (a device or socket)")
    name = spec  # errors name the file as the user gave it
    try:
        f = open(spec, "rb")
    except OSError as e:
        raise SourceError(f"cannot read {spec}: {e.strerror}") from None
    try:
        mode = os.fstat(f.fileno()).st_mode
        if stat.S_ISREG(mode):  # read in place, as the members are needed; the source closes it
            source = (ArchiveStream if streamed else ArchiveSource)(CaptureFile(f, name), name, per_mapping)
            f = None
            return source
        if not stat.S_ISFIFO(mode):
            raise SourceError(f"{spec}: not a capture file (a device or socket)")
        data = read_capture(f, name)
    except OSError as e:
        raise SourceError(f"cannot read {spec}: {e.strerror}") from None
    finally:
        if f is not None:
            f.close()
    return (ArchiveStream if streamed else ArchiveSource)(data, name, per_mapping)
