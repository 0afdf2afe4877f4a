"""Views: the shapes of a report (process, mapping, user, program, cgroup, system, sharing, shm).

Each view turns snapshots (:class:`~smem.model.Snapshot`) into rows, declares
its columns in the registry of :mod:`smem.views.columns` and its traits on
its :class:`~smem.views.columns.View`; nothing outside this package asks a
view for its name.  A new view is one module here and one line below.
"""

from ..model import Needs
from .columns import Column, View
from .groups import CGROUP_VIEW, PROGRAM_VIEW, USER_VIEW
from .mapping import MAPPING_VIEW
from .process import PROCESS_VIEW
from .sharing import SHARING_VIEW
from .shm import SHM_VIEW
from .system import SYSTEM_VIEW

__all__ = ["VIEWS", "View", "Column", "PROCESS_VIEW", "MAPPING_VIEW", "USER_VIEW", "PROGRAM_VIEW", "CGROUP_VIEW",
           "SYSTEM_VIEW", "SHARING_VIEW", "SHM_VIEW", "needs_of"]

VIEWS = {v.name: v for v in (PROCESS_VIEW, MAPPING_VIEW, USER_VIEW, PROGRAM_VIEW, CGROUP_VIEW, SYSTEM_VIEW,
                             SHARING_VIEW, SHM_VIEW)}


def needs_of(view, columns, *, counters=frozenset(), mappings=False, max_rss_kib=None, also=frozenset()):
    """What to read per process for ``columns`` (Column objects, the sort column included),
    plus ``counters``, ``mappings`` and the needs ``also`` others have (a chart's measure, exact
    accounting, the tables made beside the view's)."""
    wanted = set(view.needs) | set(also)
    for column in columns:
        wanted |= column.needs
    needs = Needs(mappings=mappings or "mappings" in wanted, rollup="rollup" in wanted,
                  status="status" in wanted, cgroup="cgroup" in wanted,
                  pools="pools" in wanted, ksm="ksm" in wanted,
                  counters=frozenset(counters).union(view.counters, *(c.counters for c in columns)))
    needs.max_rss_kib = max_rss_kib
    needs.exact = "exact" in wanted
    needs.split = "split" in wanted
    return needs
