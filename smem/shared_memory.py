"""Shared memory attributed: every tmpfs mount, tmpfs file, SysV segment and memfd, with how
much of it is in RAM, in swap, mapped by processes and by which.

This is the core the ``--shm`` view (smem/views/shm.py) and the whole-system breakdown
build on: :func:`shared_memory` takes a source and the processes read from it (with
their mappings) and returns typed records.  The inputs:

- /proc/sysvipc/shm (parsers/sysvipc_shm.py): each SysV segment, its size and, on
  Linux 3.10+, its bytes in RAM and swap;
- the ``smem/shmem`` inventory (parsers/shmem_inventory.py): tmpfs mounts (statfs), their
  largest files and the memfds processes hold, made live by sources/shmem_probe.py or
  read from a capture;
- the processes' smaps: a SysV segment is mapped as ``/SYSV%08x (deleted)`` whose inode
  is the segment's shmid (ipc/shm.c sets it), a memfd as ``/memfd:NAME (deleted)``, a
  tmpfs file under its path; a mapping belongs to an object by device and inode, which
  two objects never share, and to a mount by device.

"Mapped" is the sum of the mappers' PSS over the object's mappings: PSS divides each page
among the processes mapping it, so the sum counts every mapped page of the object once
(Documentation/filesystems/proc.rst, "smaps").  "Unmapped" is what is in RAM and no
process maps: a file in /dev/shm nobody has open, a segment nobody attaches.

Where an input is missing (a capture made before these members existed) the objects
that the smaps show are still listed, with what the mappings say, and ``missing`` names
what was not there.  Files are inside their mount: a file's record names its mount
(``parent``) and is not ``counted`` in totals, so that totals count each page once.
"""

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping, Optional, Tuple

from .aggregate import anonymous_pss
from .parsers.meminfo import swap_in_use_kib
from .parsers.shmem_inventory import memfd_name, parse_shmem_inventory
from .parsers.sysvipc_shm import parse_sysvipc_shm

__all__ = ["SharedObject", "Mapper", "SharedMemory", "shared_memory", "KINDS", "SYSVIPC_SHM"]

#: the kinds of object, in the order they are listed (a mount's kind is its filesystem type)
KINDS = ("tmpfs", "devtmpfs", "file", "sysv", "memfd")

SYSVIPC_SHM = "sysvipc/shm"

_SYSV_PREFIX = "/SYSV"
_MEMFD_PREFIX = "/memfd:"


@dataclass(frozen=True)
class Mapper:
    """A process that maps an object (PSS, RSS, swap of its mappings of it, KiB), or holds it
    by a descriptor only (``via`` "fd": no amounts)."""

    pid: int
    name: str
    via: str = "map"
    pss_kib: Optional[int] = 0
    rss_kib: Optional[int] = 0
    swap_kib: Optional[int] = 0

    @property
    def label(self):
        return f"{self.name}[{self.pid}]" + ("(fd)" if self.via == "fd" else "")


def _add(total, value):
    return None if total is None or value is None else total + value


def _sub(total, value):
    return None if total is None or value is None else total - value


