"""Whether an existing file holds a capture, told from its first bytes: what ``smem capture -o``
may rewrite without ``--force``. A compression's magic alone took any tarball (a backup of /etc
named backup.tgz) for a capture; the first file of the archive, read from its start once
decompressed, tells: a capture's is one of its own (docs/capture-format.md). Pure: bytes in, an
answer out.
"""

import re
import tarfile

from .compression import compression_of
from .sources.decompressed import MAX_XZ_MEMORY

__all__ = ["holds_capture", "HEAD_BYTES"]

#: how much of a file's start to look at: a bzip2 stream gives nothing before its first block
#: (900 kB of text at most, less once compressed) ends
HEAD_BYTES = 1 << 20

#: how much of the archive to inflate: past a pax or GNU long-name header and a few directories
#: to the first file's header; a small file of a compression may inflate to far more
_INFLATED = 64 << 10

#: the first file a capture may have: ours (capture-info), C smemcap's (meminfo), an older
#: layout's under proc/, or a process's file after its directory
_FIRST_FILE = re.compile(r"(?:proc/)?(?:capture-info|meminfo|version"
                         r"|\d+/(?:smaps|smaps_rollup|cmdline|stat|statm|status|cgroup|frames|fdinfo/\d+))")


def holds_capture(head):
    """Whether ``head`` (a file's first HEAD_BYTES, or all of a shorter one) may start a capture: a
    tar archive, plain or in a compression a capture may have, whose first file is a capture's.
    An empty file, or one cut before its first header, may be a capture that was stopped; a whole
    stream too short to hold a header, a damaged one, or one this smem cannot inflate is none."""
    head = bytes(head)
    if not head:
        return True
    compression = compression_of(head)
    if compression is None:
        block, ended = head[:_INFLATED], len(head) < HEAD_BYTES
        if len(block) < tarfile.BLOCKSIZE:
            return head[257:262] == b"ustar"  # (cut inside its first header; a V7 header says less)
    else:
        inflated = _inflated(compression.name, head)
        if inflated is None:
            return False
        block, ended = inflated
        if len(block) < tarfile.BLOCKSIZE:
            return not ended
    name = _first_file(block)
    return name is not None and _FIRST_FILE.fullmatch(name.lstrip("/").removeprefix("./")) is not None


def _first_file(block):
    """The name of the first member of the tar archive starting ``block`` that is no directory
    (tarfile takes pax and GNU long-name headers as part of the member they name), or None."""
    import io
    try:
        with tarfile.open(fileobj=io.BytesIO(block), mode="r:") as tar:
            while True:
                member = tar.next()
                if member is None:
                    return None
                if not member.isdir():
                    return member.name
    except (tarfile.TarError, EOFError, ValueError):
        return None


def _inflated(name, head):
    """(what the start of a ``name``-compressed stream inflates to, at most _INFLATED bytes;
    whether the stream ended within ``head``), or None where it cannot be inflated here."""
    import bz2
    import lzma
    import zlib
    try:
        if name == "gzip":
            d = zlib.decompressobj(31)
            return d.decompress(head, _INFLATED), d.eof
        if name == "xz":
            d = lzma.LZMADecompressor(memlimit=MAX_XZ_MEMORY)
            return d.decompress(head, max_length=_INFLATED), d.eof
        if name == "bzip2":
            d = bz2.BZ2Decompressor()
            return d.decompress(head, max_length=_INFLATED), d.eof
    except (zlib.error, lzma.LZMAError, OSError, EOFError, ValueError, MemoryError):
        return None
    if name == "zstd":
        return _zstd_inflated(head)
    return None


def _zstd_inflated(head):
    """_inflated for zstd, read as a stream a block at a time (a whole 4 KB frame may inflate to
    128 MiB): the stream ended where the whole file was given and inflated to less than asked."""
    import io
    try:
        import zstandard
    except ImportError:
        return None
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(head)) as stream:
            block = stream.read(_INFLATED)
    except (zstandard.ZstdError, MemoryError):
        return None
    return block, len(head) < HEAD_BYTES and len(block) < _INFLATED
