"""The cpu column (smem/views/cpu.py): % of one core, since the process started in a report
(as ps), over the interval between two readings in watch mode, smem diff and smem serve (as
top).  Real busy and idle processes of this machine; /proc trees whose ticks and uptime are known."""

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, TESTS, run_smem
from smem.parsers.stat import parse_stat
from smem.parsers.uptime import parse_uptime

BUSY = "import sys; sys.stdout.write('ready\\n'); sys.stdout.flush()\nwhile True: pass\n"
IDLE = "import sys, time; sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(600)\n"


def _started(code):
    """A real process running ``code``, once it says it is ready; killed afterwards."""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"ready\n"
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def busy():
    yield from _started(BUSY)


@pytest.fixture
def idle():
    yield from _started(IDLE)


def _ticks_and_uptime(pid):
    """The process's utime + stime and the uptime, read now."""
    ticks = parse_stat(Path(f"/proc/{pid}/stat").read_bytes()).cpu_ticks
    return ticks, parse_uptime(Path("/proc/uptime").read_bytes())


@pytest.mark.parametrize("data, seconds", [(b"350735.47 234388.90\n", 350735.47), (b"12 3", 12.0), (b"", None),
                                           (b"x 1", None), (b"-5.0 1", None), (b"1" * 30 + b" 1", None),
                                           (b"1.5.5 2", None), (b"\xff\xfe", None), (b"nan 1", None)])
def test_uptime_parser(data, seconds):
    assert parse_uptime(data) == seconds


def test_a_report_says_since_the_process_started_as_ps_does(busy, idle):
    time.sleep(1.5)
    rows = {r["pid"]: r["cpu"] for r in json.loads(run_smem("--pid", f"{busy},{idle}", "-c", "pid cpu", "-F",
                                                             "json").stdout)["rows"]}
    ps = subprocess.run(["ps", "-o", "pid=,pcpu=", "-p", f"{busy},{idle}"], capture_output=True, text=True).stdout
    expected = {int(pid): float(pcpu) for pid, pcpu in (line.split() for line in ps.splitlines())}
    assert abs(rows[busy] - expected[busy]) <= 5, (rows, expected)
    assert rows[idle] <= 1.0 and expected[idle] <= 1.0


def test_watch_mode_says_over_the_interval(busy, idle):
    """A busy loop shows what it ran in the interval, 100% of a core where it had one; measured
    against the process's own ticks read around the watch (the machine's load may take its core)."""
    before = _ticks_and_uptime(busy)
    res = subprocess.run([sys.executable, "-m", "smem", "--interval", "1", "--count", "6", "--pid",
                          f"{busy},{idle}", "-c", "pid cpu", "-F", "json"], capture_output=True, cwd=TESTS.parent,
                         timeout=120)
    after = _ticks_and_uptime(busy)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in res.stdout.decode().splitlines()]  # JSON Lines: a row a line
    assert max(r["frame"] for r in rows) == 6
    last = {r["pid"]: r["cpu"] for r in rows if r["frame"] == 6}
    reference = 100.0 * (after[0] - before[0]) / 100 / (after[1] - before[1])
    print(f"busy loop: watch mode {last[busy]}% (5 s since the first frame), ticks around it {reference:.1f}%")
    assert abs(last[busy] - reference) <= 5
    if reference >= 97:  # it had its core: the target
        assert 95 <= last[busy] <= 105
    assert last[idle] <= 1.0


def _tree(tmp_path, name, uptime, ticks, start_ticks=50000):
    """A copy of the gpu_proc tree whose process 100 ran ``ticks`` (half user, half system)
    by ``uptime`` seconds after boot, started ``start_ticks`` after boot."""
    root = tmp_path / name
    shutil.copytree(FIXTURES / "gpu_proc" / "tree", root)
    (root / "uptime").write_text(f"{uptime:.2f} 0.00\n")
    stat = (root / "100" / "stat").read_bytes().split()
    stat[13], stat[14], stat[21] = b"%d" % (ticks // 2), b"%d" % (ticks - ticks // 2), b"%d" % start_ticks
    (root / "100" / "stat").write_bytes(b" ".join(stat) + b"\n")
    return root


def test_two_readings_give_the_rate_between_them_and_one_since_start(tmp_path):
    old = _tree(tmp_path, "old", 1000.0, 100)
    new = _tree(tmp_path, "new", 1010.0, 600)  # 500 ticks (5 s at USER_HZ 100) in 10 s
    report = json.loads(run_smem("-S", str(new), "--pid", "100", "-c", "pid cpu", "-F", "json").stdout)
    assert report["rows"][0]["cpu"] == round(100 * 6.0 / (1010.0 - 500.0), 1)  # since start: 1.2
    diff = json.loads(run_smem("diff", str(old), str(new), "--pid", "100", "-c", "pid cpu", "-F", "json").stdout)
    assert diff["rows"][0]["cpu"] == 50.0
    users = json.loads(run_smem("diff", str(old), str(new), "-u", "-c", "user cpu", "-F", "json").stdout)
    assert users["rows"][0]["cpu"] == 50.0  # the others ran 0 ticks in both


def test_a_capture_without_uptime_shows_a_dash():
    rows = json.loads(run_smem("-S", str(FIXTURES / "gpu_proc" / "tree"), "-c", "pid cpu", "-F", "json").stdout)
    assert rows["rows"] and all(r["cpu"] is None for r in rows["rows"])