@dataclass(frozen=True)
class SharedObject:
    """One shared-memory object; amounts in KiB, None where the source does not say.  Frozen:
    a snapshot's rows are read by the table, the chart and a diff alike."""

    kind: str                          # one of KINDS: a mount's filesystem type, file, sysv, memfd
    name: str                          # mount point, path, "0xKEY id SHMID", memfd name
    size_kib: Optional[int] = None     # a file's or segment's length; a mount's capacity
    used_kib: Optional[int] = None     # in RAM or in swap
    rss_kib: Optional[int] = None      # in RAM
    swap_kib: Optional[int] = None     # in swap
    device: Optional[Tuple[int, int]] = None
    inode: Optional[int] = None        # the shmid of a SysV segment
    parent: Optional[str] = None       # a file's mount point
    fstype: Optional[str] = None       # a mount's filesystem type (tmpfs, devtmpfs)
    attached: Optional[int] = None     # a SysV segment's attach count (the kernel's nattch)
    files: Optional[int] = None        # a mount's regular files, where all were walked
    # by pid: mapping or holding it
    mappers: Mapping[int, Mapper] = field(default_factory=lambda: MappingProxyType({}))
    order: int = 0                     # where it is listed: a mount, then its files, segments, memfds
    mappings: int = 0                  # the mappings of it read (each PSS truncated to a KiB)

    @property
    def identity(self):
        """What tells it from another object of the same name: device (a mount), shmid or inode."""
        device = f"{self.device[0]}:{self.device[1]}" if self.device is not None else "?"
        if self.kind == "sysv":
            return f"shmid {self.inode}"
        return device if self.inode is None else f"{device}:{self.inode}"

    @property
    def key(self):
        """What names this object in another reading of the same machine (smem diff, watch mode).

        A mount: its kind, mount point and device (mounted again, it has another device and
        is another mount).  A file or memfd: device and inode (a memfd's name is anything its
        maker chose, many share one); a file read without them, its mount and path.  A SysV
        segment: its shmid alone, which the kernel does not hand out again soon (a slot
        reused gets a new sequence number, ipc/util.c); its key is no part of it, as
        IPC_RMID makes the key of a segment still attached IPC_PRIVATE (ipc/shm.c), and the
        segment is the same memory after.
        """
        if self.kind == "sysv":
            return ("sysv", self.inode)
        if self.kind in ("file", "memfd"):
            if self.inode is not None and self.device is not None:
                return (self.kind, self.device, self.inode)
            return (self.kind, self.parent, self.name)
        return (self.kind, self.name, self.device)

    @property
    def counted(self):
        """Whether totals count it: a file's pages are its mount's already (a file whose mount
        is not listed is counted: no other row holds its pages)."""
        return self.kind != "file" or self.parent is None

    @property
    def mapping_processes(self):
        return [m for m in self.mappers.values() if m.via == "map"]

    @property
    def mapped_kib(self):
        """Pages of the object that processes map, each once (the mappers' PSS summed)."""
        total = 0
        for mapper in self.mapping_processes:
            total = _add(total, mapper.pss_kib)
        return total

    @property
    def unmapped_kib(self):
        """In RAM and mapped by no process (None where RAM or PSS is unknown).

        smaps truncates each mapping's PSS to a whole KiB, so the mapped sum may fall short by
        less than a KiB a mapping: a difference within that is no page left unmapped.
        """
        mapped = self.mapped_kib
        if self.rss_kib is None or mapped is None:
            return None
        unmapped = self.rss_kib - mapped
        return unmapped if unmapped >= self.mappings else 0

    def rest(self, parts):
        """This mount less ``parts`` (files of it shown on their own): what the rest of its files
        hold, named ``MOUNT (rest)``, so that a chart of the parts and the rest counts each page
        once.  Returns (the rest, the amounts that came out below 0 and were made 0: figures
        read a moment apart, statfs's and the files').  An amount a part lacks is unknown
        (None) in the rest too.
        """
        short = []

        def less(name):
            value = getattr(self, name)
            for part in parts:
                value = _sub(value, getattr(part, name))
            if value is not None and value < 0:
                short.append(name)
                value = 0
            return value

        mappers = {}
        for pid, mapper in self.mappers.items():
            pss, rss, swap = mapper.pss_kib, mapper.rss_kib, mapper.swap_kib
            for part in parts:
                theirs = part.mappers.get(pid)
                if theirs is not None and theirs.via == "map":
                    pss, rss, swap = _sub(pss, theirs.pss_kib), _sub(rss, theirs.rss_kib), _sub(swap, theirs.swap_kib)
            if mapper.via != "map" or any(v != 0 for v in (pss, rss, swap)):
                mappers[pid] = replace(mapper, pss_kib=pss, rss_kib=rss, swap_kib=swap)
        used, rss = less("used_kib"), less("rss_kib")
        swap = max(used - rss, 0) if used is not None and rss is not None else less("swap_kib")
        rest = replace(self, name=f"{self.name} (rest)", size_kib=None, used_kib=used, rss_kib=rss, swap_kib=swap,
                       files=None, mappers=MappingProxyType(mappers),
                       mappings=max(self.mappings - sum(p.mappings for p in parts), 0))
        return rest, tuple(short)


