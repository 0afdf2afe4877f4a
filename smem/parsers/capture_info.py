"""Parser for the ``capture-info`` member of a capture (docs/capture-format.md).

``key=value`` lines describing the machine a capture came from (hostname,
time, page size, kernel release, machine).  Unknown keys pass through.
"""

import re

from . import MAX_KEYS

__all__ = ["parse_capture_info"]

#: a line, as str.splitlines() ends them (taken one at a time: a list of every line of millions
#: of short ones took gigabytes)
_LINE = re.compile("[^\n\r\v\f\x1c-\x1e\x85\u2028\u2029]+")


def parse_capture_info(data):
    info = {}
    for match in _LINE.finditer(data.decode("utf-8", "replace")):
        key, sep, value = match.group().partition("=")
        if sep and key.strip() and (len(info) < MAX_KEYS or key.strip() in info):
            info[key.strip()] = value.strip()
    return info
