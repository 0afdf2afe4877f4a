"""Writing a capture: the /proc files smem needs, from any source, into a tar.

The layout (docs/capture-format.md) is C smemcap's with additions: per
process ``status`` and ``smaps_rollup``; ``iomem``, the firmware memory map and
the kernel's boot "Memory:" line for the system view; ``zoneinfo`` and ``swaps`` for
the system view's breakdown; ``sysvipc/shm`` and the ``smem/shmem`` inventory (tmpfs
mounts, their files, memfds) for ``--shm``; zram, KSM and zswap files from /sys, and the
cgroup v2 ``memory.stat`` of each process's cgroup (its zswap share, for the ``zswap`` column)
and its ``memory.pressure``, and the machine's ``pressure/memory``; the kernel's configuration
(``config.gz``: whether its PSS are estimates);
the ``fdinfo/FD`` of each process's DRM and dma-buf descriptors (GPU and dma-buf memory) and
the kernel's lists of dma-bufs (/sys/kernel/dmabuf/buffers, debugfs bufinfo);
``passwd`` lines for the users that own processes; and ``capture-info`` with the
machine's facts, twice: first, with what is known at the start (so a plain tar cut anywhere after
it holds one, which says its writer ends the archive: the reader refuses it as cut, where a cut
before a capture-info at the end looked like a whole C smemcap capture), and last, whole, with
what writing counted (LATE_FACTS); readers take the last.  Extracted into DIR/proc it is
readable by smem 1.5 as ``smem -S DIR``.
"""

import io
import os
import tarfile
import time
from typing import NamedTuple

from . import __version__
from .compression import DEFAULT_WRITTEN
from .device_memory import DMABUF_BUFINFO, DMABUF_SYSFS
from .kernel_pools import cgroup_memory_stat_path
from .loading.process import kernel_gives_no_smaps, read_meminfo
from .memory_pressure import SYSTEM_PRESSURE, cgroup_pressure_path
from .parsers.cgroup import cgroup_v2_path
from .parsers.smaps import parse_smaps
from .parsers.stat import parse_stat
from .sources.base import KERNEL_CONFIG_MEMBER, OWN_PID, SHMEM_MEMBER

__all__ = ["write_capture", "Written", "PROCESS_FILES", "SYSTEM_FILES", "ZRAM_FILES", "SYS_DIRECTORIES", "LATE_FACTS"]

PROCESS_FILES = ("smaps", "smaps_rollup", "cmdline", "stat", "status", "cgroup")
_ROLLUP_FIRST = ("smaps_rollup", "smaps", "cmdline", "stat", "status", "cgroup")
#: what each /sys/block/zramN gives of its memory (Documentation/admin-guide/blockdev/zram.rst)
ZRAM_FILES = ("mm_stat", "disksize", "comp_algorithm")
#: /sys directories copied whole: KSM (Documentation/admin-guide/mm/ksm.rst) and zswap's settings
SYS_DIRECTORIES = ("kernel/mm/ksm", "module/zswap/parameters")
#: capture-info's facts known only once every process is written: the first capture-info has
#: none of them, the last has every fact
LATE_FACTS = ("unreadable_processes", "unreadable_by_root", "hidepid")


def _sys_files(source, directory, names):
    for name in names:
        try:
            yield f"sys/{directory}/{name}", source.read_sys(f"{directory}/{name}")
        except OSError:
            continue  # absent on this kernel, or write-only


def _memory_members(source):
    """(member, bytes) of what the shm view and the system breakdown read beyond /proc/meminfo."""
    sysv = source.read_optional("sysvipc/shm")
    if sysv is not None:
        yield "sysvipc/shm", sysv
    inventory = source.shmem_inventory()
    if inventory is not None:
        yield SHMEM_MEMBER, inventory
    for device in source.list_sys("block"):
        if device.startswith("zram"):
            yield from _sys_files(source, f"block/{device}", ZRAM_FILES)
    for directory in SYS_DIRECTORIES:
        yield from _sys_files(source, directory, source.list_sys(directory))
    for buffer in source.list_sys(DMABUF_SYSFS):
        yield from _sys_files(source, f"{DMABUF_SYSFS}/{buffer}", ("size", "exporter_name"))
    try:
        yield f"sys/{DMABUF_BUFINFO}", source.read_sys(DMABUF_BUFINFO)
    except OSError:
        pass  # no debugfs, or not root

