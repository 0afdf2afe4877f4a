"""A command that runs until stopped, started by a script's ``&`` (a shell without job control
starts it with SIGINT ignored), keeps SIGINT ignored and says so once at its start, in smem
record's words: ``smem capture --listen ... &`` ignored Ctrl-C and kill -INT silently (it looked
like a hang), and ``smem serve ... &`` was stopped by the SIGINT its script meant for itself."""

import os
import shlex
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import FIXTURES, TESTS

pytestmark = pytest.mark.uses("network")

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _contains(path, text):
    return lambda: path.exists() and text in path.read_text(errors="replace")


def _cases(tmp):
    """(arguments, what the line says SIGINT does not stop, the status SIGTERM exits with, ready
    when this is true)."""
    err, out = tmp / "stderr", tmp / "stdout"
    return {
        "capture --listen": (["capture", "--listen", "127.0.0.1:0", "-o", tmp / "x.tgz"], "this wait for a capture",
                             143, _contains(err, "listening on")),
        "-S tcp://": (["-S", f"tcp://127.0.0.1:{_free_port()}"], "this wait for a capture", 143,
                      _contains(err, "listening on")),
        "record --listen": (["record", "--listen", "127.0.0.1:0", "-o", tmp / "rec"], "this recording", 143,
                            _contains(err, "listening on")),
        "serve": (["serve", "--listen", "127.0.0.1:0", "-S", CAPTURE], "this server", 0,
                  _contains(err, "serving http://")),
        "serve --textfile": (["serve", "--textfile", tmp, "-S", CAPTURE], "this server", 0,
                             (tmp / "smem.prom").exists),
        "watch": (["--interval", "5", "-j", "1", "-P", "^smem-no-such-program$"], "watching", 143,
                  _contains(out, "frame 1")),
    }


def _wait(condition, seconds=60):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _sigint_ignored(pid):
    with open(f"/proc/{pid}/status") as status:
        ignored = int(next(line for line in status if line.startswith("SigIgn:")).split()[1], 16)
    return bool(ignored & (1 << (signal.SIGINT - 1)))


@pytest.mark.parametrize("case", ["capture --listen", "-S tcp://", "record --listen", "serve", "serve --textfile",
                                  "watch"])
def test_started_by_a_script_sigint_stays_ignored_said_once_and_sigterm_stops_it(case, tmp_path):
    if case.startswith("serve"):
        pytest.importorskip("prometheus_client", reason="smem[metrics]: prometheus_client not installed")
    if case.startswith("record"):
        pytest.importorskip("zstandard", reason="smem[compression]: zstandard not installed")
    args, what, status, ready = _cases(tmp_path)[case]
    command = shlex.join([sys.executable, "-m", "smem", *map(str, args)])
    err, out = tmp_path / "stderr", tmp_path / "stdout"
    script = f"{command} >{shlex.quote(str(out))} 2>{shlex.quote(str(err))} & echo $!; wait $!; echo $?"
    sh = subprocess.Popen(["sh", "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                          cwd=TESTS.parent)
    pid = None
    try:
        pid = int(sh.stdout.readline())
        # (exec'd: the shell's own child has the script, with its spaces, as one argument)
        assert _wait(lambda: b"\0-m\0smem\0" in open(f"/proc/{pid}/cmdline", "rb").read())
        assert _sigint_ignored(pid)  # (the premise: sh started it with SIGINT ignored, exec kept it so)
        assert _wait(ready), err.read_text()
        os.kill(pid, signal.SIGINT)
        time.sleep(1.0)
        assert sh.poll() is None, err.read_text()  # (still running)
        os.kill(pid, signal.SIGTERM)
        code = int(sh.stdout.readline())
        sh.wait(timeout=30)
    finally:
        if sh.poll() is None:
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
            sh.kill()
            sh.wait()
    lines = err.read_text().splitlines()
    assert code == status, lines
    said = [line for line in lines if "SIGINT" in line]
    assert said == [f"smem: SIGINT is ignored, as what started smem left it (a script's &): Ctrl-C and "
                    f"kill -INT do not stop {what}; SIGTERM does"], lines
