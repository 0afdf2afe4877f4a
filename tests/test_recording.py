"""Recordings (smem record, smem/recording/): frames of this machine or of a target pushing over TCP,
written so that a kill leaves every earlier frame readable, resumed into the same directory.

What records or pushes captures runs in the module's PID namespace (conftest's pid_namespace),
with the marker processes the frames must hold: each frame copies every process its /proc
shows, there a handful, not the whole machine.  Readings of a recording run here.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import TESTS, run_smem, said_beside
from test_tcp_capture import BUSYBOX, SCRIPT, listening_port, marker_process, needs_busybox, smem_in, smem_process

pytest.importorskip("zstandard", reason="smem[compression]: zstandard not installed")


def index_lines(path):
    lines = (path / "index.jsonl").read_bytes().split(b"\n")
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:] if line]


def pids_of(path, *args):
    proc = run_smem("-S", path, "-c", "pid", "-H", *args, check=True)
    return {int(w) for w in proc.stdout.split()}


def test_record_this_machine_keeps_smaps_in_key_frames_only(tmp_path, pid_namespace):
    rec = tmp_path / "rec"
    with marker_process(pid_namespace) as marker:
        smem_in(pid_namespace, "record", "-o", rec, "--interval", "0.1", "--count", "3", "--smaps-every", "2")
    header, frames = index_lines(rec)
    assert header["format"] == "smem-recording" and header["smaps_every"] == 2
    assert [(f["frame"], f["smaps"], f["anchor"]) for f in frames] == [(1, True, 1), (2, False, 1), (3, True, 3)]
    assert marker in pids_of(rec)
    # -m of a frame without smaps reads the mappings of the key frame before it
    assert pids_of(rec, "--at", "2", "-M", "[stack]") >= {marker}
    mappings = run_smem("-S", rec, "--at", "2", "-m", "-P", f"^sleep 3600$", check=True)
    assert b"[stack]" in mappings.stdout
    # and says so (it said nothing but in -F json's description): every figure is frame 1's
    assert mappings.stderr.decode().splitlines() == [
        "smem: warning: a frame without smaps has no mappings: a report that reads them (-m, -M, --shm, the maps or vss "
        f"columns) shows the key frame before it, frame 1 ({time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(frames[0]['time']))}), "
        "every figure of that frame"]
    assert run_smem("-S", rec, "--at", "2", "-t", check=True).stderr == b""  # (its own figures: nothing to say)
    assert os.stat(rec).st_mode & 0o777 == 0o700  # frames hold every command line
    # a frame without smaps still has what the process, user, program, cgroup and system views read
    # (recorded in a PID namespace of its own, the breakdown says its processes are not the machine's)
    for view in ([], ["-u"], ["-g"], ["--cgroup"], ["-w"], ["-w", "--breakdown"]):
        proc = run_smem("-S", rec, *view, "-t")
        lines = said_beside(proc).splitlines()
        said = [line for line in lines if b"lists only the processes of one PID namespace" not in line]
        namespaced = len(lines) - len(said)
        assert proc.returncode == 0 and said == [], (view, proc.stderr)
        assert namespaced == (view == ["-w", "--breakdown"] and pid_namespace.isolated), (view, proc.stderr)


def test_frames_slower_than_the_interval_are_said_once(tmp_path, pid_namespace):
    """smem record --interval 2 on a loaded machine wrote a frame every 13 s and said only "every
    2 s": the frames' spacing is the time each takes, and one line says so, once."""
    rec = tmp_path / "rec"
    proc = smem_process("record", "-o", rec, "--interval", "0.001", "--count", "4", "--smaps-every", "100",
                        namespace=pid_namespace)
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    slow = [line for line in err.decode().splitlines() if "longer than --interval" in line]
    assert len(slow) == 1 and slow[0].startswith("smem: warning: frame 2 took "), err
    assert slow[0].endswith("longer than --interval 0.001 s: the frames are as far apart as they take"), slow


