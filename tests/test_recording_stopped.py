"""A recording of this machine stopped by a signal (smem/recording/stopping.py): the usual end of
an open-ended ``smem record DIR``.  It ends on a key frame of the machine when it was stopped,
where a page of it opens and what -m of it reads, not on the key frame before (up to an hour
older); a second signal stops without that frame, and what was written still reads back.
Recorders run in the module's PID namespace (conftest's pid_namespace) and are signalled there."""

import os
import signal
import time

import pytest

from conftest import run_smem
from test_recording import index_lines, pids_of
from test_tcp_capture import marker_process, smem_in, smem_process

pytest.importorskip("zstandard", reason="smem[compression]: zstandard not installed")


def _recorder(rec, namespace):
    """``smem record`` of the namespace every 0.05 s, key frames only the first (and the last):
    its Popen, and its pid (the one to signal: nsenter passes no signal on)."""
    proc = smem_process("record", "-o", rec, "--interval", "0.05", "--smaps-every", "100000", namespace=namespace)
    return proc, namespace.command_pid(proc)


def _wait_frames(rec, proc, count):
    deadline = time.monotonic() + 120
    while not ((rec / "index.jsonl").exists() and len(index_lines(rec)[1]) >= count):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.01)
    return len(index_lines(rec)[1])


def _stopped(proc):
    """The recorder's exit status and stderr lines, once it has stopped (it must, promptly)."""
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode().splitlines()


def _reads_back(rec):
    """Every frame the index names, numbered from 1 without a gap; each read back, and no temporary
    file left; the frame numbers."""
    numbers = [f["frame"] for f in index_lines(rec)[1]]
    assert numbers == list(range(1, len(numbers) + 1))
    for number in numbers:
        assert run_smem("-S", rec, "--at", number, "-u", check=True).stdout.startswith(b"User")
    assert run_smem("-S", rec, "--all-frames", "-F", "csv").returncode == 0
    for sub in ("frames", "anchors"):
        assert not [n for n in os.listdir(rec / sub) if n.endswith(".tmp")], sub
    return numbers


def test_a_duration_that_ends_while_the_recorder_is_held_up_still_ends_on_a_key_frame(tmp_path, pid_namespace):
    """A frame (or the wait before the next) that runs past --duration: the frame before was not
    known as the last, and the run ended on a frame without smaps (a loaded machine, a suspended
    one, or here SIGSTOP for longer than the duration).  It ends on a key frame taken then."""
    rec = tmp_path / "rec"
    proc = smem_process("record", "-o", rec, "--interval", "0.2", "--duration", "2", "--smaps-every", "100000",
                        namespace=pid_namespace)
    try:
        recorder = pid_namespace.command_pid(proc)
        _wait_frames(rec, proc, 2)  # (the second without smaps, and not the last: 1.8 s are left)
        os.kill(recorder, signal.SIGSTOP)
        time.sleep(2.5)
        for pid in {recorder, proc.pid}:  # (nsenter stops itself when its child stops, until continued)
            os.kill(pid, signal.SIGCONT)
        code, lines = _stopped(proc)
    finally:
        proc.kill()
        proc.wait()
    assert code == 0, lines
    keys = [f["smaps"] for f in index_lines(rec)[1]]
    assert keys[0] and keys[-1] and not any(keys[1:-1]), keys
    _reads_back(rec)


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 0), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_recording_stopped_by_a_signal_ends_on_a_key_frame_taken_then(tmp_path, pid_namespace, signum, status):
    rec = tmp_path / "rec"
    proc, recorder = _recorder(rec, pid_namespace)
    try:
        _wait_frames(rec, proc, 1)
        # a process started after the first key frame: only a key frame taken at the end has its mappings
        with marker_process(pid_namespace) as marker:
            before = _wait_frames(rec, proc, 1)
            _wait_frames(rec, proc, before + 2)
            os.kill(recorder, signum)
            code, lines = _stopped(proc)
    finally:
        proc.kill()
        proc.wait()
    name = signal.Signals(signum).name
    _, frames = index_lines(rec)
    last = frames[-1]["frame"]
    assert code == status, lines  # (what smem record exited with on this signal before it took a last frame)
    assert lines[-2:] == [
        f"smem: {name}: taking a last frame with every smaps before stopping (a second signal stops at once)",
        f"smem: stopped by {name}: frame {last}, the recording's last, keeps every smaps"], lines
    assert [f["smaps"] for f in frames] == [True] + [False] * (len(frames) - 2) + [True]
    assert frames[-1]["anchor"] == last
    assert _reads_back(rec)[-1] == last
    # -m and -M of the recording's end read its last frame, where the marker is; not frame 1's smaps
    assert marker in pids_of(rec, "-M", "[stack]") and marker not in pids_of(rec, "--at", "1")
    mappings = run_smem("-S", rec, "-m", "-P", "^sleep 3600$")
    assert mappings.returncode == 0 and b"[stack]" in mappings.stdout and b"key frame for" not in mappings.stderr


