"""What a peer pushes is spooled to a temporary file (smem/sources/tcp.py), never held in memory:
a temporary directory that fills up is one line, not a traceback, and nothing is left in it,
whatever ends smem (the file is unlinked from the start).

The listeners run in the module's PID namespace, whose mounts are its own: there TMPDIR is a
4 KiB tmpfs, smaller than any capture.  The peer, a socket here, sends a real capture of the
namespace (``smem capture``)."""

import os
import signal
import socket
import subprocess
import sys

import pytest

from conftest import TESTS
from test_tcp_capture import listening_port, smem_in

#: smem as this checkout has it, wherever the command's working directory is
ENV = dict(os.environ, PYTHONPATH=str(TESTS.parent))


@pytest.fixture(scope="module")
def capture(tmp_path_factory, pid_namespace):
    path = tmp_path_factory.mktemp("spool") / "box.tgz"
    smem_in(pid_namespace, "capture", "-o", path)
    return path.read_bytes()


def _listening(namespace, tmpdir, *args):
    """``smem ARGS --listen 127.0.0.1:0`` in ``namespace`` with TMPDIR=tmpdir: its Popen and port."""
    argv = [sys.executable, "-m", "smem", *map(str, args), "--listen", "127.0.0.1:0", "--timeout", "60"]
    proc = subprocess.Popen(namespace.argv(argv, cwd=TESTS.parent), cwd=TESTS.parent, env=dict(ENV, TMPDIR=tmpdir),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc, listening_port(proc)


def _push(port, data):
    with socket.create_connection(("127.0.0.1", port)) as s:
        try:
            s.sendall(data)
        except OSError:
            pass  # (smem gave up and closed first)


def _said(proc):
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode().splitlines()


def test_capture_listen_with_a_full_tmpdir_is_one_line(pid_namespace, full_filesystem, tmp_path, capture):
    mount, seen = full_filesystem.path, full_filesystem.seen
    out = tmp_path / "box.tgz"
    proc, port = _listening(pid_namespace, mount, "capture", "-o", out)
    try:
        _push(port, capture)
        code, lines = _said(proc)
    finally:
        proc.kill()
        proc.wait()
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith("smem: capture from 127.0.0.1:") and lines[0].endswith(
        f"cannot keep what it sent in a temporary file in {mount} after {lines[0].split(' after ')[1]}"), lines
    assert "No space left on device (set TMPDIR to a directory with room)" in lines[0], lines
    assert not out.exists() and list(seen.iterdir()) == []


def test_record_listen_with_a_full_tmpdir_warns_and_waits_for_the_next(pid_namespace, full_filesystem, tmp_path,
                                                                       capture):
    """The spool is dropped with the capture, and the room with it: the next capture may fit."""
    pytest.importorskip("zstandard", reason="smem record needs smem[compression] (zstandard)")
    mount, seen = full_filesystem.path, full_filesystem.seen
    rec = tmp_path / "rec"
    proc, port = _listening(pid_namespace, mount, "record", "-o", rec)
    try:
        _push(port, capture)
        warning = proc.stderr.readline().decode()
        assert warning.startswith("smem: warning: capture from 127.0.0.1:") and warning.endswith(
            "No space left on device (set TMPDIR to a directory with room); waiting for the next capture\n"), warning
        assert list(seen.iterdir()) == []
        os.kill(pid_namespace.command_pid(proc), signal.SIGTERM)
        code, lines = _said(proc)
    finally:
        proc.kill()
        proc.wait()
    assert code == 143 and lines == ["smem: stopped by SIGTERM before any capture came: the recording holds no frame"]


def test_a_signal_mid_capture_leaves_nothing_in_tmpdir(pid_namespace, tmp_path, capture):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "box.tgz"
    proc, port = _listening(pid_namespace, tmpdir, "capture", "-o", out)
    try:
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(capture[:len(capture) // 2])
            os.kill(pid_namespace.command_pid(proc), signal.SIGTERM)
            code, lines = _said(proc)
    finally:
        proc.kill()
        proc.wait()
    assert code == 143 and lines == [], lines
    assert os.listdir(tmpdir) == [] and not out.exists()
