"""The directory of a path smem writes as root, reached without being tricked by links.

``-o`` and ``smem serve --textfile`` name a path anywhere, /tmp included, so it is walked the
way a careful shell would and never resolved by name first: each directory on the way opened
without following links, a link among them followed only if it belongs to us or to root (a link
another user owns is what fs.protected_symlinks refuses in sticky directories; we refuse it
everywhere).  Everything after is done relative to the directory reached (output.py).
"""

import errno
import os
import shlex
import stat

from .errors import OutputError

__all__ = ["open_directory", "sticky_directory_owner", "trusted", "kind_of", "not_a_file", "not_ours", "write_error"]

#: Links followed on the way before the path is taken for a loop (the kernel's MAXSYMLINKS).
_MAX_LINKS = 40

_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFLNK: "a symbolic link"}


def kind_of(mode):
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")



def trusted(owner):
    return owner in (0, os.geteuid())



def not_ours(path, uid):
    return OutputError(f"refusing to write {path}: it belongs to another user (uid {uid}) "
                       "in a world-writable directory; remove it or choose another name")


def not_a_file(path, mode):
    """-o naming a device, directory or socket: refused before it is opened (opening one can act:
    a tape rewinds), with the way to any file there is (a shell's redirection of -o -)."""
    hint = f"; -o - writes to standard output, which the shell may send there (-o - > {shlex.quote(path)})" \
        if stat.S_ISCHR(mode) else ""
    return OutputError(f"refusing to write {path}: it is {kind_of(mode)}, and -o writes regular files and FIFOs"
                       + hint)


def write_error(path, e):
    return OutputError(f"cannot write {path}: {e.strerror or e}")


def open_directory(path):
    """(descriptor of ``path``'s directory, the last name): each directory on the way opened without
    following links, a link on the way followed only if it belongs to us or to root."""
    head, leaf = os.path.split(path)
    if leaf in ("", ".", ".."):
        raise OutputError(f"cannot write {path}: a directory")
    flags = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
    fd = os.open("/" if head.startswith("/") else ".", flags)
    parts = [p for p in head.split("/") if p not in ("", ".")]
    links = 0
    try:
        while parts:
            part = parts.pop(0)
            info = os.stat(part, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                if not trusted(info.st_uid):
                    raise OutputError(f"refusing to write {path}: {part!r} on the way is a symbolic link owned "
                                      f"by another user (uid {info.st_uid}); choose another directory")
                links += 1
                if links > _MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
                target = os.readlink(part, dir_fd=fd)
                if target.startswith("/"):
                    os.close(fd)
                    fd = os.open("/", flags)
                parts[:0] = [p for p in target.split("/") if p not in ("", ".")]
                continue
            if not stat.S_ISDIR(info.st_mode):
                raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
            next_fd = os.open(part, flags | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = next_fd
    except OSError as e:
        os.close(fd)
        raise write_error(path, e) from None
    except BaseException:
        os.close(fd)
        raise
    return fd, leaf


def sticky_directory_owner(directory):
    """The owner of the directory if it is sticky and world-writable (as /tmp), else None."""
    info = os.fstat(directory)
    sticky = info.st_mode & stat.S_ISVTX and info.st_mode & stat.S_IWOTH
    return info.st_uid if sticky else None

