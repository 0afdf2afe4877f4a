"""Writing a file the user named with -o: safely when smem runs as root, whole or not at all.

smem often runs as root and ``-o`` names a path anywhere, /tmp included, so
the path is opened the way a careful shell would, never resolved by us first
(``realpath`` followed by a rename is how root gets tricked into replacing
/etc/shadow through a link a local user planted in /tmp):

- a new file is written under a hidden temporary name beside it and linked
  into place only once complete, never over anything that appeared meanwhile;
- an existing regular file is replaced only when it already holds what smem
  writes there (a chart of the same format, a capture; ``looks_like``), is
  empty, or ``--force`` is given, and, without ``--force``, has no other hard
  link.  It is then rewritten in place once the new content is complete, so it
  keeps its inode, owner, mode, links, ACLs and extended attributes, as with
  the shell's ``>``.  In a sticky world-writable directory (/tmp) a file of
  another user is never written, as fs.protected_regular has it: root's report
  would land in a file its owner can read and change;
- a symbolic link is followed only if it belongs to us or to root
  (a link another user owns is what fs.protected_symlinks refuses to follow in
  sticky directories; we refuse it everywhere); the kernel resolves it;
- a FIFO is written as a stream, opened without blocking so that one with no
  reader is an error, not a hang; devices, directories and sockets are refused.

Every refusal is an :class:`~smem.errors.OutputError`: one line, exit 1.
A run interrupted (an exception, SIGTERM, SIGINT) leaves nothing behind and the
old file untouched.
"""

import contextlib
import errno
import os
import shutil
import stat

from .errors import OutputError

__all__ = ["output_file", "CAPTURE_MAGIC"]

#: What a capture starts with: a compressed stream or a tar header ("ustar" at 257 is checked apart).
CAPTURE_MAGIC = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd")

_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFLNK: "a symbolic link"}


def _kind(mode):
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def looks_like_capture(head):
    """Whether ``head`` (the first 512 bytes of a file) starts a capture smem could have written."""
    return head.startswith(CAPTURE_MAGIC) or head[257:262] == b"ustar"


@contextlib.contextmanager
def output_file(path, looks_like=looks_like_capture, force=False, what="file"):
    """A binary file object to write ``path`` with; the result appears only if the block completes.

    ``looks_like(head)``: whether an existing file holds what we write (so may be
    replaced without ``force``).  ``what`` names the content in messages ("chart").
    """
    path = os.fspath(path)
    target = _Target(path, looks_like, force, what)
    if target.fifo is not None:
        with os.fdopen(target.fifo, "wb") as stream:
            yield stream
        return
    scratch = None
    try:
        scratch = _Scratch(path if target.existing is None else None)
        with os.fdopen(scratch.fd, "wb", closefd=False) as out:
            yield out
            out.flush()
        if target.existing is None:
            scratch.link_to(path)
        else:
            target.rewrite_from(scratch.fd)
    finally:
        if scratch is not None:
            scratch.close()
        target.close()


def _sticky_directory_owner(path):
    """The owner of ``path``'s directory if it is sticky and world-writable (as /tmp), else None.

    (Through a link of ours, the link's directory is judged: the target's is not known
    without resolving the path ourselves.)
    """
    try:
        directory = os.stat(os.path.dirname(path) or ".")
    except OSError:
        return None
    sticky = directory.st_mode & stat.S_ISVTX and directory.st_mode & stat.S_IWOTH
    return directory.st_uid if sticky else None


def _appeared(path):
    return OutputError(f"refusing to write {path}: it appeared while smem was writing; run again")


def _error(path, e):
    return OutputError(f"cannot write {path}: {e.strerror or e}")


