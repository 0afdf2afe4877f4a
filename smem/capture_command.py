"""smem capture: a capture written to a file or standard output, or received over TCP and
written as it came (the capture itself is smem.capture_writer's)."""

import contextlib
import os

from .app import NO_SMAPS, named_processes
from .compression import DEFAULT_WRITTEN, by_option
from .errors import SmemError
from .extras import require
from .sources import open_source

__all__ = ["run_capture", "run_receive", "left_out"]


def run_capture(path, stream=None, *, host=None, compression=DEFAULT_WRITTEN, exact=False, force=False):
    """Write a capture of this machine (or of ``host``) to the file ``path``, or to ``stream``
    (standard output) when ``path`` is None; the warnings to show.  ``compression``: gz, bz2, xz,
    zst or none."""
    from .capture_writer import write_capture
    from .output import output_file
    if exact:
        require("numpy", "capture --exact")
    module = by_option(compression).module if compression != "none" else None
    if module is not None:
        require(module, f"capture --compression {compression}")
    source = open_source(host) if host else open_source(None)
    target = (output_file(path, force=force, what="capture", private=True) if path is not None
              else contextlib.nullcontext(stream))
    try:
        with target as out, _compressed(out, compression) as (archive, tar_compression):
            written = write_capture(source, archive, tar_compression, exact=exact)
        hidden = source.hidden()
        if path is None:
            stream.flush()
    except BrokenPipeError:
        raise  # the command line says the capture was cut off, and quiets stdout
    except OSError as e:
        where = f" to {path}" if path is not None else ""
        raise SmemError(f"cannot write the capture{where}: {e.strerror or e}") from None
    finally:
        source.close()
    return left_out(written.skipped, hidden, host is None, no_smaps=written.no_smaps)


def left_out(skipped, hidden, local, where="", verb="capture", no_smaps=False):
    """The warnings of a capture (of a recording's frame: ``where``, ``verb`` record) that left
    processes out: those it could not read (``skipped``: (pid, name)), and those a hidepid= /proc
    hid (``hidden``: Source.hidden's clause), each saying how to get them where it is our doing;
    and where the kernel gives no smaps (``no_smaps``), that no process's memory is in it."""
    hint = f"; run as root to {verb} them" if local and os.geteuid() != 0 else ""
    warnings = []
    if no_smaps:
        warnings.append(f"{NO_SMAPS}, and the processes are {verb}d without it{where}; smem -w reads the system's")
    if skipped:
        warnings.append(f"{len(skipped)} process{'es' if len(skipped) > 1 else ''} could not be read and "
                        f"{'were' if len(skipped) > 1 else 'was'} left out{where}: {named_processes(skipped)}{hint}")
    if hidden is not None:
        warnings.append(f"{hidden} and left out{where}{hint}")
    return warnings


def run_receive(address, path, stream=None, *, timeout=None, force=False, said=None):
    """Wait on ``address`` (HOST:PORT) for one capture pushed there, read it whole (a capture it
    must be), then write it as it came to ``path`` (or ``stream``).  ``said``: the listening line."""
    from .output import output_file
    from .sources.tcp import DEFAULT_TIMEOUT, Listener
    # -o is checked (and where it is written made) before the wait: a capture that took its target
    # minutes to send is not lost to a directory that is not there
    target = (output_file(path, force=force, what="capture", private=True) if path is not None
              else contextlib.nullcontext(stream))
    with target as out:
        with Listener(address, timeout or DEFAULT_TIMEOUT, said) as listener:
            source, spool = listener.first(capture=True)
        source.close()
        with spool:
            size = os.fstat(spool.fileno()).st_size
            _copy(spool, out, path)
    if said is not None:  # (else a capture kept is a silent exit 0, as one never sent)
        said(f"wrote {path if path is not None else 'standard output'}: a capture of {_size(size)} "
             f"from {listener.peer}")
    return []


def _size(size):
    """Bytes as the confirmation says them: exact below a KiB, else in KiB or MiB with one decimal."""
    if size < 1024:
        return f"{size} bytes"
    return f"{size / 1024:.1f} KiB" if size < 1 << 20 else f"{size / (1 << 20):.1f} MiB"


def _copy(spool, out, path):
    """The received capture, as it came, to ``out`` (``path``, or standard output where None)."""
    try:
        while True:
            chunk = spool.read(1 << 20)
            if not chunk:
                break
            view = memoryview(chunk)
            while view:  # a pipe whose reader left mid-write takes part of it, and says so only at the next
                view = view[out.write(view) or len(view):]
        out.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        where = f" to {path}" if path is not None else ""
        raise SmemError(f"cannot write the capture{where}: {e.strerror or e}") from None


@contextlib.contextmanager
def _compressed(out, compression):
    """(stream, what tarfile should compress with): zstd is a stream of ours, the rest tarfile's."""
    if compression != "zst":
        yield out, None if compression == "none" else compression
        return
    import zstandard
    with zstandard.ZstdCompressor(level=10).stream_writer(out, closefd=False) as stream:
        yield stream, None
