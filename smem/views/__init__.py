"""Views: the shapes of a report (process, mapping, user, program, cgroup, system, sharing, shm).

Each view turns snapshots (:class:`~smem.model.Snapshot`) into rows, declares
its columns in the registry of :mod:`smem.views.columns` and its traits on
its :class:`~smem.views.columns.View`; nothing outside this package asks a
view for its name.  A new view is one module here and one entry below (its module, its View,
and the flags that choose it: smem.views.choice).
"""

import importlib
from collections.abc import Mapping

from ..model import Need, Needs
from .choice import ViewFlag as flag, by, choose, flags_of
from .columns import Column, View

__all__ = ["VIEWS", "View", "Column", "needs_of", "choices", "view_flags", "chosen_view"]

#: view name -> (module in this package, the View in it, how the command line chooses it), in the
#: order errors and -h list the flags: smem 1.5's -m -u -w, then the newer ones
_WHERE = {
    "process": ("process", "PROCESS_VIEW", by()),
    "mapping": ("mapping", "MAPPING_VIEW", by(flag(("-m", "--mappings"), "mappings", "Show mappings."))),
    "user": ("groups", "USER_VIEW", by(flag(("-u", "--users"), "users", "Show users."))),
    "system": ("system", "SYSTEM_VIEW", by(flag(("-w", "--system"), "system", "Show the whole system."))),
    "cgroup": ("groups", "CGROUP_VIEW", by(flag(
        ("--cgroup",), "by_cgroup", "Show memory cgroups (services, containers)."))),
    "program": ("groups", "PROGRAM_VIEW", by(
        flag(("-g",), "group_by_name", "Group processes by program name (--group name)."),
        flag(("--group",), "group", "Group processes by KEY, which is name: one row per program name (as -g).",
             values=("name",), metavar="KEY"))),
    "shm": ("shm", "SHM_VIEW", by(flag(
        ("--shm",), "shared_memory",
        "Show shared memory: tmpfs mounts and files, SysV segments, memfds; in RAM, in swap, mapped and by whom."))),
    "sharing": ("sharing", "SHARING_VIEW", by(flag(
        ("--shared-with",), "shared_with",
        "With -P, -U or --pid: which other processes share the selection's memory, and how much (implies "
        "--exact)."),
        alone=True, why="lists processes", compared=False)),
    "breakdown": ("breakdown", "BREAKDOWN_VIEW", by(flag(
        ("--breakdown",), "breakdown",
        "With -w: rows that add up to MemTotal (processes' PSS, page cache and shared memory no process maps, "
        "the kernel's parts, zram/zswap, free) and an unexplained rest, each with its source.",
        compared_help="With -w: compare the rows that add up to MemTotal (as smem -w --breakdown)."),
        within="system", why="accounts for all of MemTotal")),
}

def choices():
    """View name -> its ChosenBy (smem.views.choice), in the registry's order."""
    return {name: chosen_by for name, (module, attribute, chosen_by) in _WHERE.items()}


def view_flags(compared=False):
    """The options that choose a view, in the registry's order (the CLI makes one of each);
    ``compared``: those ``smem diff`` offers, the flags of views whose rows can be matched."""
    return tuple(flags_of(choices(), compared))


def chosen_view(given):
    """The name of the view the view options ``given`` (parameter name -> value) choose; a
    UsageError where they name several, or a flag without the view it refines."""
    return choose(choices(), given)


class _Views(Mapping):
    """The registry, name -> View: a view's module is imported when the view is first asked for,
    so a report imports the view it shows (and its parsers), not all eight."""

    def __getitem__(self, name):
        module, attribute, chosen_by = _WHERE[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)

    def __iter__(self):
        return iter(_WHERE)

    def __len__(self):
        return len(_WHERE)


VIEWS = _Views()


def needs_of(view, columns, *, counters=frozenset(), mappings=False, max_rss_kib=None, also=frozenset()):
    """What to read per process for ``columns`` (Column objects, the sort column included),
    plus ``counters``, ``mappings`` and the needs ``also`` others have (a chart's measure, exact
    accounting, the tables made beside the view's)."""
    wanted = Need.named(view.reads.needs) | Need.named(also)
    for column in columns:
        wanted |= Need.named(column.needs)
    if mappings:
        wanted |= Need.MAPPINGS
    if Need.EXACT in wanted:
        wanted |= Need.STAT
    return Needs(wanted, frozenset(counters).union(view.reads.counters, *(c.counters for c in columns)), max_rss_kib)
