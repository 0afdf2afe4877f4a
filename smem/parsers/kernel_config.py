"""Parser for the kernel's build configuration: ``/proc/config.gz`` (CONFIG_IKCONFIG_PROC,
gzip of the ``.config``; Documentation/admin-guide/README.rst, kernel/Kconfig "ikconfig") or
a distribution's ``/boot/config-RELEASE`` (the same text).

Lines are ``CONFIG_NAME=value`` or ``# CONFIG_NAME is not set``; others are comments.  smem
asks it one thing: whether the kernel keeps a map count per page.  Linux 6.15 added
CONFIG_NO_PAGE_MAPCOUNT (mm/Kconfig): without per-page map counts, smaps' PSS and USS of a
large folio mapped in part, and /proc/kpagecount, are averages over the folio (estimates).
"""

import zlib
from typing import Dict, Optional

__all__ = ["parse_kernel_config", "gunzip_config", "no_page_mapcount", "MAX_CONFIG_BYTES"]

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


def parse_kernel_config(data) -> Dict[str, str]:
    """{CONFIG_NAME: value} of ``data`` (bytes); an option "is not set" reads "n"."""
    options = {}
    for line in data.decode("utf-8", "replace").split("\n"):
        line = line.strip()
        if line.startswith("# CONFIG_") and line.endswith(" is not set"):
            options.setdefault(line[2:-len(" is not set")], "n")
            continue
        key, eq, value = line.partition("=")
        if eq and key.startswith("CONFIG_") and " " not in key:
            options.setdefault(key, value)
    return options


def no_page_mapcount(options) -> Optional[bool]:
    """Whether the kernel was built without per-page map counts (True), with them (False), or
    None where the config does not say (before 6.15 every kernel had them: False then too, when
    CONFIG_PAGE_MAPCOUNT or neither appears the config is simply older)."""
    value = options.get("CONFIG_NO_PAGE_MAPCOUNT")
    if value == "y":
        return True
    if value == "n" or options:
        return False
    return None