@dataclass(frozen=True)
class SharedMemory:
    objects: Tuple[SharedObject, ...]
    #: the inputs the source lacked (an older capture): "sysvipc/shm", "smem/shmem"
    missing: Tuple[str, ...] = ()


def _kib(n, up=False):
    if n is None:
        return None
    return (n + 1023) // 1024 if up else n // 1024


def _split(allocated, rss, swap_free):
    """Used, RSS and swap (KiB) from allocated and resident bytes; with no swap in use,
    every allocated page is in RAM, whatever the writer could learn."""
    if rss is None and swap_free and allocated is not None:
        rss = allocated
    swap = max(_kib(allocated) - _kib(rss), 0) if allocated is not None and rss is not None else None
    return {"used_kib": _kib(allocated), "rss_kib": _kib(rss), "swap_kib": swap}


def _draft(kind, name, **fields):
    """An object's fields as the builder gathers them (a plain dict: its mappers, pid ->
    [name, via, PSS, RSS, swap], and mappings counted as they are read), made a
    SharedObject once all is read."""
    return {"kind": kind, "name": name, **fields, "mappers": {}, "mappings": 0}


def _note_mapping(draft, process, counters):
    """Add one mapping of ``process`` to the draft's mappers (a holder by fd becomes a mapper)."""
    mappers = draft["mappers"]
    mapper = mappers.get(process.pid)
    if mapper is None or mapper[1] != "map":
        mapper = mappers[process.pid] = [process.name, "map", 0, 0, 0]
    draft["mappings"] += 1
    # the object's own pages only: a private mapping's copy-on-write copies are the
    # process's anonymous memory, not the file's (smaps Anonymous; PSS's part estimated)
    pss, rss, anonymous = counters.get("Pss"), counters.get("Rss"), counters.get("Anonymous")
    anon_pss = anonymous_pss(counters)
    mapper[2] = _add(mapper[2], pss - anon_pss if pss is not None and anon_pss else pss)
    mapper[3] = _add(mapper[3], rss - anonymous if rss is not None and anonymous else rss)
    mapper[4] = _add(mapper[4], counters.get("Swap", 0))


def _built(draft, order):
    mappers = MappingProxyType({pid: Mapper(pid, *mapper) for pid, mapper in draft["mappers"].items()})
    return SharedObject(**{**draft, "mappers": mappers, "order": order})


def _hex_device(text):
    major, _, minor = text.partition(":")
    try:
        return int(major, 16), int(minor, 16)
    except ValueError:
        return None


def _swap_unused(meminfo_kib):
    return swap_in_use_kib(meminfo_kib) == 0