def test_the_last_frame_of_a_count_or_a_duration_keeps_its_smaps(tmp_path, pid_namespace):
    """A recording's end is where a page of it opens and what -m of it reads: with the default
    --smaps-every 360 those were the key frame's, up to an hour before the end."""
    for name, until, least in (("count", ["--count", "3"], 3), ("duration", ["--duration", "0.45"], 1)):
        rec = tmp_path / name
        smem_in(pid_namespace, "record", "-o", rec, "--interval", "0.1", "--smaps-every", "100", *until)
        _, frames = index_lines(rec)
        # (a loaded machine takes fewer frames in the duration; one that runs past it is followed
        # by a last key frame: test_recording_stopped's held-up recorder)
        keys = [f["smaps"] for f in frames]
        assert len(frames) >= least and keys[0] and keys[-1] and not any(keys[1:-1]), (name, frames)


def test_the_index_only_names_whole_frames_and_a_kill_loses_only_the_frame_in_progress(tmp_path, pid_namespace):
    rec = tmp_path / "rec"
    proc = smem_process("record", "-o", rec, "--interval", "0.05", "--smaps-every", "3", namespace=pid_namespace)
    recorder = pid_namespace.command_pid(proc)
    try:
        index = rec / "index.jsonl"
        deadline = time.monotonic() + 120
        while not (index.exists() and len(index_lines(rec)[1]) >= 3):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.01)
        # then kill -9 while a frame is under way: as its file is written if we see it, else while
        # its capture is read
        frames_dir = rec / "frames"
        until = time.monotonic() + 5
        while time.monotonic() < until and not any(n.endswith(".tmp") for n in os.listdir(frames_dir)):
            pass
    finally:
        os.kill(recorder, signal.SIGKILL)  # (nsenter, if the namespace's, then exits too)
        proc.communicate()
    _, frames = index_lines(rec)
    numbers = [f["frame"] for f in frames]
    assert numbers == list(range(1, len(numbers) + 1))
    for number in numbers:  # every frame the index names reads back
        assert run_smem("-S", rec, "--at", number, "-u", check=True).stdout.startswith(b"User")
    # an index line cut short by the kill is not a frame, and resuming removes it and the leftovers
    with open(rec / "index.jsonl", "ab") as f:
        f.write(b'{"frame": 99, "ti')
    assert run_smem("-S", rec, "--at", "last", "-u", check=True).returncode == 0
    smem_in(pid_namespace, "record", "-o", rec, "--count", "1")
    _, after = index_lines(rec)
    assert [f["frame"] for f in after] == numbers + [numbers[-1] + 1]
    assert after[-1]["smaps"] and after[-1]["anchor"] == numbers[-1] + 1  # a resumed recording starts a key frame
    assert not [n for n in os.listdir(rec / "frames") if n.endswith(".tmp")]


