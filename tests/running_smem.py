"""Running smem as a user would: its command line in this process (``run_smem``), as a separate
process, in a PID namespace, on a terminal, or as nobody; and reading what it said.  Imported
by conftest.py (after its setup of the environment and signals), so tests name them there."""

import gc
import os
import signal
import subprocess
import sys
import traceback
from pathlib import Path

import click
import click.formatting
import click.testing

import smem.cli
import smem.report

#: the checkout: smem's working directory when a test runs it
CHECKOUT = Path(__file__).resolve().parent.parent


def run_smem(*args, input=None, env=None, check=False):
    """Run smem's command line with ARGS in this process, as ``python -m smem ARGS`` would.

    ``smem.cli.main(argv)`` is what ``python -m smem`` calls; here it runs inside
    click's CliRunner isolation: stdin holds ``input`` (empty otherwise, as
    /dev/null), stdout and stderr are captured as bytes, COLUMNS and LINES are
    removed from the environment and ``env`` added, the working directory is
    the repository's.  Neither stdout nor stdin is a terminal, as with the pipes
    of a subprocess.  The exit status is the SystemExit's; an exception smem
    lets out is, as for a command, a traceback on stderr and status 1.

    What only a separate process shows -- the entry point, signals, a broken or
    closed stdout, another user, smem leaving its own process out of -P -- is
    for ``run_smem_process``.
    """
    argv = [str(a) for a in args]
    environment = {"COLUMNS": None, "LINES": None, **(env or {})}
    before = _process_state()
    cwd = os.getcwd()
    os.chdir(CHECKOUT)
    try:
        with _RUNNER.isolation(input=b"" if input is None else input, env=environment) as (out, err, _):
            # Not a terminal: what shutil.get_terminal_size sees behind a pipe (80x24), and click's
            # help as wide as that, not CliRunner's forced 80 columns.
            click.formatting.FORCED_WIDTH = None
            real_stdout, sys.__stdout__ = sys.__stdout__, sys.stdout
            try:
                code = _exit_status(smem.cli.main, argv)
            finally:
                sys.__stdout__ = real_stdout
                sys.stdout.flush()
                sys.stderr.flush()
            stdout, stderr = out.getvalue(), err.getvalue()
    finally:
        os.chdir(cwd)
    leaked = _process_state() != before
    assert not leaked, f"smem {argv} changed this process: {before} -> {_process_state()}"
    proc = subprocess.CompletedProcess(["smem", *argv], code, stdout, stderr)
    if check and proc.returncode != 0:
        raise AssertionError(f"smem {args} failed ({proc.returncode}): {proc.stderr.decode()}")
    return proc


_RUNNER = click.testing.CliRunner()


def _exit_status(main, argv):
    """What the interpreter would exit with: SystemExit's code, 1 (and a traceback) for an exception."""
    try:
        main(argv)
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    return 0


def _process_state():
    """What a run of smem in this process must leave as it found it."""
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE)
    return {"gc": gc.isenabled(), "signals": {s: signal.getsignal(s) for s in signals},
            "environ": dict(os.environ), "stdio": (sys.stdin, sys.stdout, sys.stderr)}


def run_smem_process(*args, input=None, env=None, check=False):
    """Run ``python -m smem ARGS`` as a separate process in a clean environment (no COLUMNS/LINES).

    For what only an installed command shows; everything else uses ``run_smem``.
    """
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    environment.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "smem", *map(str, args)],
                          input=input, capture_output=True, env=environment,
                          stdin=None if input is not None else subprocess.DEVNULL,
                          cwd=CHECKOUT, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"smem {args} failed ({proc.returncode}): {proc.stderr.decode()}")
    return proc


def run_smem_in(namespace, *args, check=False):
    """``python -m smem ARGS`` of this checkout in ``namespace`` (a pid_namespace): a live report
    of its processes alone, not of the machine's thousands."""
    proc = subprocess.run(namespace.argv([sys.executable, "-m", "smem", *map(str, args)], cwd=CHECKOUT),
                          env=dict(os.environ, PYTHONPATH=str(CHECKOUT)), stdin=subprocess.DEVNULL,
                          capture_output=True, cwd=CHECKOUT, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"smem {args} failed ({proc.returncode}): {proc.stderr.decode()}")
    return proc


