"""Writing a file the user named with -o, safely when smem runs as root.

smem often runs as root and ``-o`` names a path anywhere, /tmp included, so
the path is walked the way a careful shell would and never resolved by name
first (``realpath`` followed by a rename is how root gets tricked into
replacing /etc/shadow through a link a local user planted in /tmp):

- the directories on the way are opened one by one without following links;
  a link among them, or the file itself as a link, is followed only if it
  belongs to us or to root (a link another user owns is what
  fs.protected_symlinks refuses to follow in sticky directories; we refuse it
  everywhere).  Everything after is done relative to the directory reached;
- a new file is written under a hidden temporary name beside it and linked
  into place only once complete, never over anything that appeared meanwhile;
- an existing regular file is rewritten in place once the new content is
  complete (it keeps its inode, owner, mode, ACLs and extended attributes, as
  with the shell's ``>``) only when it already holds what smem writes there (a
  chart of the same format, a capture; ``looks_like``) or is empty, and has no
  other hard link.  ``--force`` replaces any regular file instead: a new file
  takes the name (with the old one's permissions), so no second link to the old
  inode is ever written through;
- in a sticky world-writable directory (/tmp) a file or FIFO of another user
  is never written, as fs.protected_regular and protected_fifos have it: root's
  report would go to that user;
- a FIFO is written as a stream, without blocking for ever: one with no reader
  is an error at once, a reader that stops reading for FIFO_STALL_SECONDS or
  goes away is an error; devices, directories and sockets are refused unopened.

Every refusal is an :class:`~smem.errors.OutputError`: one line, exit 1.  A
run interrupted before the content is complete (an exception, SIGTERM, SIGINT)
leaves nothing behind and an existing file untouched; an in-place rewrite
interrupted while it copies leaves the file cut short, as ``>`` would.
"""

import contextlib
import errno
import os
import secrets
import shutil
import stat

from .errors import OutputError
from .output_path import kind_of, not_a_file, not_ours, open_directory, sticky_directory_owner, trusted, write_error

__all__ = ["output_file", "replace_file", "looks_like_capture", "FIFO_STALL_SECONDS"]

#: A FIFO whose reader takes nothing for this long is given up (a reader that never reads must
#: not hold root's smem for ever).
FIFO_STALL_SECONDS = 60


#: how much of each end of an existing file is read to tell whether it holds what is written (of
#: its start, as much as a capture's check looks at: smem.capture_head.HEAD_BYTES)
_ENDS = 4096


def looks_like_capture(head, tail=b""):
    """Whether ``head`` (the first bytes of a file) starts a capture smem could have written: a tar
    archive, plain or compressed, whose first member is a capture's (smem.capture_head)."""
    from .capture_head import holds_capture
    return holds_capture(head)


@contextlib.contextmanager
def output_file(path, looks_like=looks_like_capture, force=False, what="file", private=False):
    """A binary file object to write ``path`` with; the result appears only if the block completes.

    ``looks_like(head, tail)``: whether an existing file holds what we write (so may be
    rewritten without ``force``); ``what`` names the content in messages ("png
    chart"); ``private``: a new file is made 0600 (a capture holds every process's
    command line and memory map, which /proc shows to their owners only).
    """
    path = os.fspath(path)
    directory, leaf = open_directory(path)
    target = scratch = None
    try:
        target = _Target(directory, leaf, path, looks_like, force, what)
        if target.fifo is not None:
            with _FifoWriter(target.fifo, path) as stream:
                yield stream
            return
        scratch = _Scratch(directory if target.writes_a_name else None, path, target.mode(private))
        with os.fdopen(scratch.fd, "wb", closefd=False) as out:
            yield out
            out.flush()
        if target.existing is None:
            scratch.link_to(leaf)
        elif target.replace:
            scratch.rename_to(leaf)
        else:
            target.rewrite_from(scratch.fd)
    finally:
        if scratch is not None:
            scratch.close()
        if target is not None:
            target.close()
        os.close(directory)


