"""Parser for the fdinfo of a DRM (or accel) file descriptor, ``/proc/PID/fdinfo/FD``
(Documentation/gpu/drm-usage-stats.rst, "DRM client usage stats").

One ``key: value`` per line.  ``drm-driver`` says the fd is a DRM client; ``drm-client-id``
names the client (one ``struct drm_file``: fds duplicated, passed or inherited show the same
id), unique on the machine or, where ``drm-pdev`` is printed, on that device.  Memory is per
region (``vram``, ``gtt``, ``system0``, ``memory``, ...): ``drm-total-<region>``,
``drm-shared-<region>`` (buffers shared with other clients), ``drm-resident-<region>``,
``drm-purgeable-<region>``, ``drm-active-<region>``, and the older ``drm-memory-<region>``
(what is resident; amdgpu before Linux 6.10 prints only it).  A value is ``<uint> [KiB|MiB]``,
bytes without a unit.

A key a driver does not print is absent, never 0; other keys (engines, the driver's own)
pass through as text; a value that is no amount (a damaged file, an absurd number) is absent;
a key printed twice keeps its first value.  Not a DRM fd (no ``drm-driver``): None.
"""

from typing import Dict, NamedTuple, Optional

from . import MAX_KIB

__all__ = ["DrmRegion", "DrmFdinfo", "parse_drm_fdinfo", "drm_amount_kib", "MEMORY_KINDS"]

#: the per-region memory keys, ``drm-<kind>-<region>``
MEMORY_KINDS = ("total", "shared", "resident", "purgeable", "active", "memory")

_UNITS = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


class DrmRegion(NamedTuple):
    """One memory region of a client, KiB; None where the driver prints no such key."""

    total: Optional[int] = None
    shared: Optional[int] = None
    resident: Optional[int] = None   # drm-resident-, else the older drm-memory-
    purgeable: Optional[int] = None
    active: Optional[int] = None


class DrmFdinfo(NamedTuple):
    driver: str
    client_id: Optional[str]         # decimal digits; None where absent or damaged
    pdev: Optional[str]
    regions: Dict[str, DrmRegion]
    other: Dict[str, str]            # every other key, its value as text

    @property
    def client(self):
        """What names the client on the machine: (driver, pdev, client id); None without an id."""
        return None if self.client_id is None else (self.driver, self.pdev, self.client_id)


def drm_amount_kib(value):
    """KiB of a value ``<uint> [KiB|MiB]`` (bytes without a unit), rounded down; None for
    anything else.  Words after the amount (a pasted annotation) are ignored."""
    fields = value.split()
    if not fields or not fields[0].isdigit() or not fields[0].isascii() or len(fields[0]) > 20:
        return None
    unit = _UNITS.get(fields[1] if len(fields) > 1 else "")
    if unit is None:
        return None
    kib = int(fields[0]) * unit >> 10
    return kib if kib < MAX_KIB else None


def parse_drm_fdinfo(data) -> Optional[DrmFdinfo]:
    """The DRM client an fdinfo (bytes) describes, or None where it is not a DRM fd's."""
    keys = {}
    for line in data.decode("utf-8", "replace").split("\n"):
        key, sep, value = line.partition(":")
        key = key.strip()
        if sep and key and not any(c.isspace() for c in key):
            keys.setdefault(key, value.strip())
    driver = keys.pop("drm-driver", None)
    if not driver:
        return None
    client_id = keys.pop("drm-client-id", None)
    if client_id is not None and not (client_id.isascii() and client_id.isdigit() and len(client_id) <= 20):
        client_id = None
    pdev = keys.pop("drm-pdev", None) or None
    amounts = {}  # region -> {kind: KiB}
    other = {}
    for key, value in keys.items():
        kind, region = _memory_key(key)
        if kind is None:
            other[key] = value
            continue
        amounts.setdefault(region, {})[kind] = drm_amount_kib(value)
    regions = {}
    for region, kinds in amounts.items():
        resident = kinds.get("resident")
        regions[region] = DrmRegion(kinds.get("total"), kinds.get("shared"),
                                    resident if resident is not None else kinds.get("memory"),
                                    kinds.get("purgeable"), kinds.get("active"))
    return DrmFdinfo(driver, client_id, pdev, regions, other)


def _memory_key(key):
    """(kind, region) of a ``drm-<kind>-<region>`` memory key, else (None, None).

    ``drm-total-cycles-<engine>`` is an engine's, not memory: a region is named by a key of
    its own kind only when its name does not itself start another key (``cycles-``)."""
    if not key.startswith("drm-"):
        return None, None
    kind, sep, region = key[4:].partition("-")
    if not sep or not region or kind not in MEMORY_KINDS or region.startswith("cycles-"):
        return None, None
    return kind, region