def test_record_refuses_a_directory_that_is_not_a_recording(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    proc = run_smem("record", "-o", tmp_path, "--count", "1")
    assert proc.returncode == 1 and b"not empty and not a recording" in proc.stderr
    assert os.listdir(tmp_path) == ["notes.txt"]


@needs_busybox
def test_record_listen_takes_the_busybox_loop_and_the_next_capture_after_a_bad_one(tmp_path, pid_namespace):
    rec = tmp_path / "rec"
    proc = smem_process("record", "--listen", "127.0.0.1:0", "-o", rec, "--count", "3", "--timeout", "600")
    listening = proc.stderr.readline().decode()
    port = int(listening.split("listening on 127.0.0.1:")[1].split()[0])
    # what to run on the target is said, as capture --listen says it
    assert listening.rstrip().endswith(f"(on the target: while :; do sh smemcap.sh | nc 127.0.0.1 {port}; "
                                       "sleep 10; done)"), listening
    push = f"{BUSYBOX} sh {SCRIPT} | {BUSYBOX} nc 127.0.0.1 {port}"
    with marker_process(pid_namespace) as marker:
        subprocess.run(pid_namespace.argv([BUSYBOX, "sh", "-c", push]), check=True, timeout=900)
        with socket.create_connection(("127.0.0.1", port)) as s:  # a bad one between two good ones
            s.sendall(b"not a capture at all" * 50)
        # the README's loop, twice round
        loop = f"i=0; while [ $i -lt 2 ]; do {push}; sleep 0.2; i=$((i+1)); done"
        subprocess.run(pid_namespace.argv([BUSYBOX, "sh", "-c", loop]), check=True, timeout=900)
        _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    warnings = [line for line in err.decode().splitlines() if "warning" in line]
    assert len(warnings) == 1 and "not a capture (it looks like a text file)" in warnings[0] and "next capture" in warnings[0]
    # the first frame is said (the target reaches us), the next ones are not (a daemon's log)
    notes = [line for line in err.decode().splitlines() if not line.startswith("smem: warning:")]
    assert len(notes) == 1 and notes[0].startswith("smem: recorded frame 1 from 127.0.0.1:"), err
    _, frames = index_lines(rec)
    assert [f["frame"] for f in frames] == [1, 2, 3] and frames[0]["smaps"] and not frames[1]["smaps"]
    assert marker in pids_of(rec) and marker in pids_of(rec, "--at", "1")


def _damage(kind, rec):
    frame = rec / "frames" / "000002.zst"
    if kind == "garbage index":
        (rec / "index.jsonl").write_bytes(b"garbage\n")
    elif kind == "a line that is not a frame":
        with open(rec / "index.jsonl", "ab") as f:
            f.write(b'{"frame": "../../etc/passwd", "time": 1, "smaps": true, "anchor": 1}\n')
    elif kind == "a frame missing":
        frame.unlink()
    elif kind == "a frame cut short":
        frame.write_bytes(frame.read_bytes()[:100])
    elif kind == "a frame that is a link":
        frame.unlink()
        frame.symlink_to("/etc/passwd")
    elif kind == "a line nested deeper than the json parser goes":
        with open(rec / "index.jsonl", "ab") as f:
            f.write(b"[" * 100000 + b"\n")
    elif kind == "a header nested deeper than the json parser goes":
        (rec / "index.jsonl").write_bytes(b"[" * 100000 + b"\n")
    elif kind == "frames, a link to another recording's":
        other = rec.parent / "other"
        (rec / "frames").rename(other)
        (rec / "frames").symlink_to(other)
    elif kind == "no frame":
        (rec / "index.jsonl").write_bytes((rec / "index.jsonl").read_bytes().split(b"\n")[0] + b"\n")


@pytest.fixture(scope="module")
def small_recording(tmp_path_factory, pid_namespace):
    rec = tmp_path_factory.mktemp("small") / "rec"
    smem_in(pid_namespace, "record", "-o", rec, "--interval", "0.1", "--count", "2")
    return rec


@pytest.mark.parametrize("kind", ["garbage index", "a line that is not a frame", "a frame missing",
                                  "a frame cut short", "a frame that is a link", "no frame",
                                  "a line nested deeper than the json parser goes",
                                  "a header nested deeper than the json parser goes",
                                  "frames, a link to another recording's"])
def test_a_damaged_recording_is_one_line(small_recording, tmp_path, kind):
    import shutil
    rec = tmp_path / "rec"
    shutil.copytree(small_recording, rec, symlinks=True)
    assert run_smem("-S", rec, "-u").returncode == 0
    _damage(kind, rec)
    for args in (["-S", rec, "-u"], ["diff", rec], ["-S", rec, "--all-frames", "-F", "csv"]):
        proc = run_smem(*args)
        lines = proc.stderr.decode().splitlines()
        assert proc.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"smem: {rec}"), (args, lines)
        if "--all-frames" in args and kind.startswith("a frame"):  # (frame 2 damaged: frame 1 is played)
            assert lines[0].endswith(": skipped, the other frames played"), lines
            assert {row.split(",")[1] for row in proc.stdout.decode().splitlines()[1:]} == {"1"}, proc.stdout


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("line", [b"\n", b"{}\n"])
def test_an_index_of_millions_of_short_lines_is_read_in_memory_like_its_size(tmp_path, line):
    """The index was split into a list of every line before the first was parsed: 24 MiB of
    ``{}`` lines (a 256 MiB index is allowed) took 350 MiB, eight pointers a line of empty ones.
    8 MiB of lines is enough to tell: the list took 138 MiB of empty ones, 182 MiB of ``{}``."""
    from hostile_bounds import max_rss_growth
    from smem.sources.recorded import Recording
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "index.jsonl").write_bytes(b'{"format": "smem-recording", "version": 1}\n' + line * ((8 << 20) // len(line)))
    code, peak = max_rss_growth(lambda: Recording(str(rec)).frames)
    assert code == (0 if line == b"\n" else 1) and peak < 100, (code, peak)
