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
resident, at most), since the other clients a buffer is shared with are not named.  A group of
processes (a user, a program, a cgroup) adds its members' split parts and counts each client's
shared memory once, however many of them hold the client.  A region
or client without the keys is absent: ``None``, never 0.

A dma-buf (a buffer shared between devices and processes, Documentation/driver-api/dma-buf.rst)
is named by its inode: the ``ino:`` of an fd's fdinfo, the inode of a ``/dmabuf:`` mapping in
maps.  A process holds it by either; its size (fdinfo ``size:``, else what the kernel lists
of every buffer: /sys/kernel/dmabuf/buffers or debugfs bufinfo, else the largest mapping of
it) is split between the processes holding it: ``dmabuf``, its PSS.  The buffers the kernel
lists that no process holds (by a device driver alone, or by a process not read) are
:attr:`DeviceMemory.unheld_kib`.
"""

from typing import Dict, NamedTuple, Optional, Tuple

from .parsers.maps import dmabuf_mappings  # (the loader imports the maps parser anyway)

# (the fdinfo and dma-buf parsers are imported by the two readers below: every process view
# imports this module for its columns' names, and reads no device unless a device column is asked for)

__all__ = ["DeviceHandles", "Held", "DeviceShare", "DeviceMemory", "read_device_handles", "device_memory",
           "device_shares", "REGION_KINDS", "region_kind", "sum_shares", "DMABUF_SYSFS", "DMABUF_BUFINFO"]

#: the kernel's lists of every dma-buf (/sys paths): sysfs statistics, debugfs
DMABUF_SYSFS = "kernel/dmabuf/buffers"
DMABUF_BUFINFO = "kernel/debug/dma_buf/bufinfo"

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
    """What a process holds of devices: ((fd, DrmFdinfo), ...), ((fd, DmaBufFdinfo), ...) and the
    dma-bufs it maps, ((inode, KiB mapped), ...)."""

    clients: Tuple = ()
    dmabufs: Tuple = ()
    mapped: Tuple = ()


def read_device_handles(source, pid, maps_dmabuf=True) -> Optional[DeviceHandles]:
    """The device fds of ``pid`` as the source has them, parsed, and its dma-buf mappings (maps,
    else a capture's smaps); None where neither can be read.  An fdinfo that is neither a DRM
    client's nor a dma-buf's is left out.  ``maps_dmabuf`` False: the caller has just read the
    process's smaps and no mapping in it is named ``/dmabuf:...``, so neither file is read
    again for them."""
    from .parsers.dmabuf_fdinfo import parse_dmabuf_fdinfo
    from .parsers.drm_fdinfo import parse_drm_fdinfo
    found = source.device_fdinfo(pid)
    maps = source.read_optional(f"{pid}/maps") if maps_dmabuf else None
    if maps is None and maps_dmabuf:
        maps = source.read_optional(f"{pid}/smaps")
    mapped = tuple(sorted(dmabuf_mappings(maps).items())) if maps else ()
    if found is None and not mapped:
        return None
    clients, dmabufs = [], []
    for fd, data in found or ():
        client = parse_drm_fdinfo(data)
        if client is not None:
            clients.append((fd, client))
            continue
        buffer = parse_dmabuf_fdinfo(data)
        if buffer is not None:
            dmabufs.append((fd, buffer))
    return DeviceHandles(tuple(clients), tuple(dmabufs), mapped)


class Held(NamedTuple):
    """What one holder has of one client or dma-buf, KiB unrounded; None where nothing says.
    The split parts (``own``, ``regions``, ``dmabuf``: 1/k each) add up over a group's holders;
    ``shared``, in full, counts once however many of them hold the client."""

    own: Optional[float] = None
    regions: Dict[str, float] = {}
    shared: Optional[int] = None
    dmabuf: Optional[float] = None


class DeviceShare(NamedTuple):
    """A process's (or a group's) device memory, KiB; None where nothing says.  ``held``:
    ((key, Held), ...) of each client ("drm", ...) and dma-buf ("dmabuf", inode) it holds, a key
    once per holder: what :func:`sum_shares` adds a group up from."""

    gpu: Optional[int] = None
    gpushared: Optional[int] = None
    regions: Dict[str, int] = {}    # region kind -> its own share, KiB
    dmabuf: Optional[int] = None
    held: Tuple = ()

    def region(self, kind):
        return self.regions.get(kind)


def _clients_of(pid, handles):
    """{client key: DrmFdinfo} of one process: each client once, whatever fds reach it.  A
    client without an id (a damaged fdinfo) cannot be matched: it is its fd's own."""
    clients = {}
    for fd, client in handles.clients:
        clients.setdefault(client.client or ("fd", pid, fd), client)
    return clients


class DeviceMemory(NamedTuple):
    """The device memory of a snapshot's processes: each one's share, the dma-bufs they hold
    ({inode: KiB}), those the kernel lists ({inode: KiB}; None where it lists none) and whether
    any process's fds were read (a capture without them says nothing of what they hold)."""

    shares: Dict[int, DeviceShare]
    buffers: Dict[int, int]
    listed: Optional[Dict[int, int]] = None
    read: bool = False

    def get(self, pid):
        return self.shares.get(pid)

    @property
    def held_kib(self):
        return sum(self.buffers.values()) if self.buffers or self.listed is not None or self.read else None

    @property
    def unheld(self):
        """(buffers, KiB) the kernel lists that no process read holds; None where it lists none."""
        if self.listed is None:
            return None
        left = [kib for inode, kib in self.listed.items() if inode not in self.buffers]
        return len(left), sum(left)