def test_a_second_signal_stops_without_the_last_frame_and_leaves_the_recording_whole(tmp_path, pid_namespace):
    """Stopped (SIGSTOP) with both signals sent, the recorder is sure to take the second before its
    last frame is whole: SIGINT first (the kernel delivers the lower number first), SIGTERM then."""
    rec = tmp_path / "rec"
    proc, recorder = _recorder(rec, pid_namespace)
    try:
        _wait_frames(rec, proc, 3)
        os.kill(recorder, signal.SIGSTOP)
        os.kill(recorder, signal.SIGINT)
        os.kill(recorder, signal.SIGTERM)
        os.kill(recorder, signal.SIGCONT)
        # nsenter stops itself when it sees its child stopped, until continued: on a loaded machine
        # it saw that after a single SIGCONT, and stayed stopped; continued until it ends
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            os.kill(proc.pid, signal.SIGCONT)
            time.sleep(0.05)
        code, lines = _stopped(proc)
    finally:
        proc.kill()
        proc.wait()
    numbers = _reads_back(rec)  # (the frame under way when it was stopped is dropped: never named)
    assert code == 0, lines  # the status of the first signal, Ctrl-C's
    assert lines[-1] == (f"smem: SIGTERM after SIGINT: stopped without the last frame; "
                         f"the recording ends at frame {numbers[-1]}"), lines
    assert not index_lines(rec)[1][-1]["smaps"]
    # and it goes on: a resumed recording starts with a key frame after the last
    smem_in(pid_namespace, "record", "-o", rec, "--count", "1")
    _, after = index_lines(rec)
    assert [f["frame"] for f in after] == numbers + [numbers[-1] + 1] and after[-1]["smaps"]


def test_two_signals_while_a_frame_is_indexed_stop_as_two():
    """SIGINT then SIGTERM while a frame is named in the index (StopSignals.held): the first is
    raised when that is done, as itself (Ctrl-C's exit status), and the second at the last frame's
    start, so it drops that frame.  The second overwrote the first: SIGTERM stopped (143), and the
    last frame was taken as if one signal had come."""
    from smem.recording.stopping import Stopped, StopSignals
    with StopSignals() as stop:
        with pytest.raises(Stopped) as first:
            with stop.held():
                os.kill(os.getpid(), signal.SIGINT)
                os.kill(os.getpid(), signal.SIGTERM)
        assert first.value.signum == signal.SIGINT and first.value.exit_status == 0
        with pytest.raises(Stopped) as second:
            stop.resume()
        assert second.value.signum == signal.SIGTERM
        stop.pause()


def test_a_signal_whose_stop_was_lost_in_a_finalizer_still_stops_the_recorder():
    """A signal that lands in a __del__ (a held descriptor's, a generator the collector closes)
    raises Stopped there, where Python prints "Exception ignored" and goes on: the recorder
    recorded on, ignoring every later signal (a clean CI run hung 120 s on it).  check(), at
    each frame, raises it again."""
    from smem.recording.stopping import Stopped, StopSignals

    class Finalized:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # (the handler runs between two instructions: here)
                pass

    import sys
    lost_where_raised, hook = [], sys.unraisablehook  # (Python's "Exception ignored in ...")
    sys.unraisablehook = lost_where_raised.append
    try:
        with StopSignals() as stop:
            Finalized()
            assert [type(u.exc_value) for u in lost_where_raised] == [Stopped]
            with pytest.raises(Stopped) as lost:
                stop.check()
            assert lost.value.signum == signal.SIGINT
            stop.resume()
            stop.check()  # (met: nothing more to raise)
            stop.pause()
    finally:
        sys.unraisablehook = hook


def test_a_sigint_ignored_when_the_recorder_started_stays_ignored_and_sigterm_stops_it(tmp_path, pid_namespace):
    """A script's ``smem record ... &`` (a shell without job control), starts the recorder
    with SIGINT ignored: it stays ignored, as in any program, so ``kill -INT`` of such a recorder
    does nothing (it looked like a hang: the recorder now says so at its start, under the line
    that it records), and SIGTERM stops it as usual."""
    rec = tmp_path / "rec"
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc, recorder = _recorder(rec, pid_namespace)
    finally:
        signal.signal(signal.SIGINT, before)
    try:
        with open(f"/proc/{recorder}/status") as status:  # (the premise: nsenter passed SIG_IGN on)
            ignored = int(next(line for line in status if line.startswith("SigIgn:")).split()[1], 16)
        assert ignored & (1 << (signal.SIGINT - 1))
        frames = _wait_frames(rec, proc, 2)
        os.kill(recorder, signal.SIGINT)
        _wait_frames(rec, proc, frames + 3)  # (still recording)
        os.kill(recorder, signal.SIGTERM)
        code, lines = _stopped(proc)
    finally:
        proc.kill()
        proc.wait()
    assert code == 128 + signal.SIGTERM, lines
    assert lines[-1].startswith("smem: stopped by SIGTERM: frame "), lines
    # said at the start, where the recorder's log is read; no stop line of SIGINT
    assert lines[1] == ("smem: SIGINT is ignored, as what started smem left it (a script's &): Ctrl-C and "
                        "kill -INT do not stop this recording; SIGTERM does"), lines
    assert not any("SIGINT" in line for line in lines[2:]), lines
