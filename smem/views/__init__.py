"""Views: the shapes of a report (process, mapping, user, system).

Each view turns a :class:`~smem.model.Snapshot` into rows and declares its
columns in the registry of :mod:`smem.views.columns`.
"""

from .mapping import MAPPING_VIEW
from .process import PROCESS_VIEW
from .system import SYSTEM_VIEW
from .user import USER_VIEW

__all__ = ["VIEWS", "PROCESS_VIEW", "MAPPING_VIEW", "USER_VIEW", "SYSTEM_VIEW"]

VIEWS = {v.name: v for v in (PROCESS_VIEW, MAPPING_VIEW, USER_VIEW, SYSTEM_VIEW)}
