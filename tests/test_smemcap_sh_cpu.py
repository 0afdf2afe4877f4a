"""smemcap.sh's own shell has a CPU% a shell can have.

The cpu column is a process's CPU time over its age at the capture's uptime.  The script read
uptime before its other members and copied its own shell when the loop reached its pid, the last
in a PID namespace: by then the shell had worked through every other process, and its CPU time
outran its age at that uptime, 400% of one core on a two-core board, 2200% with 60 processes.
It reads uptime again just before the processes and copies its own shell first.
"""

import json
import shutil
import subprocess

import pytest

from conftest import run_smem
from smemcap_shells import BUSYBOX, DASH, SCRIPT

SHELLS = {"dash": [DASH] if DASH else None, "busybox": [BUSYBOX, "sh"] if BUSYBOX else None}


@pytest.mark.process
@pytest.mark.parametrize("shell", SHELLS)
def test_the_capturing_shell_uses_at_most_one_core(shell, tmp_path):
    if SHELLS[shell] is None:
        pytest.skip(f"no {shell}")
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    capture = tmp_path / "box.tgz"
    busy = "i=0; while [ $i -lt 60 ]; do sleep 300 & i=$((i+1)); done; sleep 0.3; "
    run = " ".join([*SHELLS[shell], str(SCRIPT), str(capture)]) + "; exit $?"  # (not exec'd: a pid after the 60)
    argv = ["unshare", "-fp", "--mount-proc", *SHELLS[shell], "-c", busy + run]
    proc = subprocess.run(argv, capture_output=True, timeout=120)
    if proc.returncode != 0 and b"unshare" in proc.stderr:
        pytest.skip(f"no PID namespace here: {proc.stderr.decode().strip()}")
    assert proc.returncode == 0, proc.stderr
    out = run_smem("-S", str(capture), "-c", "pid command cpu", "-F", "json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["rows"]
    (own,) = [r for r in rows if r["command"] == " ".join([*SHELLS[shell], str(SCRIPT), str(capture)])]
    assert len(rows) > 60
    # a shell is one thread: 100% of a core at most, with room for the clock's 10 ms ticks
    assert own["cpu"] is not None and own["cpu"] <= 150, own
