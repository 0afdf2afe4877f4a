"""The compressions smem knows, in one table: what reads a capture, what ``smem capture
--compression`` writes, and what a compressed kernel image (``-K vmlinuz``) may hold.

Each is named once with its magic, the bytes a stream of it starts with (as the kernel's
scripts/extract-vmlinux searches for them), its ``--compression`` spelling where smem writes
it, and the package it needs beyond the standard library.  The readers and writers themselves
stay with who uses them (sources/decompressed.py, capture_command.run_capture,
parsers/kernel_image.py): this table says which exist, so the three cannot disagree.
"""

from typing import NamedTuple, Optional

__all__ = ["Compression", "COMPRESSIONS", "CAPTURE_COMPRESSIONS", "WRITTEN", "DEFAULT_WRITTEN", "WRITTEN_ALIASES",
           "compression_of", "by_option", "named_by", "unwritten_named_by"]


class Compression(NamedTuple):  # (not a dataclass: the command line builds its choices from it at every start)
    name: str                      # as messages name it: "gzip"
    magic: bytes                   # what a stream of it starts with
    option: Optional[str] = None   # its ``smem capture --compression`` spelling, where smem writes it
    module: Optional[str] = None   # the module it needs beyond the standard library (extras.EXTRAS)
    capture: bool = True           # whether a capture may be compressed with it (else a kernel only)

    def starts(self, head):
        """Whether ``head`` (a stream's first bytes) starts a stream of this compression: the
        magic, and where the magic is short, the byte after it (gzip's deflate method, bzip2's
        block size digit)."""
        if not head.startswith(self.magic):
            return False
        if self.name == "gzip":
            return len(head) > 2 and head[2] == 8
        if self.name == "bzip2":
            return len(head) > 3 and head[3] in b"123456789"
        return True


COMPRESSIONS = (
    Compression("gzip", b"\x1f\x8b", "gz"),
    Compression("bzip2", b"BZh", "bz2"),
    Compression("xz", b"\xfd7zXZ\x00", "xz"),
    Compression("zstd", b"\x28\xb5\x2f\xfd", "zst", module="zstandard"),
    Compression("lzma", b"\x5d\x00\x00\x00", capture=False),
    Compression("lz4", b"\x02\x21\x4c\x18", capture=False),
)

#: what a capture may be compressed with
CAPTURE_COMPRESSIONS = tuple(c for c in COMPRESSIONS if c.capture)

#: the ``--compression`` spellings, the first the default, and "none"
WRITTEN = tuple(c.option for c in COMPRESSIONS if c.option) + ("none",)

#: what ``smem capture`` writes unless ``--compression`` says otherwise (WRITTEN's first)
DEFAULT_WRITTEN = WRITTEN[0]

#: the programs' names (gzip, bzip2, zstd), which ``--compression`` takes for their spellings too
WRITTEN_ALIASES = {c.name: c.option for c in COMPRESSIONS if c.option and c.name != c.option}


def compression_of(head, among=CAPTURE_COMPRESSIONS):
    """The compression ``head`` starts with (by its magic alone), or None: a capture that starts
    with a magic is that compression's, and a damaged one an error of it."""
    head = bytes(head[:8])
    for compression in among:
        if head.startswith(compression.magic):
            return compression
    return None


def by_option(option):
    """The Compression of a ``--compression`` spelling (None for "none")."""
    return next((c for c in COMPRESSIONS if c.option == option), None)


#: what a file's extension says it holds, as ``--compression`` spells it
_EXTENSIONS = {".tar": "none", ".tgz": "gz", ".gz": "gz", ".tbz": "bz2", ".tbz2": "bz2", ".bz2": "bz2",
               ".txz": "xz", ".xz": "xz", ".tzst": "zst", ".zst": "zst"}


def named_by(path):
    """The ``--compression`` spelling ``path``'s extension names (box.tar.xz: xz, box.tar: none),
    or None: a capture written under a name that says another compression is misnamed."""
    name = str(path).lower()
    return next((option for extension, option in _EXTENSIONS.items() if name.endswith(extension)), None)


#: compressions a name may say that smem cannot write (as GNU tar's -a reads them, and lz4's):
#: a capture written under one would be gzip or the like misnamed.  ".Z" is compress only in capitals
_NOT_WRITTEN = {".lz4": "lz4", ".lz": "lzip", ".lzma": "lzma", ".tlz": "lzma", ".lzo": "lzop",
                ".Z": "compress", ".taZ": "compress"}


def unwritten_named_by(path):
    """The compression ``path``'s extension names that smem cannot write (box.tar.lz4: lz4), or None."""
    name = str(path)
    return next((what for extension, what in _NOT_WRITTEN.items()
                 if name.endswith(extension) or (extension.islower() and name.lower().endswith(extension))), None)
