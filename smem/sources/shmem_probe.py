"""What the live system says of its shared-memory objects that no /proc file holds, as the text
of a capture's ``smem/shmem`` member (smem/parsers/shmem_inventory.py has the format).

Writing it as that text, rather than handing out statfs results and descriptors, keeps the
parser pure and a capture self-contained: ``smem --shm`` reads a capture and the live system
through the same parser.  What is read, and why it is exact and cheap:

- tmpfs and devtmpfs mounts from /proc/self/mountinfo, each device once; statfs(2) of the
  mount point gives its capacity and the bytes in use (RAM or swap: shmem counts a page
  as used wherever it is).  A mount hidden under another at the same point is not
  reachable by path: its figures are unknown ("-"), never another mount's.
- the regular files of each mount, walked without following links or leaving the device,
  at most WALK_LIMIT entries a mount; the KEPT_FILES largest are listed.  A file's pages
  in RAM come from cachestat(2) (Linux 6.5+: the page cache's count, swapped-out shmem
  pages being "evicted"), one system call that neither maps nor reads the file; where
  cachestat is missing the figure is unknown.
- memfds: each /proc/PID/fd/N whose link reads ``/memfd:NAME (deleted)``, stat(2) and
  cachestat(2) of the descriptor.
"""

import ctypes
import errno
import heapq
import os
import stat

from ..parsers.mountinfo import parse_mountinfo
from ..parsers.shmem_inventory import HEADER, escape

__all__ = ["probe_shmem", "resident_bytes", "SHMEM_FSTYPES", "WALK_LIMIT", "KEPT_FILES"]

#: filesystems whose files live in shmem (RAM or swap), as Shmem in /proc/meminfo counts them
SHMEM_FSTYPES = ("tmpfs", "devtmpfs")
#: entries walked in one mount at most (a /run with a million files is not walked whole)
WALK_LIMIT = 20000
#: files listed per mount: the largest (the rest are in the mount's figures)
KEPT_FILES = 20

_CACHESTAT = 451  # the same number on every architecture (include/uapi/asm-generic/unistd.h)


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Cachestat(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("cache", "dirty", "writeback", "evicted",
                                                      "recently_evicted")]


_libc = None


def resident_bytes(fd, page_size):
    """Bytes of the file open as ``fd`` in the page cache (RAM), or None where the kernel cannot say."""
    global _libc
    if _libc is False:
        return None
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None, use_errno=True)
            _libc.syscall.restype = ctypes.c_long
        except OSError:
            _libc = False
            return None
    whole, result = _Range(0, 0), _Cachestat()
    if _libc.syscall(ctypes.c_long(_CACHESTAT), ctypes.c_long(fd), ctypes.byref(whole), ctypes.byref(result),
                     ctypes.c_long(0)) != 0:
        if ctypes.get_errno() == errno.ENOSYS:
            _libc = False
        return None
    return result.cache * page_size


def _resident_of_path(path, page_size, follow=False):
    """``follow``: ``path`` is a /proc/PID/fd link, opened through (it is the only way to the memfd)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        return resident_bytes(fd, page_size) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    finally:
        os.close(fd)


def _field(value):
    return "-" if value is None else str(value)


def _device(dev):
    return f"{os.major(dev)}:{os.minor(dev)}"


def _walk(top, device, page_size):
    """(files walked or None past the limit, their bytes in RAM or None, the largest files)."""
    largest = []  # heap of (allocated, path, stat)
    count = seen = 0
    rss = 0
    todo = [top]
    while todo:
        directory = todo.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            rss = None
            continue
        for entry in entries:
            seen += 1
            if seen > WALK_LIMIT:
                return None, None, sorted(largest, reverse=True)
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_dev != device:
                continue  # another filesystem mounted inside: its own row
            if stat.S_ISDIR(info.st_mode):
                todo.append(entry.path)
            elif stat.S_ISREG(info.st_mode):
                count += 1
                resident = _resident_of_path(entry.path, page_size)
                rss = None if rss is None or resident is None else rss + resident
                item = (info.st_blocks * 512, entry.path, info, resident)
                if len(largest) < KEPT_FILES:
                    heapq.heappush(largest, item)
                elif item > largest[0]:
                    heapq.heapreplace(largest, item)
    return count, rss, sorted(largest, reverse=True)


def _mount_lines(mountinfo, page_size):
    lines = []
    seen = set()
    for mount in parse_mountinfo(mountinfo):
        if mount.fstype not in SHMEM_FSTYPES or mount.device in seen:
            continue
        seen.add(mount.device)
        device = os.makedev(*mount.device)
        capacity = used = files = rss = None
        largest = []
        try:
            reachable = os.stat(mount.mount_point).st_dev == device
        except OSError:
            reachable = False
        if reachable:
            try:
                fs = os.statvfs(mount.mount_point)
                capacity, used = fs.f_blocks * fs.f_frsize, (fs.f_blocks - fs.f_bfree) * fs.f_frsize
            except OSError:
                pass
            files, rss, largest = _walk(mount.mount_point, device, page_size)
        major_minor = f"{mount.device[0]}:{mount.device[1]}"
        lines.append(f"mount {major_minor} {mount.fstype} {_field(capacity)} {_field(used)} {_field(files)} "
                     f"{_field(rss)} {escape(mount.mount_point)}")
        for allocated, path, info, resident in largest:
            lines.append(f"file {major_minor} {info.st_ino} {info.st_size} {allocated} {_field(resident)} "
                         f"{escape(path)}")
    return lines


def _memfd_lines(proc, pids, page_size):
    lines = []
    resident_of = {}
    for pid in pids:
        fd_dir = os.path.join(proc, str(pid), "fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue  # gone, or not ours to read
        for fd in fds:
            path = os.path.join(fd_dir, fd)
            try:
                link = os.readlink(path)
            except OSError:
                continue
            if not link.startswith("/memfd:") or not fd.isdigit():
                continue
            try:
                info = os.stat(path)
            except OSError:
                continue
            key = (info.st_dev, info.st_ino)
            if key not in resident_of:
                resident_of[key] = _resident_of_path(path, page_size, follow=True)
            lines.append(f"memfd {_device(info.st_dev)} {info.st_ino} {info.st_size} {info.st_blocks * 512} "
                         f"{_field(resident_of[key])} {pid} {fd} {escape(link)}")
    return lines


def probe_shmem(proc, pids):
    """The ``smem/shmem`` text of the live system whose /proc is ``proc``; ``pids``: whose fds to read."""
    page_size = os.sysconf("SC_PAGE_SIZE")
    try:
        with open(os.path.join(proc, "self", "mountinfo"), "rb") as f:
            mountinfo = f.read()
    except OSError:
        mountinfo = b""
    lines = [HEADER, *_mount_lines(mountinfo, page_size), *_memfd_lines(proc, pids, page_size)]
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
