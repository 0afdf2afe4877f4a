"""The process view (the default): one row per process with memory mapped."""

from ..model import uss_of
from .columns import View, amount, count, text

__all__ = ["PROCESS_VIEW"]


class ProcessRow:
    __slots__ = ("process", "user")

    def __init__(self, process, user):
        self.process = process
        self.user = user


def _total(key):
    return lambda r: r.process.totals.get(key)


def rows(snapshot, options):
    numeric = options.numeric
    return [ProcessRow(p, (p.uid if p.uid is not None else "?") if numeric else p.user)
            for p in snapshot.processes if p.mappings]


COLUMNS = {c.key: c for c in (
    count("pid", "PID", lambda r: r.process.pid, "process ID", total="rows"),
    text("user", "User", lambda r: r.user, "owner of the process", 8, total="distinct"),
    text("name", "Name", lambda r: r.process.name, "process name (from stat)", 24, truncate=True),
    text("command", "Command", lambda r: r.process.command, "process command line", 27, truncate=True),
    count("maps", "Maps", lambda r: len(r.process.mappings), "number of mappings"),
    amount("swap", "Swap", _total("Swap"), "swap space used (ignoring sharing)", percent_of="swap"),
    amount("uss", "USS", lambda r: uss_of(r.process.totals), "unique set size: memory only this process maps"),
    amount("rss", "RSS", _total("Rss"), "resident set size (ignoring sharing)"),
    amount("pss", "PSS", _total("Pss"), "proportional set size (shared pages divided among their users)"),
    amount("vss", "VSS", _total("Size"), "virtual set size (all virtual memory mapped)"),
)}

PROCESS_VIEW = View(
    name="process", title="processes", columns=COLUMNS,
    default_columns=("pid", "user", "command", "swap", "uss", "pss", "rss"),
    default_sort="pss", rows=rows,
)
