"""Writing a file the user named (-o): whole or not at all, and never in place of something else.

A regular file is written under a temporary name beside it and renamed when
complete, so an interrupted run leaves the old file, not half a new one.  A
name that is a symbolic link is followed (the link stays a link); a device or
a pipe (/dev/stdout, a FIFO) is written directly, since renaming over it would
replace it.
"""

import contextlib
import os
import stat

from .errors import SmemError

__all__ = ["output_file"]


@contextlib.contextmanager
def output_file(path, prefix=".smem-"):
    """A binary file object for ``path``; the file appears only if the block completes."""
    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as e:
        raise SmemError(f"cannot write {path}: {e.strerror}") from None
    if mode is not None and not stat.S_ISREG(mode):
        try:
            with open(target, "wb") as f:
                yield f
        except OSError as e:
            raise SmemError(f"cannot write {path}: {e.strerror}") from None
        return
    try:
        import tempfile  # only when a file is written
        fd, tmp = tempfile.mkstemp(prefix=prefix, dir=os.path.dirname(target))
    except OSError as e:
        raise SmemError(f"cannot write {path}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        if mode is not None:
            os.chmod(tmp, stat.S_IMODE(mode))  # an existing file keeps its permissions
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # as open() would have made it
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
