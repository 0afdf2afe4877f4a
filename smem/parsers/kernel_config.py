"""Parser for the kernel's build configuration: ``/proc/config.gz`` (CONFIG_IKCONFIG_PROC,
gzip of the ``.config``; Documentation/admin-guide/README.rst, kernel/Kconfig "ikconfig") or
a distribution's ``/boot/config-RELEASE`` (the same text).

Lines are ``CONFIG_NAME=value`` or ``# CONFIG_NAME is not set``; others are comments.  smem
asks it one thing: whether the kernel keeps a map count per page.  Linux 6.15 added
CONFIG_NO_PAGE_MAPCOUNT (mm/Kconfig): without per-page map counts, smaps' PSS and USS of a
large folio mapped in part, and /proc/kpagecount, are averages over the folio (estimates).
"""

import zlib
from typing import Optional

__all__ = ["gunzip_config", "no_page_mapcount", "MAX_CONFIG_BYTES"]

_NO_PAGE_MAPCOUNT = "CONFIG_NO_PAGE_MAPCOUNT"

#: a .config is 100-300 KiB; more is not one (and a gzip bomb is stopped here)
MAX_CONFIG_BYTES = 4 << 20


def gunzip_config(data) -> Optional[bytes]:
    """The text of a gzip'd config (/proc/config.gz), or None where it is not gzip or is larger
    than MAX_CONFIG_BYTES once inflated."""
    try:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        text = inflater.decompress(data, MAX_CONFIG_BYTES)
    except zlib.error:
        return None
    return text if inflater.eof and not inflater.unconsumed_tail else None  # (cut short: not all of it)


def _option(line):
    """(CONFIG_NAME, value) of one line of a config, or None (a comment, a blank line)."""
    line = line.strip()
    if line.startswith("# CONFIG_") and line.endswith(" is not set"):
        return line[2:-len(" is not set")], "n"
    key, eq, value = line.partition("=")
    if eq and key.startswith("CONFIG_") and " " not in key:
        return key, value
    return None


def no_page_mapcount(data) -> Optional[bool]:
    """Whether the kernel the config ``data`` (bytes) was built for keeps no per-page map counts
    (True), keeps them (False), or None where the text holds no option at all.  Before 6.15 every
    kernel had them: an older config, which names neither CONFIG_NO_PAGE_MAPCOUNT nor its
    opposite, says False.  The first line naming the option wins ("is not set" reads "n"), as a
    parse of every line would have it; only the lines that name it are read: every report asks,
    and need not parse each of the config's thousands of lines."""
    text = data.decode("utf-8", "replace")
    at = text.find(_NO_PAGE_MAPCOUNT)
    while at >= 0:
        start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
        end = len(text) if end < 0 else end
        option = _option(text[start:end])
        if option is not None and option[0] == _NO_PAGE_MAPCOUNT:
            return option[1] == "y"
        at = text.find(_NO_PAGE_MAPCOUNT, end)
    return False if any(_option(line) is not None for line in text.split("\n")) else None
