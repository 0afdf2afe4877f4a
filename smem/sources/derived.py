"""What every source offers, derived from its primitives alone: the one shared layer.

A source implements the primitives (:class:`~smem.sources.base.Source`'s abstract methods: its
pids, a file's bytes, a pid's owner; and the machine's facts) and, where it can, the optional capabilities
:class:`~smem.sources.base.Source` declares with defaults.  Everything else is here, once, as
functions of any source: an optional read, a process's file with its OS errors translated
(smem.errors.translated, the one place they become smem's), the owner read from a status file,
the typed facts of the machine.  ``Source``'s methods of the same names call these.
"""

from ..errors import is_absence, process_error, translated
from .machine import Machine

__all__ = ["read_optional", "read_process", "read_process_at", "read_at", "status_owner", "machine_of"]


def read_optional(source, path):
    """``source.read(path)``, or None where the file is gone or may not be read (is_absence)."""
    try:
        return source.read(path)
    except OSError as e:
        if is_absence(e):
            return None
        raise


def read_sys_optional(source, path):
    """``source.read_sys(path)``, or None where it cannot be had.  Unlike a /proc file's, any
    OSError is the file's absence: a /sys attribute is its driver's, which may refuse a read with
    any errno (EIO, ENODEV, EINVAL, EOPNOTSUPP) while the rest of the machine reads fine."""
    try:
        return source.read_sys(path)
    except OSError:
        return None


def read_at(source, path, offset, length):
    """``length`` bytes of ``path`` from ``offset``, for a source that can only read whole files."""
    return source.read(path)[offset:offset + length]


def read_process(source, pid, name):
    """Process ``pid``'s file ``name`` ("smaps"): ProcessGone if the process exited,
    ProcessUnreadable if it may not be read."""
    try:  # (as smem.errors.translated does, without a context manager: read twice a process)
        return source.read(f"{pid}/{name}")
    except OSError as e:
        raise process_error(pid, e) from None


def read_process_at(source, pid, name, offset, length):
    """Like :func:`read_process`, ``length`` bytes from ``offset`` (pagemap)."""
    with translated(pid):
        return source.read_at(f"{pid}/{name}", offset, length)


def status_owner(source, pid):
    """The effective uid of ``pid`` from its status file (where no directory owner says it)."""
    from ..parsers.status import parse_status, status_ids
    data = read_optional(source, f"{pid}/status")
    if data:
        ids = status_ids(parse_status(data), "Uid")
        if ids and len(ids) > 1:
            return ids[1]
    return None


def machine_of(source):
    """The typed :class:`Machine` of ``source``'s facts, read once and kept on the source."""
    cached = source.__dict__.get("_machine")
    if cached is None:
        cached = source.__dict__["_machine"] = Machine.from_facts(source.facts())
    return cached
