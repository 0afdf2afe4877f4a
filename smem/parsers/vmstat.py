"""Parser for /proc/vmstat (the kernel's event and page counters, one ``name value`` a line;
include/linux/vm_event_item.h and mm/vmstat.c name them; which are printed depends on the
kernel and its configuration, so a name absent is unknown, never 0)."""

from . import plausible

__all__ = ["parse_vmstat"]


def parse_vmstat(data):
    """{name: value} of every line that is a name and a count a machine could have."""
    counters = {}
    for line in data.split(b"\n"):
        name, _, value = line.partition(b" ")
        if name and value.isdigit() and len(value) <= 20:
            count = plausible(int(value))
            if count is not None:
                counters[name.decode("ascii", "replace")] = count
    return counters
