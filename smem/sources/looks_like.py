"""What a file given as a capture looks like when it is none: a page saved from the browser, the
script instead of what it writes, a zip.  tarfile's own words for it ("invalid header",
"truncated header") said nothing to whoever gave it; its first bytes say what it is, cheaply.
Pure: bytes in, words out.
"""

__all__ = ["not_a_capture", "looks_like"]

#: leading bytes: what a file that starts so is
SIGNATURES = (
    (b"PK\x03\x04", "a zip archive"), (b"PK\x05\x06", "a zip archive"),
    (b"\x7fELF", "an ELF program"), (b"%PDF-", "a PDF document"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"), (b"Rar!\x1a\x07", "a RAR archive"),
    (b"SQLite format 3\x00", "an SQLite database"),
)

#: leading text (after a byte-order mark and white space, any case): what a text that starts so is
TEXTS = (("<!doctype html", "an HTML page"), ("<html", "an HTML page"), ("<?xml", "an XML document"),
         ("#!", "a script"))

WHAT_MAKES_ONE = "smemcap or smem capture makes one"


def not_a_capture(name, raw, inner=None, kind=None):
    """The one line for ``name``, whose first bytes are ``raw`` (and, ``kind``-compressed, whose
    first decompressed bytes are ``inner``), that holds no tar archive at all."""
    if kind is None:
        seen = looks_like(raw)
        said = f" (it looks like {seen})" if seen else ""
    else:
        seen = looks_like(inner or b"")
        said = (f" (it looks like {seen} compressed with {kind})" if seen
                else f" (it is {kind}-compressed, but what it holds is not a tar archive)")
    return f"{name}: not a capture{said}; {WHAT_MAKES_ONE}"


def looks_like(data):
    """What a file starting with ``data`` (its first block) looks like, with its article; None
    where its first bytes do not tell."""
    data = bytes(data)
    for signature, what in SIGNATURES:
        if data.startswith(signature):
            return what
    text = _text(data)
    if text is None:
        return None
    start = text.lstrip("\ufeff").lstrip().lower()
    for prefix, what in TEXTS:
        if start.startswith(prefix):
            return what
    return "a text file"


def _text(data):
    """``data`` as text if it is some (UTF-8, no control characters but white space), else None;
    a character cut at the block's end is forgiven."""
    if not data:
        return None
    for cut in range(4):
        try:
            text = data[:len(data) - cut].decode("utf-8")
            break
        except UnicodeDecodeError:
            continue
    else:
        return None
    if any(c < " " and c not in "\t\n\r\f" or c == "\x7f" for c in text):
        return None
    return text
