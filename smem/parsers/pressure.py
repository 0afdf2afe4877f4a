"""Parser for a pressure stall information file: ``/proc/pressure/memory`` (Linux 4.20+,
CONFIG_PSI) or a cgroup v2 ``memory.pressure`` (Documentation/accounting/psi.rst).

Two lines, ``some`` (the share of time at least one task stalled on memory) and ``full``
(all non-idle tasks stalled at once)::

    some avg10=0.00 avg60=0.00 avg300=0.00 total=0
    full avg10=0.00 avg60=0.00 avg300=0.00 total=0

``avgN`` are percentages of wall time over the last N seconds, ``total`` the stall time in
microseconds since boot.  A line or field that is missing or damaged (a percentage outside
0-100, a number no machine has) is absent, never 0; unknown fields pass through; a line
repeated keeps its first reading.
"""

from typing import Dict, NamedTuple, Optional

__all__ = ["Stall", "parse_pressure", "WINDOWS", "KINDS"]

#: the averaging windows, seconds, as the kernel names them
WINDOWS = ("avg10", "avg60", "avg300")
KINDS = ("some", "full")

_MAX_TOTAL_US = 1 << 64


class Stall(NamedTuple):
    """One line: the averages (percent, None where absent) and the total (microseconds)."""

    avg10: Optional[float] = None
    avg60: Optional[float] = None
    avg300: Optional[float] = None
    total_us: Optional[int] = None
    other: Dict[str, str] = {}


def _percent(text):
    head, dot, tail = text.partition(".")
    if not head.isascii() or not head.isdigit() or len(head) > 3 or (dot and not (tail.isascii() and tail.isdigit())):
        return None
    value = float(text)
    return value if value <= 100.0 else None


def parse_pressure(data) -> Dict[str, Stall]:
    """{"some": Stall, "full": Stall} of the lines ``data`` (bytes) holds."""
    found = {}
    for line in data.decode("utf-8", "replace").split("\n"):
        fields = line.split()
        if not fields or fields[0] not in KINDS or fields[0] in found:
            continue
        values, other = {}, {}
        for field in fields[1:]:
            key, eq, value = field.partition("=")
            if not eq:
                continue
            if key in WINDOWS:
                values.setdefault(key, _percent(value))
            elif key == "total":
                total = int(value) if value.isascii() and value.isdigit() and len(value) <= 20 else None
                values.setdefault("total_us", total if total is not None and total < _MAX_TOTAL_US else None)
            else:
                other.setdefault(key, value)
        if values:
            found[fields[0]] = Stall(**values, other=other)
    return found
