"""The recordings test_page_recording.py opens the pages of: a process grows while smem record reads it."""

import os
import signal
import subprocess
import sys

from conftest import TESTS
from page_documents import write_page


#: grows by 100 MiB (touched) at each line on stdin, saying so when done; large enough to be
#: among the largest processes of a busy machine
GROWER = ("import sys\nheld = [b'\\x01' * (200 << 20)]\nprint('ready', flush=True)\n"
          "for line in sys.stdin:\n    held.append(b'\\x02' * (100 << 20))\n    print('grown', flush=True)\n")


def recorded_growth(where, namespace):
    """The pages of two three-frame recordings made at once in ``namespace`` (tests/pid_namespace.py:
    the recorders read only what runs there, not the whole machine), in which a process grew by
    100 MiB of anonymous memory after the first frame and after the second: "every" kept every
    frame's smaps, "rollups" the first frame's only (the others keep smaps_rollup).  Name ->
    (path, the pid, the recording).  At once: the two wait out the same two intervals."""
    from test_recording_playback import index_lines, wait_frames
    grower = subprocess.Popen(namespace.argv([sys.executable, "-c", GROWER]), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    grower_pid = namespace.command_pid(grower)  # (nsenter forwards no signal: it is the one to kill)
    recorders = {}
    try:
        assert grower.stdout.readline() == "ready\n"
        for name, smaps_every in (("every", 1), ("rollups", 3)):
            rec = where / name
            recorders[name] = rec, subprocess.Popen(
                namespace.argv([sys.executable, "-m", "smem", "record", "-o", rec, "--interval", "2", "--count", "3",
                                "--smaps-every", smaps_every], cwd=TESTS.parent),
                cwd=TESTS.parent, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # each growth done once both have the frame, before the next one begins: the recorders
        # are stopped (SIGSTOP) from when they wrote the frame until the growth is whole, which
        # on a loaded machine took longer than the interval, and frame 2 caught half of it
        pids = {name: namespace.command_pid(recorder) for name, (_, recorder) in recorders.items()}
        for frame in (1, 2):
            for name, (rec, recorder) in recorders.items():
                wait_frames(rec, recorder, frame)
                os.kill(pids[name], signal.SIGSTOP)
                assert len(index_lines(rec)[1]) == frame, f"{name}: frame {frame + 1} came before the growth"
            grower.stdin.write("grow\n")
            grower.stdin.flush()
            assert grower.stdout.readline() == "grown\n"
            for name, (_, recorder) in recorders.items():  # (nsenter stops itself when its child stops)
                os.kill(pids[name], signal.SIGCONT)
                os.kill(recorder.pid, signal.SIGCONT)
        for rec, recorder in recorders.values():
            assert recorder.wait(timeout=120) == 0, recorder.stderr.read()
        pid = namespace.pid_in(grower_pid)
    finally:
        for _, recorder in recorders.values():
            if recorder.poll() is None:
                recorder.kill()
                recorder.wait()
        os.kill(grower_pid, signal.SIGKILL)
        grower.wait()
    made = {}
    for name, (rec, _) in recorders.items():
        path = str(where / f"{name}.html")
        write_page("-S", rec, path=path)
        made[name] = path, pid, rec
    return made
