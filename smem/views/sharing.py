"""The sharing report (--shared-with): who else holds the frames a selection shares.

Rows are the processes outside the selection (-P/-U) that map frames the
selection maps too, with how much (a frame counts once per holder, so the
rows overlap); the line under the table says how much the selection shares
in all, from exact accounting.
"""

from ..units import human
from .columns import Accounting, Charting, Metrics, Reads, View, amount, count, text
from .process import user_label

__all__ = ["SHARING_VIEW"]


class HolderRow:
    __slots__ = ("process", "user", "shared")

    def __init__(self, process, user, shared):
        self.process = process
        self.user = user
        self.shared = shared

    @property
    def member_pids(self):
        """The one process a row is (a chart names two rows of one name by their pids)."""
        return (self.process.pid,)


def rows(snapshots, options):
    selected, sharing = snapshots[0].sharing
    by_pid = {p.pid: p for p in snapshots[0].processes}
    return [HolderRow(by_pid[pid], user_label(by_pid[pid], options.numeric), kib)
            for pid, kib in sharing.holders.items() if pid in by_pid]


def summary(snapshot, rows, options, system):
    selected, sharing = snapshot.sharing
    note = (f"{len(selected)} selected process{'es share' if len(selected) != 1 else ' shares'} "
            f"{human(int(round(sharing.shared_kib)))} with {len(rows)} other{'s' if len(rows) != 1 else ''}")
    if sharing.elsewhere_kib:
        note += f"; {human(int(round(sharing.elsewhere_kib)))} with processes not read"
    return None, [note]


COLUMNS = {c.key: c for c in (
    count("pid", "PID", lambda r: r.process.pid, "process ID", total="rows", total_key="processes"),
    # (-t counts uids: two that passwd names alike are two users, as -u's rows are)
    text("user", "User", lambda r: r.user, "owner of the process", 8, total="distinct", total_key="users")._replace(
        total_getter=lambda r: r.process.uid),
    text("name", "Name", lambda r: r.process.name, "process name", 24, truncate=True),
    text("command", "Command", lambda r: r.process.command, "process command line", 27, truncate=True,
         needs={"command"}),
    amount("shared", "Shared", lambda r: int(round(r.shared)),
           "memory this process shares with the selection"),
)}

SHARING_VIEW = View(
    name="sharing", title="sharing with the selection", columns=COLUMNS,
    default_columns=("pid", "user", "command", "shared"),
    default_sort="shared", rows=rows, summary=summary, flowing_column="command",
    reads=Reads(needs=frozenset({"stat"})), accounting=Accounting(requires_exact=True),
    # a chart of it measures what each process shares with the selection: the view has no PSS
    charting=Charting(measure="shared", measure_without_pss="shared", noun="processes"),
    metrics=Metrics(labels=(("pid", lambda r: r.process.pid), ("user", lambda r: r.user),
                            ("name", lambda r: r.process.name))),
)
