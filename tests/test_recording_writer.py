"""What a recording's directory may not do to smem record (smem/recording/store.py, record.py): hold a
second recorder, be damaged when a recording is resumed, or receive a capture that smem reads but
cannot repack as a frame.  Recorders run in the module's PID namespace (conftest's pid_namespace)."""

import gzip
import io
import os
import signal
import socket
import subprocess
import tarfile
import time

import pytest

from conftest import run_smem
from hostile_inputs import capture_tar, process_files
from test_recording import index_lines
from test_tcp_capture import listening_port, smem_in, smem_process

pytest.importorskip("zstandard", reason="smem[compression]: zstandard not installed")


def test_a_second_recorder_into_the_same_directory_is_refused(tmp_path, pid_namespace):
    """Both would number the same frames, and the reader then refuses the whole index."""
    rec = tmp_path / "rec"
    first = smem_process("record", "-o", rec, "--interval", "0.2", "--count", "300", namespace=pid_namespace)
    try:
        deadline = time.monotonic() + 120
        while not (rec / "index.jsonl").exists() or len(index_lines(rec)[1]) < 1:
            assert first.poll() is None and time.monotonic() < deadline, first.stderr.read()
            time.sleep(0.05)
        second = run_smem("record", "-o", rec, "--count", "1")
        assert second.returncode == 1 and second.stderr.decode().splitlines() == [
            f"smem: refusing to record into {rec}: another smem record is writing it"], second.stderr
    finally:
        os.kill(pid_namespace.command_pid(first), signal.SIGINT)  # (nsenter passes no signal on)
        first.communicate(timeout=120)
    frames = [f["frame"] for f in index_lines(rec)[1]]
    assert frames == list(range(1, len(frames) + 1))
    assert run_smem("-S", rec, "--all-frames", "-F", "csv").returncode == 0


@pytest.mark.parametrize("what", ["frames", "anchors"])
def test_resuming_a_recording_whose_directories_are_files_is_one_line(tmp_path, pid_namespace, what):
    rec = tmp_path / "rec"
    smem_in(pid_namespace, "record", "-o", rec, "--count", "1")
    for child in (rec / what).iterdir():
        child.unlink()
    (rec / what).rmdir()
    (rec / what).write_bytes(b"not a directory")
    proc = run_smem("record", "-o", rec, "--count", "1")
    assert proc.returncode == 1 and proc.stderr.decode().splitlines() == [
        f"smem: cannot resume {rec}: {what}: File exists"], proc.stderr


