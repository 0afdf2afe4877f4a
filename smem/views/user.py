"""The user view (-u): one row per process owner, summed over its processes."""

from ..model import uss_of
from .columns import View, amount, count, text

__all__ = ["USER_VIEW"]


class UserRow:
    __slots__ = ("uid", "user", "count", "totals")

    def __init__(self, uid, user):
        self.uid = uid
        self.user = user
        self.count = 0
        self.totals = {}


def rows(snapshot, options):
    by_uid = {}
    for process in snapshot.processes:
        if not process.mappings:
            continue
        row = by_uid.get(process.uid)
        if row is None:
            label = (process.uid if process.uid is not None else "?") if options.numeric else process.user
            row = by_uid[process.uid] = UserRow(process.uid, label)
        row.count += 1
        totals = row.totals
        for key, value in process.totals.items():
            totals[key] = totals.get(key, 0) + value
    return list(by_uid.values())


def _total(key):
    return lambda r: r.totals.get(key)


COLUMNS = {c.key: c for c in (
    text("user", "User", lambda r: r.user, "user name or ID", 8),
    count("count", "Count", lambda r: r.count, "number of processes"),
    amount("swap", "Swap", _total("Swap"), "swap space used (ignoring sharing)", percent_of="swap"),
    amount("uss", "USS", lambda r: uss_of(r.totals), "unique set size (sum over the user's processes)"),
    amount("rss", "RSS", _total("Rss"), "resident set size (ignoring sharing)"),
    amount("pss", "PSS", _total("Pss"), "proportional set size (shared pages divided among their users)"),
    amount("vss", "VSS", _total("Size"), "virtual set size (all virtual memory mapped)"),
)}

USER_VIEW = View(
    name="user", title="users", columns=COLUMNS,
    default_columns=("user", "count", "swap", "uss", "pss", "rss"),
    default_sort="pss", rows=rows,
)