def shared_memory(source, processes, meminfo_kib=None) -> SharedMemory:
    """Every shared-memory object ``source`` shows, attributed to ``processes`` (read with their
    mappings: smem.model.Process); ``meminfo_kib``: the source's meminfo (swap in use)."""
    swap_free = _swap_unused(meminfo_kib or {})
    missing = []
    mounts, files, sysv, memfds = {}, {}, {}, {}  # drafts (_draft) by device, (device, inode), shmid

    raw = source.shmem_inventory()
    if raw is None:
        missing.append("smem/shmem")
    else:
        inventory = parse_shmem_inventory(raw)
        for m in inventory.mounts:
            if m.device not in mounts:
                mounts[m.device] = _draft(m.fstype, m.mount_point, size_kib=_kib(m.capacity), device=m.device,
                                          fstype=m.fstype, files=m.files, **_split(m.used, m.rss, swap_free))
        for f in inventory.files:
            mount = mounts.get(f.device)
            if (f.device, f.inode) not in files:
                files[(f.device, f.inode)] = _draft(
                    "file", f.path, size_kib=_kib(f.size, up=True), device=f.device, inode=f.inode,
                    parent=mount["name"] if mount is not None else None, **_split(f.allocated, f.rss, swap_free))
        for h in inventory.memfds:
            key = (h.device, h.inode)
            draft = memfds.get(key)
            if draft is None:
                draft = memfds[key] = _draft("memfd", h.name, size_kib=_kib(h.size, up=True), device=h.device,
                                             inode=h.inode, **_split(h.allocated, h.rss, swap_free))
            draft["mappers"].setdefault(h.pid, ["?", "fd", None, None, None])

    raw = source.read_optional(SYSVIPC_SHM)
    if raw is None:
        missing.append(SYSVIPC_SHM)
    else:
        for s in parse_sysvipc_shm(raw):
            used = _kib(s.rss + s.swap) if s.rss is not None and s.swap is not None else None
            sysv[s.shmid] = _draft("sysv", _sysv_name(s.key, s.shmid), size_kib=_kib(s.size, up=True), inode=s.shmid,
                                   attached=s.nattch, used_kib=used, rss_kib=_kib(s.rss), swap_kib=_kib(s.swap))

    names = {p.pid: p.name for p in processes}
    for draft in memfds.values():  # a holder's name, where it was read
        for pid, mapper in draft["mappers"].items():
            mapper[0] = names.get(pid, mapper[0])

    prefixes = (_SYSV_PREFIX, _MEMFD_PREFIX, *(m["name"].rstrip("/") + "/" for m in mounts.values()))
    for process in processes:
        for mapping in process.mappings or ():
            name = mapping.name
            if not name.startswith(prefixes):
                continue
            try:
                device, inode = _hex_device(mapping.device), mapping.inode
            except (ValueError, IndexError):
                continue
            if name.startswith(_SYSV_PREFIX):
                draft = sysv.get(inode)
                if draft is None:  # not in sysvipc/shm: an older capture, or removed (IPC_RMID) but attached
                    draft = sysv[inode] = _draft("sysv", _sysv_name(_key_of(name), inode), inode=inode)
                draft["device"] = device
                _note_mapping(draft, process, mapping.counters)
                continue
            if name.startswith(_MEMFD_PREFIX):
                draft = memfds.get((device, inode))
                if draft is None:
                    draft = memfds[(device, inode)] = _draft("memfd", memfd_name(name), device=device, inode=inode)
                _note_mapping(draft, process, mapping.counters)
                continue
            mount = mounts.get(device)
            if mount is None:
                continue
            _note_mapping(mount, process, mapping.counters)
            draft = files.get((device, inode))
            if draft is not None:
                _note_mapping(draft, process, mapping.counters)

    listed = []
    for mount in sorted(mounts.values(), key=lambda d: d["name"]):
        listed.append(mount)
        listed.extend(sorted((f for f in files.values() if f["device"] == mount["device"]),
                             key=lambda d: (-(d["used_kib"] or 0), d["name"])))
    listed.extend(f for f in files.values() if f["device"] not in mounts)
    listed.extend(sorted(sysv.values(), key=lambda d: d["inode"]))
    listed.extend(sorted(memfds.values(), key=lambda d: (d["name"], d["inode"])))
    return SharedMemory(tuple(_built(draft, order) for order, draft in enumerate(listed)), tuple(missing))


def _sysv_name(key, shmid):
    return f"0x{key & 0xFFFFFFFF:08x} id {shmid}" if key is not None else f"id {shmid}"


def _key_of(mapping_name):
    """The key in a SysV mapping's name, ``/SYSV%08x (deleted)``."""
    try:
        return int(mapping_name[len(_SYSV_PREFIX):len(_SYSV_PREFIX) + 8], 16)
    except ValueError:
        return None