def test_resuming_a_recording_on_a_read_only_disk_is_one_line(tmp_path, pid_namespace):
    """Its index opened for appending failed: a traceback, where a new one's directory was a line."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", disk], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        smem_in(pid_namespace, "record", "-o", tmp_path / "rec", "--count", "1")
        rec = disk / "rec"  # (copied: the namespace's mounts are not ours)
        subprocess.run(["cp", "-a", tmp_path / "rec", rec], check=True)
        subprocess.run(["mount", "-o", "remount,ro", disk], check=True)
        for where in (rec, disk / "new"):
            proc = run_smem("record", "-o", where, "--count", "1")
            assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1, proc.stderr
            assert proc.stderr.decode().endswith(": Read-only file system\n"), proc.stderr
        assert len(index_lines(rec)[1]) == 1
    finally:
        subprocess.run(["umount", "-l", disk])


@pytest.mark.uses("network")
@pytest.mark.parametrize("at", ["a member's end", "inside a member"])
def test_record_listen_keeps_a_capture_of_several_gzip_streams_whole(tmp_path, at):
    """pigz and pbzip2 write several streams one after the other, which -S reads whole; tarfile's
    own stream mode stopped at the first one's end: half the processes recorded without a word,
    or the recording ended (a cut inside a member)."""
    tar = capture_tar(processes={pid: process_files(pid) for pid in range(2000, 2060)})
    with tarfile.open(fileobj=io.BytesIO(tar)) as whole:  # (where a member's header starts, or 100 bytes in)
        cut = next(m.offset for m in whole if m.name.startswith("2030")) + (0 if at == "a member's end" else 100)
    several = gzip.compress(tar[:cut]) + gzip.compress(tar[cut:])
    rec = tmp_path / "rec"
    proc = smem_process("record", "--listen", "127.0.0.1:0", "-o", rec, "--count", "1", "--timeout", "600")
    port = listening_port(proc)
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(several)
    _, err = proc.communicate(timeout=120)
    # (its "listening on" line read above: only the first frame's, no warning)
    assert proc.returncode == 0 and err.decode().startswith("smem: recorded frame 1 from ") \
        and len(err.splitlines()) == 1, err
    assert run_smem("-S", rec, "-c", "pid", "-H", check=True).stdout.split() == \
        run_smem("-S", "-", "-c", "pid", "-H", input=gzip.compress(tar), check=True).stdout.split()


def test_a_capture_larger_than_a_frame_may_be_is_refused_before_it_is_held(monkeypatch):
    """A capture may inflate to 4 GiB, a frame to 1 GiB (what the reader takes): a push of zeros
    past that was held whole, several times over, and written as a frame no reader would read."""
    from smem.errors import CaptureError
    from smem.recording import frames
    tar = capture_tar(processes={pid: process_files(pid) for pid in range(2000, 2010)})
    assert frames.repack(io.BytesIO(gzip.compress(tar)), True)[2] == 10
    monkeypatch.setattr(frames, "MAX_FRAME_BYTES", len(tar) // 2)
    with pytest.raises(CaptureError, match="the most a frame holds"):
        frames.repack(io.BytesIO(gzip.compress(tar)), True)


_CUT_INDEX_LINE = """
import gzip, io, os, resource, sys
from hostile_inputs import capture_tar, process_files
from smem.errors import OutputError
from smem.recording.store import RecordingWriter
capture = gzip.compress(capture_tar(processes={pid: process_files(pid) for pid in range(2000, 2003)}))
index = os.path.join(sys.argv[1], "index.jsonl")
with RecordingWriter(sys.argv[1]) as writer:
    for _ in range(3):
        writer.add(io.BytesIO(capture))
    before = os.path.getsize(index)
    # room for the next frame (a few bytes against its anchor), not for the index line after it
    resource.setrlimit(resource.RLIMIT_FSIZE, (before + 20, resource.RLIM_INFINITY))
    try:
        writer.add(io.BytesIO(capture))
    except OutputError as e:
        print(e)
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    print(os.path.getsize(index) - before)
    writer.add(io.BytesIO(capture))
"""


@pytest.mark.uses("cpu")
def test_an_index_line_the_disk_cuts_short_is_taken_back(tmp_path):
    """A line appended in part (the disk full, or the file size limit, in the middle of it) was
    left there, and the next frame's line ran on from it: one line the reader refused, and with
    it the recording.  Python ignores SIGXFSZ, so the write past RLIMIT_FSIZE is cut short."""
    import subprocess
    import sys
    from conftest import TESTS
    rec = tmp_path / "rec"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS.parent), str(TESTS)]))
    out = subprocess.run([sys.executable, "-c", _CUT_INDEX_LINE, str(rec)], env=env, capture_output=True,
                         timeout=120)
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    error, grown = out.stdout.decode().splitlines()
    assert error == f"cannot write {rec}/index.jsonl: File too large" and grown == "0"
    assert [f["frame"] for f in index_lines(rec)[1]] == [1, 2, 3, 4]
    listed = run_smem("-S", rec, "--all-frames", "-c", "pid", "-H", check=True).stdout.split()
    assert [listed.count(pid) for pid in (b"2000", b"2001", b"2002")] == [4, 4, 4], listed  # (each frame's)