def run_smem_on_a_terminal(args, columns, namespace=None):
    """smem's output run on a pseudo-terminal ``columns`` wide (stdin not a terminal), in
    ``namespace`` if given (a pid_namespace)."""
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    argv = [sys.executable, "-m", "smem", *args]
    if namespace is not None:
        argv, env = namespace.argv(argv, cwd=CHECKOUT), dict(env, PYTHONPATH=str(CHECKOUT))
    proc = subprocess.Popen(argv, stdout=slave, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env,
                            cwd=CHECKOUT)
    # The terminal stays open here until the end, and a mark written to it once smem has exited
    # says all it wrote was read: the kernel hands what is written to a terminal over to its master
    # a moment later (a work item), so with the last writer gone a read could fail (EIO) while the
    # last lines were still on their way, on a loaded machine.
    import select
    import time
    mark, out, written = b"\x1e(smem's output ends)\x1e", b"", False
    deadline = time.monotonic() + 60
    try:
        while mark not in out and time.monotonic() < deadline:
            if not written and proc.poll() is not None:
                os.write(slave, mark)  # (after everything smem wrote: a terminal keeps the order)
                written = True
            if select.select([master], [], [], 0.05)[0]:
                out += os.read(master, 65536)
        proc.wait(60)
    finally:
        os.close(slave)
        os.close(master)
    assert mark in out, "smem's output on the terminal did not end within 60 s"
    return out[:out.index(mark)].decode().replace("\r\n", "\n").splitlines()



def refused_on_a_terminal(args):
    """(smem ``args`` run with its standard output a pseudo-terminal, what reached the terminal):
    the CompletedProcess (stderr captured) and the bytes the terminal got, read up to a mark
    written after smem exited (a terminal hands what is written to its master a moment later)."""
    import pty
    import select
    import time
    master, slave = pty.openpty()
    mark, shown = b"\x1e(end)\x1e", b""
    try:
        proc = subprocess.run([sys.executable, "-m", "smem", *args], stdout=slave, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, cwd=CHECKOUT, timeout=120)
        os.write(slave, mark)
        deadline = time.monotonic() + 30
        while mark not in shown and time.monotonic() < deadline:
            if select.select([master], [], [], 0.05)[0]:
                shown += os.read(master, 65536)
    finally:
        os.close(slave)
        os.close(master)
    assert mark in shown, "what smem wrote to the terminal did not end within 30 s"
    return proc, shown[:shown.index(mark)]

#: Python code that imports what smem may import lazily, then becomes nobody (uid 65534).
#: The interpreter may live under /root, unreadable once we are nobody, so everything smem
#: could need is imported first; then the code that follows runs as an unprivileged user.
AS_NOBODY = ("import os, sys, difflib, socket, time, json, csv, io, tarfile, gzip, bz2, lzma, pwd, grp, "
             "importlib.util, concurrent.futures.thread, ctypes, smem.cli, smem.formats, smem.sizing, "
             "smem.sources.archive, smem.sources.archive_stream, smem.sources.shmem_probe; "
             "[__import__(m) for m in ('numpy', 'smem.exact') if importlib.util.find_spec('numpy')]; "
             "os.setgroups([]); os.setgid(65534); os.setuid(65534); ")


#: what a table of groups says on stderr wherever a row holds several processes (smem.report);
#: of a capture, the line goes on to say which captures have the frames --exact needs
SUMMED_USS_LINE = b"smem: " + smem.report.SUMMED_USS_NOTE.encode()


def said_beside(proc):
    """``proc``'s stderr without the note under a -u, -g or --cgroup table that its USS is summed:
    what else smem said (a warning about the source, the frame)."""
    return b"".join(line for line in proc.stderr.splitlines(keepends=True) if not line.startswith(SUMMED_USS_LINE))


def rows(proc, pid=None):
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if pid is None:
        return lines
    return [l for l in lines if l.split() and l.split()[0] == str(pid)]
