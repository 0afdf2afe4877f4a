"""A capture extracted into a directory, or any /proc tree copied from another machine.

It is a :class:`~smem.sources.live.LiveSource` that is not local: the same
reader, with what a capture says of its machine (CaptureFacts) instead of this
machine's.  The directory may hold ``proc/`` (smem 1.5's layout: ``smem -S
DIR``) or the proc files themselves.  Owners come from the pid directories'
owners, as smem 1.5 takes them (else the status Uid line); names from the
capture's passwd copy, else this machine's (an extracted C smemcap capture has
none).  Only regular files inside the directory are read (LiveSource with
``local=False``): a capture may come from anyone, and we may run as root.
"""

import os
import pwd
import stat

from ..errors import SourceError
from .captured import CaptureFacts
from .live import LiveSource, file_kind

__all__ = ["DirectorySource"]


def _is_real_dir(path):
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


#: names of capture files, as smemcap.sh, smem capture and C smemcap users name them
_CAPTURE_NAMES = (".tgz", ".tar", ".tar.gz", ".tar.bz2", ".tar.xz", ".tar.zst", ".tzst")


def _captures_below(path, limit=4096):
    """"; DIR holds a capture" (a capture extracted one level down) or "; FILE may be one" (the
    folder holding board.tgz) for a directory without meminfo: where the user may have meant."""
    found, files = [], []
    try:
        with os.scandir(path) as entries:
            for _, entry in zip(range(limit), entries):
                if entry.is_dir(follow_symlinks=False):
                    for leaf in ("meminfo", "proc/meminfo"):
                        try:
                            if stat.S_ISREG(os.lstat(os.path.join(entry.path, leaf)).st_mode):
                                found.append(entry.path)
                                break
                        except OSError:
                            pass
                elif entry.is_file(follow_symlinks=False) and entry.name.endswith(_CAPTURE_NAMES):
                    files.append(entry.path)
    except OSError:
        return ""
    if found:
        return f"; {' and '.join(sorted(found)[:2])} hold{'s' if len(found) == 1 else ''} a capture"
    if files:
        return f"; {' and '.join(sorted(files)[:2])} may be one"
    return ""


class DirectorySource(CaptureFacts, LiveSource):
    def __init__(self, path):
        proc = os.path.join(path, "proc")
        proc = proc if _is_real_dir(proc) else path
        super().__init__(path, local=False, proc=proc, sys=os.path.join(proc, "sys"))
        self.path = path
        self.description = f"capture {path}"
        try:
            mode = os.stat("meminfo", dir_fd=self._proc_fd, follow_symlinks=False).st_mode
        except OSError:
            self.close()
            raise SourceError(f"{path}: no meminfo in this directory (not a capture or a proc tree?)"
                              + _captures_below(path)) from None
        if not stat.S_ISREG(mode):
            self.close()
            raise SourceError(f"{path}: meminfo is {file_kind(mode)}, not a file: a capture holds regular files only")

    def _paths(self, prefix):
        """The files four levels down under ``prefix`` (sys/firmware/memmap/N/name); links not followed."""
        top = os.path.join(self.proc, prefix)
        found = []
        for dirpath, _, files in os.walk(top):
            rel = os.path.relpath(dirpath, self.proc)
            found.extend(f"{rel}/{f}" for f in files)
        return [p for p in found if p.count("/") == 4]

    def user_name(self, uid):
        names = self._passwd_names()
        if names:
            return names.get(uid)
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return None