def listed_dmabufs(source):
    """{inode: KiB} of every dma-buf the kernel lists (sysfs statistics, else debugfs bufinfo,
    through the source: a capture's ``sys/`` members); None where it lists none."""
    from .parsers.dmabuf_buffers import parse_dmabuf_bufinfo, parse_dmabuf_size
    names = [n for n in source.list_sys(DMABUF_SYSFS) if n.isascii() and n.isdigit() and len(n) <= 20]
    if names:
        listed = {}
        for name in names:
            raw = source.read_sys_optional(f"{DMABUF_SYSFS}/{name}/size")
            size = parse_dmabuf_size(raw) if raw is not None else None
            if size is not None:
                listed[int(name)] = size // 1024
        return listed
    data = source.read_sys_optional(DMABUF_BUFINFO)
    if data is None:
        return None
    return {inode: size // 1024 for inode, size in parse_dmabuf_bufinfo(data).items()}


def device_memory(source, processes) -> DeviceMemory:
    """The DeviceMemory of ``processes`` (read with their DeviceHandles) on ``source``'s machine."""
    listed = listed_dmabufs(source)
    processes = list(processes)
    return DeviceMemory(*device_shares(processes, listed), listed, any(p.devices is not None for p in processes))


def _dmabuf_sizes(processes, listed):
    """({inode: KiB}, {inode: holders}) of the dma-bufs the processes hold by fd or mapping."""
    sizes, mapped, holders = {}, {}, {}
    for p in processes:
        if p.devices is None:
            continue
        held = set()
        for _, buffer in p.devices.dmabufs:
            sizes.setdefault(buffer.inode, buffer.size_bytes // 1024)
            held.add(buffer.inode)
        for inode, kib in p.devices.mapped:
            mapped[inode] = max(mapped.get(inode, 0), kib)
            held.add(inode)
        for inode in held:
            holders[inode] = holders.get(inode, 0) + 1
    for inode in holders:
        if inode not in sizes:
            sizes[inode] = (listed or {}).get(inode, mapped.get(inode, 0))
    return sizes, holders


def device_shares(processes, listed=None):
    """({pid: DeviceShare} of the processes that hold device memory, {inode: KiB} of the
    dma-bufs they hold)."""
    processes = [p for p in processes if p.devices is not None and any(p.devices)]  # (most hold none)
    sizes, buffer_holders = _dmabuf_sizes(processes, listed)
    mine = {p.pid: _clients_of(p.pid, p.devices) for p in processes if p.devices is not None}
    holders = {}
    for clients in mine.values():
        for key in clients:
            holders[key] = holders.get(key, 0) + 1
    held = {pid: [(("drm", key), _client_held(client, holders[key])) for key, client in clients.items()]
            for pid, clients in mine.items()}
    for p in processes:
        if p.devices is not None:
            inodes = {b.inode for _, b in p.devices.dmabufs} | {inode for inode, _ in p.devices.mapped}
            held.setdefault(p.pid, []).extend((("dmabuf", i), Held(dmabuf=sizes[i] / buffer_holders[i]))
                                              for i in sorted(inodes))
    shares = {}
    for pid, items in held.items():
        items = [(key, h) for key, h in items if h != Held()]
        if items:
            shares[pid] = _share(items)
    return shares, sizes


def _client_held(client, k):
    """A holder's Held of ``client``, held by ``k`` processes: resident less shared (at least 0)
    split 1/k, by region kind too; shared (no more than resident) in full."""
    own = shared = None
    regions = {}
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
    return Held(own, regions, shared)


def _share(held):
    """The DeviceShare of ``held`` ((key, Held), ...): the split parts added, each client's shared
    memory once (a key held by several of a group's processes is one client)."""
    own = dmabuf = shared = None
    regions, seen = {}, set()
    for key, h in held:
        if h.own is not None:
            own = (own or 0) + h.own
        for kind, part in h.regions.items():
            regions[kind] = regions.get(kind, 0) + part
        if h.dmabuf is not None:
            dmabuf = (dmabuf or 0) + h.dmabuf
        if h.shared is not None and key not in seen:
            shared = (shared or 0) + h.shared
        seen.add(key)
    return DeviceShare(_kib(own), shared, {k: _kib(v) for k, v in regions.items()}, _kib(dmabuf), tuple(held))


def _kib(value):
    return None if value is None else int(round(value))


def sum_shares(shares):
    """One DeviceShare of several (a group's members'); None where none of them has one.  The
    parts split 1/k add up (unrounded, so a group of all a buffer's holders has all of it); a
    client's shared memory, in full, counts once however many members hold the client."""
    shares = [s for s in shares if s is not None]
    if not shares:
        return None
    return _share([item for share in shares for item in share.held])
