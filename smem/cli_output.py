"""What the command line writes: the report on standard output, notes and warnings on stderr.

A closed or broken standard output is said once, or kept quiet where the reader (``head``) has
what it wanted.
"""

import os
import sys

import click

from .errors import SmemError, UsageError


def printable(message):
    """``message`` with each control character (a newline, an escape sequence's ESC) as '?': an error
    or warning quotes names a capture or a peer chose, which must not forge a line or drive the terminal."""
    return "".join(c if c.isprintable() else "?" for c in message)


def note(message):
    click.echo(f"smem: {printable(message)}", err=True)


def warn(message):
    click.echo(f"smem: warning: {printable(message)}", err=True)


def write(text):
    write_bytes(text.encode("utf-8", "surrogateescape"))


def write_bytes(data, what="the report", whole=False):
    if sys.stdout is None:  # started with stdout closed (smem >&-)
        raise SmemError(f"cannot write {what}: standard output is closed")
    try:
        view = memoryview(data)
        while view:  # (a pipe whose reader left mid-write took part of it: said by the count alone)
            written = sys.stdout.buffer.write(view)
            if written is None:  # (python -u: a raw file, whose non-blocking pipe is full: wait, not spin)
                import select
                select.select([], [sys.stdout.buffer], [])
                continue
            view = view[written:]
        sys.stdout.buffer.flush()  # here, not at exit: a full disk is reported, a closed pipe quiet
    except BrokenPipeError:
        if not whole:
            quiet_broken_pipe()
        silence_stdout()
        raise SmemError(f"{what} was cut off: standard output was closed before the end (broken pipe); "
                        "what was written is not whole") from None
    except OSError as e:
        raise SmemError(f"cannot write {what}: {e.strerror}") from None


def write_whole(data, what):
    """``data``, a whole document (a chart's PNG, a page), on stdout: a pipe closed before its end
    (a dropped ssh, ``| head``) left the reader part of one, an error as a capture cut off is, not
    the quiet end of a report read by ``head``."""
    write_bytes(data, what, whole=True)


def binary_stdout(what):
    """Refuse, before anything is read, a standard output that cannot take ``what`` (a capture, a
    chart: bytes for a file or a pipe; the page: megabytes of script, plotly.js's control bytes among
    them): closed, or a terminal, which shows them as garbage."""
    if sys.stdout is None:  # (smem >&-)
        raise SmemError(f"cannot write the {what}: standard output is closed; use -o FILE")
    if sys.stdout.isatty():
        raise UsageError(f"refusing to write a {what} to a terminal; use -o FILE or a pipe")


def silence_stdout():
    """Point stdout at /dev/null, so that the flush at exit does not meet the closed pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def quiet_broken_pipe():
    """A report read by ``head``: the reader has what it wanted, so the end is quiet."""
    silence_stdout()
    sys.exit(0)
