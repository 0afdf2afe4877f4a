"""A /proc tree on a filesystem: the machine smem runs on, or one copied or extracted elsewhere.

``LiveSource(root)`` reads ``root/proc``, ``root/sys`` and ``root/dev/kmsg``
(``/`` by default): one root, so that a test or a copied tree is the same
class as the live system.  ``local=False`` says the tree is not this machine's
now: its processes are not ours, a missing file is not a process that
exited, and, since a tree copied from elsewhere may hold anything, only
regular files inside it are read, never through a symbolic link, at most
what a capture member may hold (base.member_limit; a device, a FIFO or a
link loop is refused like an unreadable file).  The live /proc is read directly: it is the kernel's.
"""

import errno
import os
import pwd
import stat

from ..errors import CaptureError, SourceError
from .base import (MAX_FRAME_MEMBER_BYTES, MAX_MEMBER_BYTES, OWN_PID, PAGEMAP, VANISHING, Source, pid_names,
                   member_limit, size_text)
from .hidden_pids import hidden_by_mount, pid_namespaced
from .proc_files import WHOLE_IF_SHORT, address_space_dir, descriptors, open_live, read_whole, through_a_thread

__all__ = ["LiveSource", "file_kind", "is_device_memory_link", "DEVICE_MEMORY_LINKS"]


