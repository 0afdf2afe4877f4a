"""The live system: /proc of the machine smem runs on."""

import os
import pwd

from .base import Source, is_pid_name

__all__ = ["LiveSource"]


def _read_small(path):
    with open(path, "rb") as f:
        return f.read()


class LiveSource(Source):
    is_live = True
    description = "live system"

    def __init__(self, root="/proc"):
        self.root = root
        self._names = {}

    def pids(self):
        return sorted(int(e) for e in os.listdir(self.root) if is_pid_name(e))

    def read(self, path):
        with open(os.path.join(self.root, path), "rb", buffering=0) as f:
            return f.readall()

    def read_at(self, path, offset, length):
        fd = os.open(os.path.join(self.root, path), os.O_RDONLY)
        try:
            return os.pread(fd, length, offset)
        finally:
            os.close(fd)

    def owner(self, pid):
        try:
            return os.stat(os.path.join(self.root, str(pid))).st_uid
        except OSError:
            return None

    def user_name(self, uid):
        if uid not in self._names:
            try:
                self._names[uid] = pwd.getpwuid(uid).pw_name
            except KeyError:
                self._names[uid] = None
        return self._names[uid]

    def firmware_memmap(self, root="/sys/firmware/memmap"):
        try:
            entries = sorted(os.listdir(root), key=lambda e: (len(e), e))
        except OSError:
            return None
        memmap = []
        for entry in entries:
            try:
                memmap.append(tuple(_read_small(os.path.join(root, entry, name))
                                    for name in ("start", "end", "type")))
            except OSError:
                continue
        return memmap or None

    def boot_log(self, path="/dev/kmsg"):
        """Every record still in the kernel's log buffer (root only; Documentation/ABI/testing/dev-kmsg)."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
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

    def facts(self):
        import socket
        import time
        uname = os.uname()
        return {
            "hostname": socket.gethostname(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "pagesize": str(os.sysconf("SC_PAGE_SIZE")),
            "kernel": uname.release,
            "machine": uname.machine,
        }
