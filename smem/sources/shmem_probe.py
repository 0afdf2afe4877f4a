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
  the kernel lacks cachestat (ENOSYS), from mincore(2) (below).
- memfds: each /proc/PID/fd/N whose link reads ``/memfd:NAME (deleted)``, stat(2) and
  cachestat(2) (else mincore(2)) of the descriptor.

The mincore(2) fallback, for kernels before 6.5 (mm/mincore.c): the file is mapped
read-only and shared (PROT_READ, MAP_SHARED: no page is faulted in, none can be written,
no copy is made), MINCORE_WINDOW bytes at a time, each window unmapped as soon as it is
counted; nothing is advised (no madvise, no fadvise), and the file is opened O_NOATIME where
we may (mmap marks a file accessed).  For a shmem (tmpfs, memfd) mapping the kernel looks
each page up in the file's page cache (mincore_page, filemap_get_incore_folio): a page in
the page cache is resident; a page swapped out is resident only while it is still in the
swap cache, and not once it has left it.  So the count matches cachestat's ``cache``
except for swap-cached pages, which cachestat calls evicted.  The kernel's permission rule
(can_do_mincore, Linux 5.0, commit 134fca9063ad, "make mincore() more conservative"): for a
file mapping it reveals the page cache only if the caller owns the file (or has
CAP_FOWNER) or could open it for writing; otherwise it reports EVERY page of the range as
resident, whatever is in RAM.  The probe checks that rule first (effective uid 0, the
file's owner, or write access) and leaves the figure unknown where it fails: root is
always allowed.  Python's mmap object does not give the address mincore needs for a
read-only map, so mmap(2) and munmap(2) are called through ctypes too.
"""

import ctypes
import errno
import heapq
import mmap
import os
import stat

from ..parsers.mountinfo import parse_mountinfo
from ..parsers.shmem_inventory import HEADER, escape
from .proc_files import descriptors

__all__ = ["probe_shmem", "resident_bytes", "mincore_resident_bytes", "SHMEM_FSTYPES", "WALK_LIMIT", "KEPT_FILES",
           "RESIDENCY_METHODS", "MINCORE_WINDOW"]

#: filesystems whose files live in shmem (RAM or swap), as Shmem in /proc/meminfo counts them
SHMEM_FSTYPES = ("tmpfs", "devtmpfs")
#: entries walked in one mount at most (a /run with a million files is not walked whole)
WALK_LIMIT = 20000
#: files listed per mount: the largest (the rest are in the mount's figures)
KEPT_FILES = 20

_CACHESTAT = 451  # the same number on every architecture (include/uapi/asm-generic/unistd.h)

#: how a file's pages in RAM are counted: "auto" (cachestat where the kernel has it, else
#: mincore), or one of them forced (tests compare the two on the same file)
RESIDENCY_METHODS = ("auto", "cachestat", "mincore")
#: the most of a file mapped at once by the mincore fallback (address space only: no page is
#: faulted in; the vector mincore fills is a byte a page, 256 KiB a window of 4 KiB pages)
MINCORE_WINDOW = 1 << 30


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Cachestat(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("cache", "dirty", "writeback", "evicted",
                                                      "recently_evicted")]


_LOW_BIT = bytes(i & 1 for i in range(256))

_libc = None
_cachestat_missing = False  # the kernel said ENOSYS: the mincore fallback from then on


def _load_libc():
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None, use_errno=True)
            _libc.syscall.restype = ctypes.c_long
            # a 64-bit offset on every ABI: mmap64 where off_t is 32 bits (32-bit glibc and musl)
            _libc.map = _libc.mmap if ctypes.sizeof(ctypes.c_long) >= 8 else getattr(_libc, "mmap64", None)
            if _libc.map is not None:
                _libc.map.restype = ctypes.c_void_p
                _libc.map.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                      ctypes.c_int64]
            _libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            _libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        except (OSError, AttributeError):
            _libc = False
    return _libc


def resident_bytes(fd, page_size):
    """Bytes of the file open as ``fd`` in the page cache (RAM) by cachestat(2), or None where
    the kernel cannot say (no cachestat: ENOSYS, remembered; not ours to ask: EPERM)."""
    global _cachestat_missing
    libc = _load_libc()
    if not libc or _cachestat_missing:
        return None
    whole, result = _Range(0, 0), _Cachestat()
    if libc.syscall(ctypes.c_long(_CACHESTAT), ctypes.c_long(fd), ctypes.byref(whole), ctypes.byref(result),
                    ctypes.c_long(0)) != 0:
        if ctypes.get_errno() == errno.ENOSYS:
            _cachestat_missing = True
        return None
    return result.cache * page_size


def _may_see_page_cache(fd, info):
    """mm/mincore.c can_do_mincore: the caller owns the file (or is root: CAP_FOWNER) or could
    open it for writing; else mincore calls every page resident."""
    euid = os.geteuid()
    if euid == 0 or info.st_uid == euid:
        return True
    path = f"/proc/self/fd/{fd}"
    if os.access in os.supports_effective_ids:
        return os.access(path, os.W_OK, effective_ids=True)
    return os.access(path, os.W_OK)


def mincore_resident_bytes(fd, page_size, window=MINCORE_WINDOW):
    """Bytes of the file open as ``fd`` in RAM by mincore(2) over read-only shared mappings of
    it, ``window`` bytes at a time; None where the kernel would not say (see the module's
    docstring) or the file cannot be mapped."""
    libc = _load_libc()
    if not libc or libc.map is None:
        return None
    try:
        info = os.fstat(fd)
    except OSError:
        return None
    if not _may_see_page_cache(fd, info):
        return None
    window -= window % page_size
    failed = ctypes.c_void_p(-1).value
    resident = 0
    for offset in range(0, info.st_size, window):
        length = min(window, info.st_size - offset)
        address = libc.map(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, offset)
        if address in (None, failed):
            return None
        try:
            vector = (ctypes.c_ubyte * ((length + page_size - 1) // page_size))()
            if libc.mincore(ctypes.c_void_p(address), length, vector) != 0:
                return None
        finally:
            libc.munmap(ctypes.c_void_p(address), length)
        resident += bytes(vector).translate(_LOW_BIT).count(1)  # bit 0: resident; the rest reserved
    return resident * page_size


def _resident_of_fd(fd, page_size, method):
    if method == "mincore" or (method == "auto" and _cachestat_missing):
        return mincore_resident_bytes(fd, page_size)
    resident = resident_bytes(fd, page_size)
    if resident is None and method == "auto" and _cachestat_missing:
        return mincore_resident_bytes(fd, page_size)
    return resident


def _resident_of_path(path, page_size, method, follow=False):
    """``follow``: ``path`` is a /proc/PID/fd link, opened through (it is the only way to the memfd).

    Opened O_NOATIME where the kernel lets us (the owner, or root), since mapping a file for
    mincore marks it accessed."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        try:
            fd = os.open(path, flags | os.O_NOATIME)
        except PermissionError:
            fd = os.open(path, flags)
    except OSError:
        return None
    try:
        return _resident_of_fd(fd, page_size, method) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    finally:
        os.close(fd)


def _field(value):
    return "-" if value is None else str(value)


def _device(dev):
    return f"{os.major(dev)}:{os.minor(dev)}"


def _walk(top, device, page_size, method):
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
                resident = _resident_of_path(entry.path, page_size, method)
                rss = None if rss is None or resident is None else rss + resident
                item = (info.st_blocks * 512, entry.path, info, resident)
                if len(largest) < KEPT_FILES:
                    heapq.heappush(largest, item)
                elif item > largest[0]:
                    heapq.heapreplace(largest, item)
    return count, rss, sorted(largest, reverse=True)


def _mount_lines(mountinfo, page_size, method):
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
            files, rss, largest = _walk(mount.mount_point, device, page_size, method)
        major_minor = f"{mount.device[0]}:{mount.device[1]}"
        lines.append(f"mount {major_minor} {mount.fstype} {_field(capacity)} {_field(used)} {_field(files)} "
                     f"{_field(rss)} {escape(mount.mount_point)}")
        for allocated, path, info, resident in largest:
            lines.append(f"file {major_minor} {info.st_ino} {info.st_size} {allocated} {_field(resident)} "
                         f"{escape(path)}")
    return lines


def _memfd_lines(proc, pids, page_size, method):
    lines = []
    resident_of = {}
    for pid in pids:
        try:
            where, fds = descriptors(proc, pid)  # (a Zl process's are a live thread's)
        except OSError:
            continue  # gone, or not ours to read
        fd_dir = f"{where}/fd"
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
                resident_of[key] = _resident_of_path(path, page_size, method, follow=True)
            lines.append(f"memfd {_device(info.st_dev)} {info.st_ino} {info.st_size} {info.st_blocks * 512} "
                         f"{_field(resident_of[key])} {pid} {fd} {escape(link)}")
    return lines


def probe_shmem(proc, pids, residency="auto"):
    """The ``smem/shmem`` text of the live system whose /proc is ``proc``; ``pids``: whose fds to read;
    ``residency``: one of RESIDENCY_METHODS (tests force the mincore fallback with it)."""
    if residency not in RESIDENCY_METHODS:
        raise ValueError(f"residency: one of {', '.join(RESIDENCY_METHODS)}")
    page_size = os.sysconf("SC_PAGE_SIZE")
    try:
        with open(os.path.join(proc, "self", "mountinfo"), "rb") as f:
            mountinfo = f.read()
    except OSError:
        mountinfo = b""
    lines = [HEADER, *_mount_lines(mountinfo, page_size, residency),
             *_memfd_lines(proc, pids, page_size, residency)]
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