def replace_file(path, data, mode=0o644):
    """Write ``data`` to ``path`` so that a reader sees the old file or the new one, never a part.

    For a file read while it is rewritten (``smem serve --textfile``: node_exporter's
    textfile collector reads whenever it is scraped): the directories on the way are
    walked as for -o; the content goes to a hidden temporary name beside it (which
    a ``*.prom`` glob does not match), is synced, made ``mode`` and renamed over the
    name.  A directory, device, FIFO or socket there is refused; a symbolic link
    there is replaced, never written through; in a sticky world-writable directory
    another user's file is refused as -o refuses it.
    """
    path = os.fspath(path)
    directory, leaf = open_directory(path)
    scratch = None
    try:
        try:
            info = os.stat(leaf, dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        except OSError as e:
            raise write_error(path, e) from None
        if info is not None and not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
            raise OutputError(f"refusing to write {path}: it is {kind_of(info.st_mode)}")
        sticky_owner = sticky_directory_owner(directory)
        if info is not None and sticky_owner is not None and info.st_uid not in (os.geteuid(), sticky_owner):
            raise not_ours(path, info.st_uid)
        scratch = _Scratch(directory, path, mode)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(scratch.fd, view):]
            os.fsync(scratch.fd)
        except OSError as e:
            raise write_error(path, e) from None
        scratch.rename_to(leaf)
    finally:
        if scratch is not None:
            scratch.close()
        os.close(directory)


def _appeared(path):
    return OutputError(f"refusing to write {path}: it appeared while smem was writing; run again")




class _Target:
    """What the name is now: nothing yet, an existing regular file (``existing``), or a FIFO."""

    def __init__(self, directory, leaf, path, looks_like, force, what):
        self.path = path
        self.existing = None     # fd of the existing regular file
        self.existing_mode = None
        self.fifo = None         # fd of a FIFO with a reader
        self.replace = False     # --force on a file of ours: a new file takes the name
        try:
            link = os.stat(leaf, dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            return  # a new file
        except OSError as e:
            raise write_error(path, e) from None
        follow = stat.S_ISLNK(link.st_mode)
        if follow and not trusted(link.st_uid):
            raise OutputError(f"refusing to write {path}: it is a symbolic link owned by another user "
                              f"(uid {link.st_uid}); remove it or choose another name")
        try:  # refuse a device before opening it: opening one can act (a tape rewinds)
            mode = os.stat(leaf, dir_fd=directory).st_mode if follow else link.st_mode
        except OSError:
            mode = stat.S_IFREG  # a dangling link of ours: its target is made below
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise not_a_file(path, mode)
        sticky_owner = None if follow else sticky_directory_owner(directory)
        if sticky_owner is not None and link.st_uid not in (os.geteuid(), sticky_owner):
            raise not_ours(path, link.st_uid)  # before opening: a FIFO's reader learns nothing
        flags = os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
        try:
            fd = os.open(leaf, flags | (os.O_CREAT if follow else 0), 0o666, dir_fd=directory)
        except FileNotFoundError:
            return  # gone since we looked: a new file after all
        except OSError as e:
            if e.errno == errno.ENXIO:
                raise OutputError(f"cannot write {path}: a FIFO with no reader") from None
            if e.errno == errno.ELOOP:
                raise OutputError(f"refusing to write {path}: it became a symbolic link") from None
            raise write_error(path, e) from None
        info = os.fstat(fd)
        if sticky_owner is not None and info.st_uid not in (os.geteuid(), sticky_owner):
            os.close(fd)  # as fs.protected_regular / protected_fifos: another user's file in /tmp
            raise not_ours(path, info.st_uid)
        if stat.S_ISFIFO(info.st_mode):
            self.fifo = fd
            return
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise not_a_file(path, info.st_mode)
        self.existing = fd
        self.existing_mode = stat.S_IMODE(info.st_mode)
        if force and not follow:
            self.replace = True  # a new file takes the name: nothing is written through other links
            return
        if info.st_nlink > 1:
            self.close()  # a second name for a file elsewhere would be rewritten there
            raise OutputError(f"refusing to write {path}: it has {info.st_nlink} hard links, and rewriting "
                              "it would change the file they share; remove it or choose another name")
        if not force and not self._holds_our_kind(looks_like):
            self.close()
            raise OutputError(f"refusing to replace {path}: it exists and does not hold a {what}; "
                              "give --force to replace it")

    @property
    def writes_a_name(self):
        """Whether the content goes to a new name in the directory (else it is copied in place)."""
        return self.existing is None or self.replace

    def mode(self, private):
        if self.existing_mode is not None:
            return self.existing_mode
        if private:
            return 0o600
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask  # as open() would have made it

    def _holds_our_kind(self, looks_like):
        """Empty, or ``looks_like`` its first and last bytes (read through a second, read-only
        open: a PDF names its writer at its end)."""
        size = os.fstat(self.existing).st_size
        if size == 0:
            return True
        try:
            with open(f"/proc/self/fd/{self.existing}", "rb") as f:
                from .capture_head import HEAD_BYTES
                head = f.read(HEAD_BYTES)
                f.seek(max(size - _ENDS, 0))
                tail = f.read(_ENDS)
        except OSError:
            return False
        return looks_like(head, tail)

    def rewrite_from(self, scratch_fd):
        """Copy the finished scratch file over the existing file's content, in place: the room for
        it taken first (posix_fallocate), so that a disk that fills leaves the old content whole
        and an error, not the old content cut short."""
        fd = self.existing
        try:
            os.set_blocking(fd, True)
            size = os.fstat(scratch_fd).st_size
            if size:
                try:
                    os.posix_fallocate(fd, 0, size)
                except OSError as e:  # (a file system without it: written as before)
                    if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                        raise
            os.lseek(scratch_fd, 0, os.SEEK_SET)
            os.lseek(fd, 0, os.SEEK_SET)
            with open(scratch_fd, "rb", closefd=False) as src, open(fd, "wb", closefd=False) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            os.ftruncate(fd, size)  # (what is left of a longer old content)
            os.fsync(fd)
        except OSError as e:
            raise write_error(self.path, e) from None

    def close(self):
        for name in ("existing", "fifo"):
            fd = getattr(self, name)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, None)


