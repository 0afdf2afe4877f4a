"""Whether an existing file holds a capture, told from its first bytes: what ``smem capture -o``
may rewrite without ``--force``. A compression's magic alone took any tarball (a backup of /etc
named backup.tgz) for a capture; the first member of the archive, read from the first block once
decompressed, tells. Pure: bytes in, an answer out.
"""

import tarfile

from .compression import compression_of

__all__ = ["holds_capture"]

#: the first path part of each member a capture may start with (docs/capture-format.md; "proc"
#: for the old proc/-prefixed captures), besides a process's number
CAPTURE_TOP = frozenset({"capture-info", "meminfo", "version", "iomem", "zoneinfo", "swaps", "sys", "dmesg",
                         "passwd", "sysvipc", "smem", "config.gz", "uptime", "pressure", "kpages.sparse", "proc"})

#: headers that name the next member rather than being one (GNU long names, pax)
_NAMING = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
           tarfile.SOLARIS_XHDTYPE)


def holds_capture(head):
    """Whether ``head`` (a file's first bytes) may start a capture: a tar archive, plain or in a
    compression a capture may have, whose first member is a capture's. Where the first block cannot
    be had (bzip2 gives nothing before its first 900 KB block ends; zstd without its package) or
    names the next member (a pax or GNU long-name header), it is taken for one, as before."""
    head = bytes(head)
    compression = compression_of(head)
    if compression is None and head[257:262] != b"ustar":
        return False
    block = head if compression is None else _inflated(compression.name, head)
    if block is None or len(block) < tarfile.BLOCKSIZE:
        return True
    try:
        first = tarfile.TarInfo.frombuf(block[:tarfile.BLOCKSIZE], "utf-8", "surrogateescape")
    except tarfile.HeaderError:
        return False  # not a tar archive (or an empty one): no capture
    if first.type in _NAMING:
        return True
    top = first.name.lstrip("/").removeprefix("./").split("/", 1)[0]
    return top.isdigit() or top in CAPTURE_TOP


def _inflated(name, head):
    """What the start of a ``name``-compressed stream inflates to (as far as ``head`` goes), or None
    where it cannot be inflated here (damaged: the reader of the capture says so, not this)."""
    import bz2
    import lzma
    import zlib
    try:
        if name == "gzip":
            return zlib.decompressobj(31).decompress(head, tarfile.BLOCKSIZE)
        if name == "xz":
            return lzma.LZMADecompressor().decompress(head, tarfile.BLOCKSIZE)
        if name == "bzip2":
            return bz2.BZ2Decompressor().decompress(head, tarfile.BLOCKSIZE)
    except (zlib.error, lzma.LZMAError, OSError, EOFError, ValueError):
        return None
    if name == "zstd":
        try:
            import zstandard
        except ImportError:
            return None
        import io
        try:  # (a block read from a stream: a whole frame in ``head`` may inflate to 128 MiB)
            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(head)) as stream:
                return stream.read(tarfile.BLOCKSIZE)
        except zstandard.ZstdError:
            return None
    return None