class _Target:
    """What ``path`` is now: nothing yet, an existing regular file (``existing``), or a FIFO."""

    def __init__(self, path, looks_like, force, what):
        self.path = path
        self.existing = None   # fd of the existing regular file, opened for writing
        self.fifo = None       # fd of a FIFO with a reader
        try:
            link = os.lstat(path)
        except FileNotFoundError:
            return  # a new file (a missing directory is reported when the file is made)
        except OSError as e:
            raise _error(path, e) from None
        follow = stat.S_ISLNK(link.st_mode)
        if follow and link.st_uid not in (0, os.geteuid()):
            raise OutputError(f"refusing to write {path}: it is a symbolic link owned by another user "
                              f"(uid {link.st_uid}); remove it or choose another name")
        try:  # refuse a device before opening it: opening one can act (a tape rewinds)
            mode = os.stat(path).st_mode if follow else link.st_mode
        except OSError:
            mode = stat.S_IFREG  # a dangling link of ours: its target is made below
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise OutputError(f"refusing to write {path}: it is {_kind(mode)}, and -o writes regular files")
        flags = os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            if follow:  # a link of ours to nothing yet: the kernel creates its target
                fd = self._create_through_link(path, flags)
                if fd is None:
                    return
            else:
                return  # gone since lstat: a new file after all
        except OSError as e:
            if e.errno == errno.ENXIO:
                raise OutputError(f"cannot write {path}: a FIFO with no reader") from None
            if e.errno == errno.ELOOP:
                raise OutputError(f"refusing to write {path}: it became a symbolic link") from None
            if e.errno == errno.EISDIR:
                raise OutputError(f"cannot write {path}: a directory") from None
            raise _error(path, e) from None
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode):
            os.set_blocking(fd, True)
            self.fifo = fd
            return
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise OutputError(f"refusing to write {path}: it is {_kind(mode)}, and -o writes regular files")
        self.existing = fd
        info = os.fstat(fd)
        owner = _sticky_directory_owner(path)
        if owner is not None and info.st_uid not in (os.geteuid(), owner):
            self.close()  # as fs.protected_regular: another user's file in /tmp is theirs to read
            raise OutputError(f"refusing to write {path}: it belongs to another user (uid {info.st_uid}) "
                              "in a world-writable directory; remove it or choose another name")
        if not force and info.st_nlink > 1:
            self.close()  # a hard link planted to a file elsewhere would be rewritten there
            raise OutputError(f"refusing to replace {path}: it has {info.st_nlink} hard links; "
                              "give --force to rewrite the file they share")
        if not force and not self._holds_our_kind(looks_like):
            self.close()
            raise OutputError(f"refusing to replace {path}: it exists and does not hold a {what}; "
                              "give --force to replace it")

    @staticmethod
    def _create_through_link(path, flags):
        try:
            return os.open(path, flags | os.O_CREAT, 0o666)
        except OSError as e:
            raise _error(path, e) from None

    def _holds_our_kind(self, looks_like):
        """Empty, or ``looks_like`` its first bytes (read through a second, read-only open)."""
        size = os.fstat(self.existing).st_size
        if size == 0:
            return True
        try:
            with open(f"/proc/self/fd/{self.existing}", "rb") as f:
                head = f.read(512)
        except OSError:
            return False
        return looks_like(head)

    def rewrite_from(self, scratch_fd):
        """Copy the finished scratch file over the existing file's content, in place."""
        fd = self.existing
        try:
            os.set_blocking(fd, True)
            os.ftruncate(fd, 0)
            os.lseek(scratch_fd, 0, os.SEEK_SET)
            with open(scratch_fd, "rb", closefd=False) as src, open(fd, "wb", closefd=False) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            os.fsync(fd)
        except OSError as e:
            raise _error(self.path, e) from None

    def close(self):
        for name in ("existing", "fifo"):
            fd = getattr(self, name)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, None)


class _Scratch:
    """Where the content is written until complete.

    ``path`` given (a new file): a hidden temporary name in ``path``'s directory,
    linked to ``path`` when complete and removed on every way out (SIGTERM and
    SIGHUP unwind too: see cli).  None (an existing file is to be rewritten): an
    unnamed temporary file, which nothing can leave behind.
    """

    def __init__(self, path):
        import tempfile
        self.name = None
        if path is None:
            handle = tempfile.TemporaryFile()
            self.fd = os.dup(handle.fileno())
            handle.close()
            return
        try:
            self.fd, self.name = tempfile.mkstemp(prefix=".smem-", dir=os.path.dirname(path) or ".")
        except OSError as e:
            raise _error(path, e) from None
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(self.fd, 0o666 & ~umask)  # as open() would have made it

    def link_to(self, path):
        """Give the complete file its name; never over something that appeared meanwhile."""
        try:
            os.link(self.name, path)  # fails if path exists, even as a dangling link
        except FileExistsError:
            raise _appeared(path) from None
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.EOPNOTSUPP):
                raise _error(path, e) from None
            if os.path.lexists(path):  # a filesystem without hard links (vfat): rename
                raise _appeared(path) from None
            try:
                os.rename(self.name, path)
                self.name = None
            except OSError as e2:
                raise _error(path, e2) from None

    def close(self):
        with contextlib.suppress(OSError):
            os.close(self.fd)
        if self.name is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.name)
            self.name = None