class _Scratch:
    """Where the content is written until complete.

    ``directory`` given: a hidden temporary name there, given its final name when
    complete and removed on every way out (SIGTERM and SIGHUP unwind too: see
    cli).  None (an existing file is to be rewritten): an unnamed temporary file,
    which nothing can leave behind.
    """

    def __init__(self, directory, path, mode):
        self.directory = directory
        self.path = path
        self.name = None
        if directory is None:
            import tempfile
            handle = tempfile.TemporaryFile()
            self.fd = os.dup(handle.fileno())
            handle.close()
            return
        for _ in range(100):
            name = f".smem-{secrets.token_hex(6)}"
            try:
                self.fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                                  0o600, dir_fd=directory)
            except FileExistsError:
                continue
            except OSError as e:
                raise write_error(path, e) from None
            self.name = name
            break
        else:
            raise OutputError(f"cannot write {path}: no free temporary name beside it")
        os.fchmod(self.fd, mode)

    def link_to(self, leaf):
        """Give the complete file its name; never over something that appeared meanwhile."""
        try:
            os.link(self.name, leaf, src_dir_fd=self.directory, dst_dir_fd=self.directory, follow_symlinks=False)
        except FileExistsError:
            raise _appeared(self.path) from None
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.EOPNOTSUPP):
                raise write_error(self.path, e) from None
            try:  # a filesystem without hard links (vfat): a rename, checked just before
                os.stat(leaf, dir_fd=self.directory, follow_symlinks=False)
                raise _appeared(self.path)
            except FileNotFoundError:
                self.rename_to(leaf)

    def rename_to(self, leaf):
        """Give the complete file the name, replacing the file there (--force)."""
        try:
            os.rename(self.name, leaf, src_dir_fd=self.directory, dst_dir_fd=self.directory)
        except OSError as e:
            raise write_error(self.path, e) from None
        self.name = None

    def close(self):
        with contextlib.suppress(OSError):
            os.close(self.fd)
        if self.name is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.name, dir_fd=self.directory)
            self.name = None


class _FifoWriter:
    """Writes to a FIFO without blocking for ever: a stalled or vanished reader is an error."""

    def __init__(self, fd, path):
        self.fd = fd
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        os.close(self.fd)

    def writable(self):
        return True

    def flush(self):
        pass

    def write(self, data):
        import select
        view = memoryview(data).cast("B")
        poller = select.poll()
        poller.register(self.fd, select.POLLOUT)
        while view:
            if not poller.poll(FIFO_STALL_SECONDS * 1000):
                raise OutputError(f"cannot write {self.path}: its reader took nothing for "
                                  f"{FIFO_STALL_SECONDS} s")
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise OutputError(f"cannot write {self.path}: its reader went away") from None
            view = view[written:]
        return len(data)
