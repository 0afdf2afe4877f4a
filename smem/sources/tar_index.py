"""A fast index of an uncompressed tar archive held in memory (the common case only).

tarfile parses every 512-byte header field by field in Python, which is most of the
time it takes to open a capture of a few thousand members.  This reads the same
headers with a few calls into C each and gives the members tarfile would, for archives
of plain headers: the POSIX ustar format (IEEE Std 1003.1, pax, "ustar Interchange
Format"), the GNU tar manual's "Basic Tar Format" and old v7 headers.  Whatever it
does not read exactly as tarfile does (pax and GNU extension headers, base-256 or odd
numbers, a bad checksum, a header cut short, data running past the end, an unknown
type) raises NeedTarfile: the caller then reads the whole archive with tarfile, which
also gives the errors.
"""

import re
import struct
import sys
import zlib
from typing import NamedTuple

__all__ = ["Member", "NeedTarfile", "read_header", "data_length"]

BLOCK = 512
_ZEROS = bytes(BLOCK)
_REGULAR = (b"0", b"\0", b"7")  # tarfile.REGULAR_TYPES but GNU sparse, which is left to it
_NO_DATA = (b"1", b"2", b"3", b"4", b"5", b"6")  # links, devices, directories, fifos
# The text fields: name, typeflag, uname, prefix (tarfile never looks at the magic).
_TEXT = struct.Struct("100s56xc108x32s48x155s")
# Every number field tarfile reads (one it cannot read ends the archive there): mode
# uid gid size mtime chksum, then past typeflag, linkname, magic, uname and gname,
# devmajor devminor.  Joined by newlines, they are matched at once, each as tarfile's
# nti() surely reads it: spaces, octal digits, spaces, then the end of the field or a
# NUL and anything but a newline.  Anything else (base-256, signs, tabs) is left to tarfile.
_NUMBER_FIELDS = struct.Struct("100x8s8s8s12s12s8s173x8s8s")
_NUMBERS = re.compile(b"\n".join([rb" *([0-7]*) *(?:\0[^\n]*)?"] * 8))
# tarfile's default encoding for names, with its default errors="surrogateescape"
_ENCODING = sys.getfilesystemencoding()


class NeedTarfile(Exception):
    """The archive holds something only tarfile reads exactly: let it read all of it."""


class Member(NamedTuple):
    """The parts of a tarfile.TarInfo a capture uses, with the same names."""
    name: str
    type: bytes
    uid: int
    uname: str
    offset_data: int
    size: int

    def isdir(self):
        return self.type == b"5"

    def isreg(self):
        return self.type in _REGULAR


def _text(field):
    return field.partition(b"\0")[0].decode(_ENCODING, "surrogateescape")


def read_header(header):
    """The member a 512-byte header describes, with offset_data 0; None for a zero block.

    Raises NeedTarfile for whatever tarfile alone reads exactly (see the module docstring).
    """
    if len(header) < BLOCK:
        raise NeedTarfile
    if header == _ZEROS:
        return None
    numbers = _NUMBERS.fullmatch(b"\n".join(_NUMBER_FIELDS.unpack_from(header)))
    if numbers is None:
        raise NeedTarfile
    uid, size, chksum = numbers.group(2, 4, 6)
    uid, size, chksum = int(uid or b"0", 8), int(size or b"0", 8), int(chksum or b"0", 8)
    # The checksum counts the chksum field as eight spaces.  The low half of an
    # Adler-32 started at zero is the byte sum mod 65521: exact for 256 bytes.  (tarfile
    # also accepts a signed-char sum, which only a bad checksum here needs.)
    total = (zlib.adler32(header[:256], 0) & 0xFFFF) + (zlib.adler32(header[256:], 0) & 0xFFFF)
    if chksum != total - sum(header[148:156]) + 8 * 32:
        raise NeedTarfile
    name, kind, uname, prefix = _TEXT.unpack_from(header)
    name = _text(name)
    if kind == b"\0" and name.endswith("/"):
        kind = b"5"  # v7 tar's directory: a regular file named with a slash
    prefix = _text(prefix)
    if prefix:  # the ustar prefix, joined whatever the magic, as tarfile does
        name = prefix + "/" + name
    if kind == b"5":
        name = name.rstrip("/")
    if kind not in _REGULAR and kind not in _NO_DATA:
        raise NeedTarfile  # pax, GNU long name or sparse, or an unknown type
    return Member(name, kind, uid, _text(uname), 0, size)


def data_length(member):
    """The bytes that follow a member's header: its data, padded to whole blocks."""
    return -(-member.size // BLOCK) * BLOCK if member.type in _REGULAR else 0
