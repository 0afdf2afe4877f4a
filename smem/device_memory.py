"""Memory processes hold through devices: GPU (DRM and accel) clients, counted once per client.

A DRM client (one open of the device: a ``struct drm_file``) is named by its
``drm-client-id`` (on its ``drm-pdev`` where the driver prints one,
Documentation/gpu/drm-usage-stats.rst).  Its fdinfo is the same through every fd that
reaches it, so a process's fds of one client count once, and a client held by k processes
(an fd passed over a socket, or inherited) is split 1/k between them, as PSS splits a page.
Peers that add the fds up count such a client twice or more.

Per client and region the driver prints resident memory and, of its buffers, those shared
with other clients (``drm-shared-``, counted whether resident or not).  A process's ``gpu`` is
its share of what is resident and its client's own: resident less shared (at least 0),
split as above; ``gpushared`` is the shared memory of its clients, in full (no less than
resident, at most), since the other clients a buffer is shared with are not named.  A region
or client without the keys is absent: ``None``, never 0.
"""

from typing import Dict, NamedTuple, Optional, Tuple

from .parsers.dmabuf_fdinfo import parse_dmabuf_fdinfo
from .parsers.drm_fdinfo import parse_drm_fdinfo

__all__ = ["DeviceHandles", "DeviceShare", "read_device_handles", "device_shares", "REGION_KINDS",
           "region_kind", "sum_shares"]

#: The region columns: which regions' memory each shows, by the drivers' region names.
REGION_KINDS = {
    "vram": "the GPU's own memory: regions vram* (amdgpu, xe), local* (i915)",
    "gtt": "system memory the GPU maps through its GART: region gtt (amdgpu, xe)",
    "sys": "system memory: regions memory (panfrost, panthor, v3d, msm, accel), system* (i915, xe), cpu (amdgpu)",
}


def region_kind(region):
    """The region column a driver's region name belongs to ("vram", "gtt", "sys"), or None
    (stolen memory, and names no driver documents: in ``gpu`` only)."""
    if region.startswith(("vram", "local")):
        return "vram"
    if region == "gtt":
        return "gtt"
    if region in ("memory", "cpu") or region.startswith("system"):
        return "sys"
    return None


class DeviceHandles(NamedTuple):
    """What a process holds of devices: ((fd, DrmFdinfo), ...) and ((fd, DmaBufFdinfo), ...)."""

    clients: Tuple = ()
    dmabufs: Tuple = ()


def read_device_handles(source, pid) -> Optional[DeviceHandles]:
    """The device fds of ``pid`` as the source has them, parsed; None where they cannot be
    listed.  An fdinfo that is neither a DRM client's nor a dma-buf's is left out."""
    found = source.device_fdinfo(pid)
    if found is None:
        return None
    clients, dmabufs = [], []
    for fd, data in found:
        client = parse_drm_fdinfo(data)
        if client is not None:
            clients.append((fd, client))
            continue
        buffer = parse_dmabuf_fdinfo(data)
        if buffer is not None:
            dmabufs.append((fd, buffer))
    return DeviceHandles(tuple(clients), tuple(dmabufs))


class DeviceShare(NamedTuple):
    """A process's (or a group's) device memory, KiB; None where nothing says."""

    gpu: Optional[int] = None
    gpushared: Optional[int] = None
    regions: Dict[str, int] = {}    # region kind -> its own share, KiB
    dmabuf: Optional[int] = None

    def region(self, kind):
        return self.regions.get(kind)


def _clients_of(pid, handles):
    """{client key: DrmFdinfo} of one process: each client once, whatever fds reach it.  A
    client without an id (a damaged fdinfo) cannot be matched: it is its fd's own."""
    clients = {}
    for fd, client in handles.clients:
        clients.setdefault(client.client or ("fd", pid, fd), client)
    return clients


def device_shares(processes) -> Dict[int, DeviceShare]:
    """{pid: DeviceShare} of the processes that hold device memory."""
    mine = {p.pid: _clients_of(p.pid, p.devices) for p in processes if p.devices is not None}
    holders = {}
    for clients in mine.values():
        for key in clients:
            holders[key] = holders.get(key, 0) + 1
    shares = {}
    for pid, clients in mine.items():
        own = shared = None
        regions = {}
        for key, client in clients.items():
            k = holders[key]
            for name, region in client.regions.items():
                if region.resident is None:
                    continue
                in_common = min(region.shared, region.resident) if region.shared is not None else 0
                part = (region.resident - in_common) / k
                own = (own or 0) + part
                kind = region_kind(name)
                if kind is not None:
                    regions[kind] = regions.get(kind, 0) + part
                if region.shared is not None:
                    shared = (shared or 0) + in_common
        if own is not None or shared is not None:
            shares[pid] = DeviceShare(_kib(own), shared, {k: _kib(v) for k, v in regions.items()})
    return shares


def _kib(value):
    return None if value is None else int(round(value))


def sum_shares(shares):
    """One DeviceShare of several (a group's members'); None where none of them has one."""
    shares = [s for s in shares if s is not None]
    if not shares:
        return None

    def total(field):
        values = [getattr(s, field) for s in shares if getattr(s, field) is not None]
        return sum(values) if values else None

    regions = {}
    for share in shares:
        for kind, value in share.regions.items():
            regions[kind] = regions.get(kind, 0) + value
    return DeviceShare(total("gpu"), total("gpushared"), regions, total("dmabuf"))
