"""Parser for the ``capture-info`` member of a capture (docs/capture-format.md).

``key=value`` lines describing the machine a capture came from (hostname,
time, page size, kernel release, machine).  Unknown keys pass through.
"""

from . import MAX_KEYS, text_lines

__all__ = ["parse_capture_info"]


def parse_capture_info(data):
    info = {}
    for line in text_lines(data.decode("utf-8", "replace")):
        key, sep, value = line.partition("=")
        if sep and key.strip() and (len(info) < MAX_KEYS or key.strip() in info):
            info[key.strip()] = value.strip()
    return info