def _cgroup_members(source, cgroups):
    """(member, bytes) of the memory.stat and memory.pressure of each cgroup v2 path in
    ``cgroups`` that has them."""
    for cgroup in sorted(cgroups):
        for path in (cgroup_memory_stat_path(cgroup), cgroup_pressure_path(cgroup)):
            if path is None:
                continue
            try:
                yield f"sys/{path}", source.read_sys(path)
            except OSError:
                continue  # cgroup v1, no memory controller or PSI there, or the cgroup is gone


#: /proc files the -w breakdown reads beyond meminfo: the per-CPU free lists, which devices are swap,
#: memory pressure; and the time since boot, for the cpu column
SYSTEM_FILES = ("zoneinfo", "swaps", SYSTEM_PRESSURE, "uptime")


class _Writer:
    def __init__(self, tar):
        self.tar = tar
        self.now = int(time.time())

    def file(self, name, data, mode=0o444):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mode = mode
        info.mtime = self.now
        self.tar.addfile(info, io.BytesIO(data))

    def directory(self, name, uid, uname):
        info = tarfile.TarInfo(name)
        info.type = tarfile.DIRTYPE
        info.mode = 0o555
        info.mtime = self.now
        if uid is not None:
            info.uid = info.gid = uid
        info.uname = uname or ""
        self.tar.addfile(info)


def _passwd_field(name):
    """A user name as one passwd(5) field: a ':' or newline (a hostile host's tar) would
    add fields or lines."""
    return "".join("?" if c == ":" or not c.isprintable() else c for c in name)


def _info(facts):
    """capture-info's bytes: a ``key=value`` line a fact."""
    lines = (f"{k}={' '.join(str(v).split())}\n" for k, v in facts.items())  # one line each
    return "".join(lines).encode("utf-8", "surrogateescape")


def _comm(stat):
    try:
        return parse_stat(stat).comm
    except ValueError:
        return None


class Written(NamedTuple):
    """What a capture holds of the processes."""

    processes: int     # written
    skipped: list      # [(pid, name)] of those that could not be read
    no_smaps: bool     # the kernel gives no smaps: each process written without its memory


