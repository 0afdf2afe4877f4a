"""Views: the shapes of a report (process, mapping, user, program, system).

Each view turns a :class:`~smem.model.Snapshot` into rows and declares its
columns in the registry of :mod:`smem.views.columns`.
"""

from ..model import Needs
from .groups import CGROUP_VIEW, PROGRAM_VIEW, USER_VIEW
from .mapping import MAPPING_VIEW
from .process import PROCESS_VIEW
from .system import SYSTEM_VIEW

__all__ = ["VIEWS", "PROCESS_VIEW", "MAPPING_VIEW", "USER_VIEW", "PROGRAM_VIEW", "CGROUP_VIEW", "SYSTEM_VIEW",
           "needs_of"]

VIEWS = {v.name: v for v in (PROCESS_VIEW, MAPPING_VIEW, USER_VIEW, PROGRAM_VIEW, CGROUP_VIEW, SYSTEM_VIEW)}


def needs_of(view, columns):
    """What to read per process for ``columns`` (Column objects, the sort column included)."""
    wanted = set(view.needs)
    for column in columns:
        wanted |= column.needs
    needs = Needs(mappings="mappings" in wanted, rollup="rollup" in wanted, status="status" in wanted,
                  cgroup="cgroup" in wanted, counters=frozenset().union(*(c.counters for c in columns)))
    needs.exact = "exact" in wanted
    needs.split = "split" in wanted
    return needs
