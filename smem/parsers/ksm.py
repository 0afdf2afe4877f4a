"""Parsers for the KSM counters (Documentation/admin-guide/mm/ksm.rst).

``/sys/kernel/mm/ksm/<name>`` holds one number each: ``pages_shared`` (the KSM pages in
use), ``pages_sharing`` (the places that share them: how many pages are saved),
``pages_unshared``, ``general_profit`` (Linux 6.1+: bytes saved minus what KSM's own
bookkeeping costs; may be negative), ``ksm_zero_pages`` (6.10+), ... .
``/proc/PID/ksm_merging_pages`` (Linux 5.19+, Documentation/filesystems/proc.rst)
is the number of a process's pages KSM merged; smaps' ``KSM:`` line (6.6+) says the
same in kB per mapping.  ``/proc/PID/ksm_stat`` (6.1+) has it too (``ksm_merging_pages``, 6.4+),
beside ``ksm_zero_pages`` (6.10+: pages merged into the zero page), one ``name value`` a line.
"""

__all__ = ["parse_ksm_value", "parse_ksm_stat", "KSM_FILES"]

#: the /sys/kernel/mm/ksm files the system view reads
KSM_FILES = ("pages_shared", "pages_sharing", "general_profit", "ksm_zero_pages")


def parse_ksm_value(data):
    """The number a KSM file holds; ValueError for anything else."""
    text = data.strip()
    digits = text[1:] if text[:1] == b"-" else text
    if not digits.isdigit() or len(digits) > 20:
        raise ValueError(f"not a KSM counter: {text[:20]!r}")
    return int(text)


def parse_ksm_stat(data):
    """/proc/PID/ksm_stat as {name: value}: whole numbers as ints (``ksm_process_profit`` may be
    negative), the rest (``ksm_merge_any: no``) as text; names the kernel adds pass through.
    ValueError for a line that is no name and value."""
    stat = {}
    for line in data.splitlines():
        name, _, value = line.partition(b" ")
        name, value = name.rstrip(b":").decode("ascii", "replace"), value.strip()
        if not name or not value:
            raise ValueError(f"not a ksm_stat line: {line[:40]!r}")
        digits = value[1:] if value[:1] == b"-" else value
        stat[name] = int(value) if digits.isdigit() and len(digits) <= 20 else value.decode("ascii", "replace")
    return stat