def write_capture(source, fileobj, compression=DEFAULT_WRITTEN, exact=False, with_smaps=True):
    """Write a capture of ``source`` to ``fileobj``; returns what it wrote (Written).

    A kernel without /proc/PID/smaps (kernel_gives_no_smaps) has its processes written without
    them (their cmdline, stat, status): the capture's reader says that no process's memory could
    be measured, not that processes could not be read (which running as root would not change).

    With ``exact``, also the frames each process maps and their map counts
    (smem.exact), so that ``smem -S CAPTURE --exact`` works offline.  With ``with_smaps=False``
    a process's smaps is left out where its smaps_rollup says the same sums (a recording's
    frames between those that keep smaps: smem.recording).
    """
    if exact:
        from .exact import exact_capture_members, frame_reader
        frame_reader(source).check()  # not root, no kpagecount: fail before writing anything
    mappings = {}
    read_meminfo(source)  # a source without meminfo cannot make a capture
    no_smaps = kernel_gives_no_smaps(source)
    machine = source.machine()  # (its time is the capture's start, with its meminfo: not its end)
    mode = "w|" + compression if compression else "w|"
    written, skipped = 0, []
    users = {}
    cgroups = set()  # the processes' cgroup v2 paths
    with tarfile.open(fileobj=fileobj, mode=mode, format=tarfile.GNU_FORMAT) as tar:
        out = _Writer(tar)
        facts = machine.as_facts()
        facts["tool"] = f"smem {__version__}"
        facts.setdefault("epoch", out.now)
        # first: a tar cut after it says it is cut (it ends without the zero blocks its writer puts
        # there); writable, so that an extraction writing the last over it in place (Python's
        # tarfile, not root) may
        out.file("capture-info", _info({k: v for k, v in facts.items() if k not in LATE_FACTS}), mode=0o644)
        for name in ("meminfo", "version", *SYSTEM_FILES):
            data = source.read_optional(name)
            if data is not None:
                out.file(name, data)
        # the capturing smem is no part of what it captures: a capture of the same machine taken a
        # minute later would have it as a process gone and another new (smem diff, --compare)
        own = os.getpid() if source.has(OWN_PID) else None
        for pid in source.pids():
            if pid == own:
                continue
            files = {}
            for name in PROCESS_FILES if with_smaps else _ROLLUP_FIRST:
                if name == "smaps" and files.get("smaps_rollup") and not with_smaps:
                    continue
                data = source.read_optional(f"{pid}/{name}")
                if data is not None:
                    files[name] = data
            if not ("smaps" in files or "smaps_rollup" in files or no_smaps) or "stat" not in files:
                if "stat" in files:  # unreadable, as opposed to gone
                    skipped.append((pid, _comm(files["stat"])))
                continue
            uid = source.owner(pid)
            uname = source.user_name(uid) if uid is not None else None
            if uid is not None and uname:
                users[uid] = uname
            out.directory(str(pid), uid, uname)
            for name, data in files.items():
                out.file(f"{pid}/{name}", data)
            for fd, data in source.device_fdinfo(pid) or ():
                out.file(f"{pid}/fdinfo/{fd}", data)
            written += 1
            if "cgroup" in files:
                cgroup = cgroup_v2_path(files["cgroup"])
                if cgroup is not None:
                    cgroups.add(cgroup)
            if exact and "smaps" in files:
                try:
                    mappings[pid] = parse_smaps(files["smaps"])
                except ValueError:
                    pass
        log = source.boot_log()
        if log:
            memory = b"".join(line + b"\n" for line in log.splitlines() if b"Memory:" in line)
            if memory:
                out.file("dmesg", memory)
        config = source.kernel_config()
        if config:
            import gzip
            out.file(KERNEL_CONFIG_MEMBER, gzip.compress(config, mtime=0))
        iomem = source.read_optional("iomem")
        if iomem is not None:
            out.file("iomem", iomem)
        for index, (start, end, kind) in enumerate(source.firmware_memmap() or ()):
            for name, data in (("start", start), ("end", end), ("type", kind)):
                out.file(f"sys/firmware/memmap/{index}/{name}", data)
        for name, data in _memory_members(source):
            out.file(name, data)
        for name, data in _cgroup_members(source, cgroups):
            out.file(name, data)
        out.file("passwd", "".join(f"{_passwd_field(name)}:x:{uid}:{uid}::/:/nonexistent\n"
                                   for uid, name in sorted(users.items())).encode("utf-8", "surrogateescape"))
        left_out = len(skipped) + facts.pop("unreadable_processes", 0)  # (a remote capture's own too)
        if left_out:
            facts["unreadable_processes"] = left_out
        if skipped and source.local and os.geteuid() == 0:
            facts["unreadable_by_root"] = 1
        hidden = source.hidden()
        if hidden is not None:
            facts["hidepid"] = hidden.mode
        out.file("capture-info", _info(facts))  # (the last, whole: what readers take)
        if exact:
            # the frames of the very mappings whose smaps the capture holds, read right after
            pids = sorted(pid for pid, maps in mappings.items() if maps)
            for name, data in exact_capture_members(source, pids, mappings).items():
                out.file(name, data)
    return Written(written, skipped, no_smaps)
