"""``smem serve`` as a separate process for the tests that talk to it (test_serve*.py, test_page.py):
started, waited for until it says where it listens, stopped as an init system stops it."""

import os
import select
import signal
import subprocess
import sys

import pytest

from conftest import TESTS


def start_serve(*args):
    """``smem serve ARGS`` as a process (COLUMNS and LINES unset), its standard error a pipe.

    The pipes are unbuffered: ``next_line`` asks select(2) whether a line is there, and select sees
    only what the kernel holds; a buffered reader's first readline could take both the warning and
    the "serving" line, and select then waited 60 s for a line already read (a busy machine's
    failure)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.Popen([sys.executable, "-m", "smem", "serve", *map(str, args)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=TESTS.parent, env=env,
                            bufsize=0)


def next_line(proc, seconds=60):
    """The next line ``proc`` writes on standard error ('' if none comes within ``seconds``)."""
    ready, _, _ = select.select([proc.stderr], [], [], seconds)
    return proc.stderr.readline().decode() if ready else ""


def serving(*args):
    """``smem serve --listen 127.0.0.1:0 ARGS``: (process, base URL) once it says where it listens."""
    proc = start_serve("--listen", "127.0.0.1:0", *args)
    line = next_line(proc)
    if "serving http://" not in line:
        proc.kill()
        pytest.fail(f"smem serve did not start: {line!r} {proc.stderr.read() if line else b''}")
    return proc, line.split("serving ")[1].strip().rsplit("/", 1)[0]


def stop(proc):
    """SIGTERM: its exit status and the rest of its standard error (text)."""
    proc.send_signal(signal.SIGTERM)
    try:
        status = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return status, proc.stderr.read().decode()
