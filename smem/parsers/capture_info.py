"""Parser for the ``capture-info`` member of a capture (docs/capture-format.md).

``key=value`` lines describing the machine a capture came from (hostname,
time, page size, kernel release, machine).  Unknown keys pass through.
"""

__all__ = ["parse_capture_info"]


def parse_capture_info(data):
    info = {}
    for line in data.decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            info[key.strip()] = value.strip()
    return info