def file_kind(mode):
    """What a file of ``mode`` is, in words."""
    for test, name in ((stat.S_ISLNK, "a symlink"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


_running_config = []  # [the running kernel's config text], once found


class LiveSource(Source):
    """The /proc, /sys and /dev/kmsg under ``root``; ``local=False`` for a tree from elsewhere."""

    def __init__(self, root="/", *, local=True, proc=None, sys=None):
        self.root = root
        self.proc = proc if proc is not None else os.path.join(root, "proc")
        self.sys = sys if sys is not None else os.path.join(root, "sys")
        self.kmsg = os.path.join(root, "dev", "kmsg")
        self.local = local
        self.capabilities = frozenset({PAGEMAP, OWN_PID, VANISHING}) if local else frozenset()
        self.description = "live system" if local else f"proc tree {root}"
        self._names = {}
        self._ahead = {}  # {path: bytes} read ahead of the chunk being read (read_ahead)
        self._proc_fd = None
        if not local:
            try:
                self._proc_fd = os.open(self.proc, os.O_RDONLY | os.O_DIRECTORY)
            except OSError as e:
                raise SourceError(f"cannot read {self.proc}: {e.strerror}") from None

    # -- the four primitives ------------------------------------------------------------------

    def pids(self):
        try:
            return pid_names(os.listdir(self._proc_fd if self._proc_fd is not None else self.proc))
        except OSError as e:
            raise SourceError(f"{self.proc}: {e.strerror}") from None

    def read_ahead(self, paths):
        """Live, a chunk's command lines and rollups read in one loop before any is parsed: the
        kernel's walk of each process's page tables and smem's parsing each evict the other's
        working set from the CPU's caches, so taking them in turns cost more than both apart
        (docs/benchmarks.md).  Held until read (or the next chunk's read-ahead)."""
        if not self.local:
            return
        ahead = self._ahead = {}
        proc = self.proc + "/"
        for path in paths:
            try:
                data = read_whole(proc + path, path[path.rfind("/") + 1:] in WHOLE_IF_SHORT)
            except OSError:
                continue  # (read() meets it again and says what it is)
            if data:  # (an empty one may be a thread leader's: read() looks through a thread)
                ahead[path] = data

    def read(self, path):
        if self.local:
            if self._ahead:
                data = self._ahead.pop(path, None)
                if data is not None:
                    return data
            try:
                data = read_whole(self.proc + "/" + path, path[path.rfind("/") + 1:] in WHOLE_IF_SHORT)
            except ProcessLookupError:
                data = through_a_thread(self.proc, path)
                if data is None:
                    raise
                return data
            return data or through_a_thread(self.proc, path) or data
        fd = self._open(path)
        try:
            return _read_bounded(fd, f"{self.root}: {path}", member_limit(path))
        finally:
            os.close(fd)

    def read_at(self, path, offset, length):
        fd = open_live(self.proc, path) if self.local else self._open(path)
        try:
            return os.pread(fd, min(length, MAX_FRAME_MEMBER_BYTES), offset)
        finally:
            os.close(fd)

    def open_process(self, pid, name):
        if not self.local:
            return None  # a copied tree's pagemap is a file: nothing to scan
        # (a Zl's through a live thread: where the leader's pagemap opens and reads nothing, as on
        # kernels whose proc_mem_open gives no mm without an error, as well as where it fails)
        return os.open(f"{address_space_dir(self.proc, pid)}/{name}", os.O_RDONLY | os.O_CLOEXEC)

    def owner(self, pid):
        try:
            if self._proc_fd is not None:
                info = os.stat(str(pid), dir_fd=self._proc_fd, follow_symlinks=False)
            else:
                info = os.stat(os.path.join(self.proc, str(pid)))
        except OSError:
            return self._status_owner(pid)
        return info.st_uid if stat.S_ISDIR(info.st_mode) else self._status_owner(pid)

    def user_name(self, uid):
        if uid not in self._names:
            try:
                self._names[uid] = pwd.getpwuid(uid).pw_name
            except KeyError:
                self._names[uid] = None
        return self._names[uid]

    # -- what no /proc file holds -------------------------------------------------------------

    def firmware_memmap(self):
        root = os.path.join(self.sys, "firmware", "memmap")
        try:
            entries = sorted(os.listdir(root), key=lambda e: (len(e), e))
        except OSError:
            return None
        memmap = []
        for entry in entries:
            try:
                memmap.append(tuple(_read_small(os.path.join(root, entry, name), self.local)
                                    for name in ("start", "end", "type")))
            except OSError:
                continue
        return memmap or None

    def boot_log(self):
        """Every record still in the kernel's log buffer (root only; Documentation/ABI/testing/dev-kmsg)."""
        if not self.local:
            return None
        try:
            fd = os.open(self.kmsg, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return None
        records = []
        try:
            while True:
                try:
                    records.append(os.read(fd, 8192))
                except BlockingIOError:
                    break
                except BrokenPipeError:
                    continue  # a record was overwritten while we read: go on
                except OSError:
                    break
                if not records[-1]:
                    break
        finally:
            os.close(fd)
        return b"\n".join(r.rstrip(b"\n") for r in records) + b"\n" if records else None

    def shmem_inventory(self):
        if not self.local:
            return super().shmem_inventory()
        from .shmem_probe import probe_shmem  # statfs, cachestat: only for --shm and captures
        return probe_shmem(self.proc, self.pids())

    def device_fdinfo(self, pid):
        if not self.local:
            try:
                fd = self._open_directory(f"{pid}/fdinfo")
            except OSError:
                return None
            try:
                names = os.listdir(fd)
            finally:
                os.close(fd)
            return _fdinfo_read(lambda name: self.read(f"{pid}/fdinfo/{name}"), names)
        try:
            where, names = descriptors(self.proc, pid)  # (a Zl process's are a live thread's)
        except OSError:
            return None
        held = []
        for name in names:
            try:
                if is_device_memory_link(os.readlink(f"{where}/fd/{name}")):
                    held.append(name)
            except OSError:
                continue  # closed meanwhile
        return _fdinfo_read(lambda name: read_whole(f"{where}/fdinfo/{name}"), held)

    def hidden(self):
        return hidden_by_mount(self.proc)  # (a directory that is a proc mount may hide them too)

    def kernel_config(self):
        if self.local and self.root == "/" and self.proc == "/proc":
            # the running kernel's, read and unpacked once found: it does not change while smem
            # runs (a watch or a server would read it at every frame); until then it is looked
            # for again (/proc/config.gz comes with `modprobe configs`, /boot may be mounted later)
            if not _running_config:
                config = self._kernel_config()
                if config is None:
                    return None
                _running_config.append(config)
            return _running_config[0]
        return self._kernel_config()

    def _kernel_config(self):
        text = super().kernel_config()
        if text is not None or not self.local:
            return text
        try:  # a distribution's copy (/proc/config.gz needs CONFIG_IKCONFIG_PROC)
            with open(os.path.join(self.root, "boot", f"config-{os.uname().release}"), "rb") as f:
                return f.read(4 << 20)
        except OSError:
            return None

    def read_sys(self, path):
        if not self.local:
            return super().read_sys(path)
        _check_relative(path)
        return _read_small(os.path.join(self.sys, path), True)

    def list_sys(self, path):
        try:
            if self.local:
                _check_relative(path)
                return sorted(os.listdir(os.path.join(self.sys, path)))
            fd = self._open_directory(f"sys/{path}")
            try:
                return sorted(os.listdir(fd))
            finally:
                os.close(fd)
        except OSError:
            return []

    def facts(self):
        if not self.local:
            return {}
        import time
        uname = os.uname()  # (its nodename is gethostname(2)'s on Linux, without importing socket)
        now = time.time()
        facts = {
            "hostname": uname.nodename,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
            "epoch": str(int(now)),
            "pagesize": str(os.sysconf("SC_PAGE_SIZE")),
            "kernel": uname.release,
            "machine": uname.machine,
        }
        if os.path.realpath(self.proc) == "/proc" and pid_namespaced(self.proc):
            facts["pid_namespace"] = "1"  # (said only where it is one: a container's /proc)
        return facts

    def close(self):
        if self._proc_fd is not None:
            os.close(self._proc_fd)
            self._proc_fd = None

    # -- reading a tree that is not ours --------------------------------------------------------

    def _open_directory(self, path):
        """A descriptor of the directory ``path`` inside the tree, no link followed on the way."""
        _check_relative(path)
        fd = self._proc_fd
        for part in path.split("/"):
            fd_next = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            if fd != self._proc_fd:
                os.close(fd)
            fd = fd_next
        return fd if fd != self._proc_fd else os.dup(fd)

    def _open(self, path):
        """A descriptor of the regular file ``path`` inside the tree, opened without following
        links: each directory on the way is opened with O_NOFOLLOW from the one before."""
        parts = path.split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise FileNotFoundError(errno.ENOENT, "not in the tree", path)
        fd = self._proc_fd
        try:
            for part in parts[:-1]:
                fd_next = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                if fd != self._proc_fd:
                    os.close(fd)
                fd = fd_next
            # look before opening: opening a device or FIFO may block or act
            mode = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode
            if stat.S_ISREG(mode):
                leaf = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=fd)
                mode = os.fstat(leaf).st_mode
                if stat.S_ISREG(mode):
                    return leaf
                os.close(leaf)
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
            mode = stat.S_IFLNK  # a symlink where a directory is expected
        finally:
            if fd != self._proc_fd:
                os.close(fd)
        raise PermissionError(errno.EACCES, f"{file_kind(mode)} in the capture, not a file: not read", path)


#: What the link of a descriptor holding device memory starts with: a DRM or accel device
#: node, or a dma-buf (``/dmabuf:NAME`` since Linux 5.3, ``anon_inode:dmabuf`` before).
DEVICE_MEMORY_LINKS = ("/dev/dri/", "/dev/accel/", "/dmabuf:", "anon_inode:dmabuf")


def is_device_memory_link(link):
    return link.startswith(DEVICE_MEMORY_LINKS)


def _fdinfo_read(read, names):
    """[(fd, fdinfo bytes)] of the fds ``names`` still open and readable (``read``: an fd's name to
    its fdinfo's bytes)."""
    found = []
    for name in sorted((n for n in names if n.isascii() and n.isdigit() and len(n) <= 10), key=int):
        try:
            found.append((int(name), read(name)))
        except (OSError, CaptureError):
            continue
    return found


def _check_relative(path):
    if any(p in ("", ".", "..") for p in path.split("/")):
        raise FileNotFoundError(errno.ENOENT, "not a path inside the tree", path)


def _read_bounded(fd, name, limit):
    size = os.fstat(fd).st_size
    if size > limit:
        raise CaptureError(f"{name} is larger than {size_text(limit)}: not a /proc file")
    chunks = []
    total = 0
    while True:  # (/proc files say size 0: read to the end, up to the limit)
        chunk = os.read(fd, max(size - total, 1 << 16))
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            raise CaptureError(f"{name} is larger than {size_text(limit)}: not a /proc file")
        chunks.append(chunk)


def _read_bounded_rest(fd, data, path):
    chunks = [data]
    total = len(data)
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > MAX_MEMBER_BYTES:
            raise PermissionError(errno.EFBIG, "larger than a capture member may be", path)
        chunks.append(chunk)


def _read_small(path, follow):
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PermissionError(errno.EACCES, "not a regular file", path)
        data = os.read(fd, 4096)
        if len(data) < 4096:
            return data  # a /sys attribute: one page at most
        return _read_bounded_rest(fd, data, path)  # a debugfs listing (dma_buf/bufinfo) is longer
    finally:
        os.close(fd)
