"""Views: the shapes of a report (process, mapping, user, program, cgroup, system, sharing, shm).

Each view turns snapshots (:class:`~smem.model.Snapshot`) into rows, declares
its columns in the registry of :mod:`smem.views.columns` and its traits on
its :class:`~smem.views.columns.View`; nothing outside this package asks a
view for its name.  A new view is one module here and one line below.
"""

import importlib
from collections.abc import Mapping

from ..model import Need, Needs
from .columns import Column, View

__all__ = ["VIEWS", "View", "Column", "PROCESS_VIEW", "MAPPING_VIEW", "USER_VIEW", "PROGRAM_VIEW", "CGROUP_VIEW",
           "SYSTEM_VIEW", "SHARING_VIEW", "SHM_VIEW", "needs_of"]

#: view name -> (module in this package, the View in it), in the order -c help and docs list them
_WHERE = {
    "process": ("process", "PROCESS_VIEW"),
    "mapping": ("mapping", "MAPPING_VIEW"),
    "user": ("groups", "USER_VIEW"),
    "program": ("groups", "PROGRAM_VIEW"),
    "cgroup": ("groups", "CGROUP_VIEW"),
    "system": ("system", "SYSTEM_VIEW"),
    "sharing": ("sharing", "SHARING_VIEW"),
    "shm": ("shm", "SHM_VIEW"),
}


class _Views(Mapping):
    """The registry, name -> View: a view's module is imported when the view is first asked for,
    so a report imports the view it shows (and its parsers), not all eight."""

    def __getitem__(self, name):
        module, attribute = _WHERE[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)

    def __iter__(self):
        return iter(_WHERE)

    def __len__(self):
        return len(_WHERE)


VIEWS = _Views()


def __getattr__(name):
    """PROCESS_VIEW and the rest, from the registry (PEP 562)."""
    for view, (_, attribute) in _WHERE.items():
        if attribute == name:
            return VIEWS[view]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def needs_of(view, columns, *, counters=frozenset(), mappings=False, max_rss_kib=None, also=frozenset()):
    """What to read per process for ``columns`` (Column objects, the sort column included),
    plus ``counters``, ``mappings`` and the needs ``also`` others have (a chart's measure, exact
    accounting, the tables made beside the view's)."""
    wanted = Need.named(view.needs) | Need.named(also)
    for column in columns:
        wanted |= Need.named(column.needs)
    if mappings:
        wanted |= Need.MAPPINGS
    if Need.EXACT in wanted:
        wanted |= Need.STAT
    return Needs(wanted, frozenset(counters).union(view.counters, *(c.counters for c in columns)), max_rss_kib)
