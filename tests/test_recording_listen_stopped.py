"""A recording of a target (``smem record --listen``) stopped by a signal: it stops at once (there
is no capture of the target to take as a last key frame), says what the recording holds, and
exits as a recording of this machine does (0 after SIGINT, 143 after SIGTERM, 129 after SIGHUP),
every frame the index names whole.  It said nothing before, for SIGTERM and SIGHUP as for Ctrl-C.

The captures pushed are real: one ``smem capture`` of the module's PID namespace (a handful of
processes, a marker among them), sent as a target's ``nc`` would from a socket here."""

import os
import signal
import socket
import time

import pytest

from test_recording import index_lines, pids_of
from test_recording_stopped import _reads_back
from test_tcp_capture import listening_port, marker_process, smem_in, smem_process

pytest.importorskip("zstandard", reason="smem[compression]: zstandard not installed")


@pytest.fixture(scope="module")
def pushed(tmp_path_factory, pid_namespace):
    """(a capture's bytes, the pid of the marker process it holds)."""
    path = tmp_path_factory.mktemp("pushed") / "box.tgz"
    with marker_process(pid_namespace) as marker:
        smem_in(pid_namespace, "capture", "-o", path)
    return path.read_bytes(), marker


def _recorder(rec):
    """``smem record --listen 127.0.0.1:0 -o rec``: its Popen and the port it listens on."""
    proc = smem_process("record", "--listen", "127.0.0.1:0", "-o", rec, "--timeout", "60")
    return proc, listening_port(proc)


def _push(port, data):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(data)


def _wait_frames(rec, proc, count):
    deadline = time.monotonic() + 120
    while not ((rec / "index.jsonl").exists() and len(index_lines(rec)[1]) >= count):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.01)


def _stopped(proc, signum):
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode().splitlines()


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 0), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_target_s_recording_stopped_by_a_signal_says_what_it_holds(tmp_path, pushed, signum, status):
    data, marker = pushed
    rec = tmp_path / "rec"
    proc, port = _recorder(rec)
    try:
        for count in (1, 2):
            _push(port, data)
            _wait_frames(rec, proc, count)
        code, lines = _stopped(proc, signum)
    finally:
        proc.kill()
        proc.wait()
    name = signal.Signals(signum).name
    assert code == status, lines
    assert lines[-1] == (f"smem: stopped by {name}: the recording holds frames 1 to 2 (2 received by this run); "
                         "its last with every smaps is frame 1 (a target's recording takes no last frame: "
                         "there is no capture of it to take)"), lines
    assert [f["smaps"] for f in index_lines(rec)[1]] == [True, False]
    assert _reads_back(rec) == [1, 2] and marker in pids_of(rec)


def test_a_capture_under_way_is_dropped_and_the_frames_before_it_kept(tmp_path, pushed):
    data, marker = pushed
    rec = tmp_path / "rec"
    proc, port = _recorder(rec)
    try:
        _push(port, data)
        _wait_frames(rec, proc, 1)
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(data[:len(data) // 2])  # (and the rest never: the recorder is stopped first)
            code, lines = _stopped(proc, signal.SIGTERM)
    finally:
        proc.kill()
        proc.wait()
    assert code == 143 and lines[-1] == ("smem: stopped by SIGTERM: the recording holds frame 1 (1 received by "
                                         "this run); frame 1, its last, keeps every smaps"), lines
    assert _reads_back(rec) == [1] and marker in pids_of(rec)


@pytest.mark.uses("cpu")
def test_stopped_before_any_capture_came(tmp_path):
    rec = tmp_path / "rec"
    proc, _ = _recorder(rec)
    try:
        code, lines = _stopped(proc, signal.SIGHUP)
    finally:
        proc.kill()
        proc.wait()
    assert code == 129 and lines[-1] == ("smem: stopped by SIGHUP before any capture came: the recording "
                                         "holds no frame"), lines
    assert index_lines(rec)[1] == [] and sorted(os.listdir(rec)) == ["anchors", "frames", "index.jsonl"]
