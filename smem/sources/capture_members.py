"""Which capture members a reader can ask for: every other is read past and dropped, never held.

A capture comes from anywhere, and under the 4 GiB it may inflate to, a megabyte of gzip can hold
hundreds of MiB of members no report reads.  These are the names smem's capture writers put in
(capture_writer.py, scripts/smemcap.sh, C smemcap, ``--exact``) and its readers ask for: the
machine's /proc files, the capture's own (``passwd``, ``capture-info``, ...), a process's files and
the few /sys files of the system view.  A member named otherwise costs the time to inflate it, not
its size in memory.  tests/test_capture_members.py holds a fresh capture of this machine to it.
"""

from .base import KERNEL_CONFIG_MEMBER, SHMEM_MEMBER, is_pid_name

__all__ = ["member_path", "is_read_member", "MACHINE_MEMBERS", "PROCESS_MEMBERS"]

#: the machine's members, by their proc-relative path (``pressure/memory`` is /proc/pressure/memory)
MACHINE_MEMBERS = frozenset({
    "meminfo", "version", "uptime", "zoneinfo", "swaps", "pressure/memory", "iomem", "dmesg",
    "sysvipc/shm", KERNEL_CONFIG_MEMBER, SHMEM_MEMBER, "passwd", "capture-info",
    "kpages.sparse",  # --exact: the pages' counts (smem.exact.frames.KPAGES_MEMBER)
    "kpagecount", "kpageflags",  # a proc-like tree's raw files, read as the live ones (exact/readers.py)
})

#: a process's members, ``N/LEAF`` (and ``N/fdinfo/FD``); ``frames`` is --exact's (FRAMES_MEMBER),
#: ``pagemap`` a proc-like tree's
PROCESS_MEMBERS = frozenset({"cmdline", "stat", "status", "smaps", "smaps_rollup", "cgroup", "maps",
                             "ksm_merging_pages", "frames", "pagemap"})

_ZRAM = ("mm_stat", "disksize", "comp_algorithm")
_MEMMAP = ("start", "end", "type")
_DMABUF = ("size", "exporter_name")
_CGROUP = ("memory.stat", "memory.pressure")


def member_path(name):
    """The proc-relative path of a member, or None for one we must not use."""
    if name.startswith("/") or "\\" in name:
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        return None
    if parts and parts[0] == "proc" and len(parts) > 1:
        parts = parts[1:]
    return "/".join(parts) or None


def is_read_member(path):
    """Whether a reader may ask for the member at ``path`` (proc-relative: member_path's)."""
    head, sep, leaf = path.partition("/")
    if sep and is_pid_name(head):
        if leaf.startswith("fdinfo/"):
            return is_pid_name(leaf[len("fdinfo/"):])
        return leaf in PROCESS_MEMBERS
    if head == "sys" and sep:
        return _is_sys_member(leaf.split("/"))
    return path in MACHINE_MEMBERS


def _is_sys_member(parts):
    """The /sys files a capture holds (capture_writer.py's _memory_members and _cgroup_members)."""
    n = len(parts)
    if n == 4 and parts[:2] == ["firmware", "memmap"]:
        return parts[3] in _MEMMAP
    if n == 3 and parts[0] == "block":
        return parts[2] in _ZRAM
    if n == 4 and (parts[:3] == ["kernel", "mm", "ksm"] or parts[:3] == ["module", "zswap", "parameters"]):
        return True
    if n == 5 and parts[:3] == ["kernel", "dmabuf", "buffers"]:
        return parts[4] in _DMABUF
    if parts == ["kernel", "debug", "dma_buf", "bufinfo"]:
        return True
    return n >= 3 and parts[:2] == ["fs", "cgroup"] and parts[-1] in _CGROUP
