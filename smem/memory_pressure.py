"""Memory pressure (PSI, Documentation/accounting/psi.rst) of the machine and of cgroups, read
through a source: /proc/pressure/memory (a capture's ``pressure/memory``) and each cgroup v2's
``memory.pressure`` (``sys/fs/cgroup/PATH/memory.pressure``, beside its memory.stat).

How much of the time tasks stalled waiting for memory (reclaim, refaults, swap-in): RAM figures
say what is used, pressure says whether it is too little.
"""

from typing import Dict, NamedTuple, Optional

from .parsers.pressure import KINDS, WINDOWS, parse_pressure

__all__ = ["MemoryPressure", "read_memory_pressure", "cgroup_pressure_path", "pressure_note", "pressure_object", "pressure_notes",
           "SYSTEM_PRESSURE"]

#: the machine's memory pressure, in the /proc namespace
SYSTEM_PRESSURE = "pressure/memory"


class MemoryPressure(NamedTuple):
    system: Optional[Dict]              # parse_pressure of /proc/pressure/memory; None: absent
    cgroups: Dict[str, Dict]            # cgroup v2 path -> parse_pressure of its memory.pressure

    def of_cgroup(self, cgroup, kind, window):
        stalls = self.cgroups.get(cgroup) if cgroup else None
        stall = stalls.get(kind) if stalls else None
        return getattr(stall, window) if stall is not None else None


def cgroup_pressure_path(cgroup):
    """The /sys path of the cgroup v2 ``cgroup``'s memory.pressure, or None (not a plain path)."""
    from .kernel_pools import cgroup_memory_stat_path
    path = cgroup_memory_stat_path(cgroup)
    return None if path is None else path[:-len("memory.stat")] + "memory.pressure"


def _stalls(data):
    return parse_pressure(data) if data else None


def read_memory_pressure(source, cgroups=()) -> MemoryPressure:
    found = {}
    for cgroup in sorted(set(cgroups)):
        path = cgroup_pressure_path(cgroup)
        stalls = _stalls(source.read_sys_optional(path)) if path is not None else None
        if stalls:
            found[cgroup] = stalls
    try:  # (a kernel booted with psi=0 has the file and refuses its read: EOPNOTSUPP)
        system = _stalls(source.read(SYSTEM_PRESSURE))
    except OSError:
        system = None
    return MemoryPressure(system or None, found)


def _figures(stall):
    return " ".join("-" if v is None else f"{v:.2f}" for v in (getattr(stall, w) for w in WINDOWS))


def pressure_note(pressure):
    """The note line of the machine's memory pressure, or None where the kernel has no PSI."""
    if pressure is None or not pressure.system:
        return None
    parts = [f"{kind} {_figures(pressure.system[kind])}" for kind in KINDS if kind in pressure.system]
    return f"memory pressure (/proc/pressure/memory, % of time stalled over avg10 avg60 avg300): {'; '.join(parts)}"


def pressure_notes(pressure):
    """The memory pressure line of -w and --breakdown, where the kernel has PSI (Linux 4.20+)."""
    note = pressure_note(pressure)
    return [note] if note else []


def pressure_object(stalls):
    """JSON of a parse_pressure: {"some": {"avg10": ..., "total_us": ...}, "full": ...}."""
    return {kind: {**{w: getattr(stall, w) for w in WINDOWS}, "total_us": stall.total_us}
            for kind, stall in stalls.items()}
