"""A recording's page draws the processes that grew beside the largest (smem/page/timeline.py):
a leak in a small process is what a recording is looked at for."""

import os
import signal
import subprocess
import sys

import pytest

from conftest import TESTS
from page_documents import embedded, write_page
from test_recording_playback import wait_frames

pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
pytest.importorskip("zstandard", reason="smem[compression]: zstandard not installed")
pytestmark = pytest.mark.xdist_group("page")

#: holds 32 MiB (touched), more than the grower ever does
STEADY = "import sys\nheld = b'\\x01' * (32 << 20)\nprint('ready', flush=True)\nsys.stdin.read()\n"
#: grows by 6 MiB (touched) at each line on stdin
GROWER = ("import sys\nheld = []\nprint('ready', flush=True)\n"
          "for line in sys.stdin:\n    held.append(b'\\x02' * (6 << 20))\n    print('grown', flush=True)\n")


def test_a_small_process_that_grew_is_drawn_beside_the_largest(tmp_path, pid_namespace):
    """Eleven processes larger than a grower that gained 12 MiB over the recording: the page drew
    the ten largest only, and the leak was in none of its lines."""
    started = []
    try:
        for script in [STEADY] * 11 + [GROWER]:
            started.append(subprocess.Popen(pid_namespace.argv([sys.executable, "-c", script]), stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, text=True))
        for proc in started:
            assert proc.stdout.readline() == "ready\n"
        grower = started[-1]
        rec = tmp_path / "rec"
        recorder = subprocess.Popen(pid_namespace.argv([sys.executable, "-m", "smem", "record", "-o", rec,
                                                        "--interval", "1", "--count", "3"], cwd=TESTS.parent),
                                    cwd=TESTS.parent, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
        for frame in (1, 2):  # a growth after the first frame and after the second
            wait_frames(rec, recorder, frame)
            grower.stdin.write("grow\n")
            grower.stdin.flush()
            assert grower.stdout.readline() == "grown\n"
        assert recorder.wait(timeout=120) == 0, recorder.stderr.read()
        pids = [pid_namespace.pid_in(pid_namespace.command_pid(p)) for p in started]
    finally:
        for proc in started:
            os.kill(pid_namespace.command_pid(proc), signal.SIGKILL)
            proc.wait()
    page = write_page("-S", rec, path=str(tmp_path / "rec.html"))
    drawn = [p["pid"] for p in embedded(page)["timeline"][0]["summary"]["processes"]]
    grower_pid = pids[-1]
    assert grower_pid in drawn and drawn.index(grower_pid) >= 10, drawn  # (after the ten largest)
    line = embedded(page)["timeline"][0]["summary"]["processes"][drawn.index(grower_pid)]["pss"]
    assert line[-1] - line[0] >= 11 << 10, line
