"""Pure parsers, one module per kernel file, named after it.

They take bytes and return plain data; none of them touches the filesystem.
"""

import re

#: Every figure is an amount a machine could have: less than 2**64 bytes (the
#: kernel's counters are 64-bit), so less than 2**54 KiB.  A larger one is damage.
MAX_BYTES = 1 << 64
MAX_KIB = MAX_BYTES >> 10
#: Linux ids (uid, gid) are 32-bit, and (uid_t)-1 is no one.
MAX_ID = (1 << 32) - 1
#: The keys a file of ``key: value`` lines (meminfo, status, capture-info) has at most: a real
#: one has a few dozen; a capture's of millions (``k1``, ``k2``, ...) held 13 times its size.
MAX_KEYS = 1024


def plausible(value, limit=MAX_BYTES):
    """``value`` if 0 <= value < limit, else None: an int a machine could have."""
    return value if 0 <= value < limit else None


#: a line, as str.splitlines() ends them (a pattern, compiled by re at its first use: a report
#: reads no capture-info or SysV segment list unless it asks)
_LINE = "[^\n\r\v\f\x1c-\x1e\x85\u2028\u2029]+"


def text_lines(text):
    """The non-empty lines of ``text`` as str.splitlines() ends them, one at a time: a list of
    every line of a capture's millions of short ones took gigabytes."""
    return (match.group() for match in re.finditer(_LINE, text))
