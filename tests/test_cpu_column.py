"""The cpu column (smem/views/cpu.py): % of one core, since the process started in a report
(as ps), over the interval between two readings in watch mode, smem diff and smem serve (as
top).  Real busy and idle processes of this machine; /proc trees whose ticks and uptime are known.

The real processes are read in one window, by watch mode and smem serve at once and by a report
after them: one busy loop's few seconds serve all three (a busy loop costs a core while it runs).
"""

import bisect
import json
import shutil
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from conftest import FIXTURES, TESTS, run_smem
from smem.parsers.stat import parse_stat
from smem.parsers.uptime import parse_uptime

BUSY = "import sys; sys.stdout.write('ready\\n'); sys.stdout.flush()\nwhile True: pass\n"
#: a shell that sleeps: next to nothing from its start (an interpreter's start is a tick or two),
#: where an idle process must stay under 1% of a core
IDLE = ["sh", "-c", "echo ready; exec sleep 600"]
#: runs until it has used 0.2 s of CPU, then sleeps: busy since it started, idle from then on
SPENT = ("import sys, time\nwhile time.process_time() < 0.2: pass\n"
         "sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(600)\n")


def _started(codes, started):
    """The pids of real processes running each of ``codes`` (Python, or an argv), all started
    before any is waited for, once each says it is ready; added to ``started``, to be killed."""
    for code in codes:
        started.append(subprocess.Popen([sys.executable, "-c", code] if isinstance(code, str) else code,
                                        stdout=subprocess.PIPE))
    for proc in started:
        assert proc.stdout.readline() == b"ready\n"
    return [proc.pid for proc in started]


def _ticks_and_uptime(pid):
    """The process's utime + stime and the uptime, read now."""
    ticks = parse_stat(Path(f"/proc/{pid}/stat").read_bytes()).cpu_ticks
    return ticks, parse_uptime(Path("/proc/uptime").read_bytes())


@pytest.mark.parametrize("data, seconds", [(b"350735.47 234388.90\n", 350735.47), (b"12 3", 12.0), (b"", None),
                                           (b"x 1", None), (b"-5.0 1", None), (b"1" * 30 + b" 1", None),
                                           (b"1.5.5 2", None), (b"\xff\xfe", None), (b"nan 1", None)])
def test_uptime_parser(data, seconds):
    assert parse_uptime(data) == seconds


class _TickSampler(threading.Thread):
    """(uptime, utime + stime) of ``pid`` every 10 ms until stopped: what the process ran up to
    any moment, to be read back for whichever interval smem measured."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.samples, self.done = pid, [], threading.Event()

    def run(self):
        while not self.done.wait(0.01):
            ticks, uptime = _ticks_and_uptime(self.pid)
            self.samples.append((uptime, ticks))

    def ticks_at(self, uptime):
        """The process's ticks at the last sample taken by ``uptime``."""
        times = [t for t, _ in self.samples]
        return self.samples[max(bisect.bisect_right(times, uptime) - 1, 0)][1]

    def percent(self, start, end):
        """% of one core the process ran from uptime ``start`` to ``end``, as its ticks say."""
        return 100.0 * (self.ticks_at(end) - self.ticks_at(start)) / 100 / (end - start)

    def percents_read_before(self, start, end, lag=0.25):
        """(least, most) % over the intervals that end ``start`` and ``end`` may have begun at:
        each up to ``lag`` s earlier (what smem read before its frame arrived, on a loaded machine
        where the loop's share of a core moves within the interval)."""
        return self.percents_within(start - lag, lag, end - lag, lag)

    def percents_within(self, start, start_span, end, end_span):
        """(least, most) % over the intervals from ``start`` to ``end``, each of the two moved
        later by up to its span (10 ms steps): a collection reads a process somewhere within it."""
        def shifts(span):
            return [i / 100 for i in range(int(span * 100) + 1)]
        values = [self.percent(start + a, end + b) for a in shifts(start_span) for b in shifts(end_span)]
        return min(values), max(values)


def _uptime():
    return parse_uptime(Path("/proc/uptime").read_bytes())


#: the tests of the window: on one worker, which makes it once
WINDOW = pytest.mark.xdist_group("cpu_window")


def _watch_lines(proc, rows, arrived):
    """Watch mode's JSON Lines: a row a line, each frame's as soon as it is read, and the uptime
    at which each frame's first row arrived."""
    for line in proc.stdout:
        row = json.loads(line)
        arrived.setdefault(row["frame"], _uptime())
        rows.append(row)


def _served_writes(proc, path):
    """The text of each write of smem serve's textfile ``path``, polled every 10 ms until it exits
    (killed after 120 s: a serve that does not end fails the tests, not hangs them)."""
    written, deadline = [], time.monotonic() + 120
    while True:
        if time.monotonic() > deadline:
            proc.kill()
        running = proc.poll() is None
        text = path.read_text() if path.exists() else None
        if text is not None and (not written or text != written[-1]):
            written.append(text)
        if not running:
            return written
        time.sleep(0.01)


@pytest.fixture(scope="module")
def window(tmp_path_factory):
    """A busy loop, an idle shell and a process busy before and idle since, read at once by
    watch mode (--interval 0.5, 4 frames: 1.5 s, serve's interval) and smem serve (--interval 1.5, 2
    collections), then by a report, while the busy loop's ticks are sampled: what each said, and
    the sampler."""
    textfile = tmp_path_factory.mktemp("cpu-textfile")
    processes = []
    try:
        busy, idle, spent = _started((BUSY, IDLE, SPENT), processes)
        clock_offset = time.time() - _uptime()  # wall clock less uptime: the same instant in both
        sampler = _TickSampler(busy)
        sampler.start()
        watch = subprocess.Popen([sys.executable, "-m", "smem", "--interval", "0.5", "--count", "4", "--pid",
                                  f"{busy},{idle}", "-c", "pid cpu", "-F", "json"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, cwd=TESTS.parent)
        serve = subprocess.Popen([sys.executable, "-m", "smem", "serve", "--textfile", str(textfile), "--interval",
                                  "1.5", "--count", "2", "--pid", f"{busy},{spent}", "--top", "5"],
                                 stderr=subprocess.PIPE, cwd=TESTS.parent)
        processes += [watch, serve]
        rows, arrived = [], {}
        reader = threading.Thread(target=_watch_lines, args=(watch, rows, arrived), daemon=True)
        reader.start()
        written = _served_writes(serve, textfile / "smem.prom")
        reader.join(timeout=120)
        watched = watch.wait(timeout=120), watch.stderr.read()
        served = serve.wait(timeout=120), serve.stderr.read()
        sampler.done.set()
        sampler.join()
        report = run_smem("--pid", f"{busy},{idle}", "-c", "pid cpu", "-F", "json")
        ps = subprocess.run(["ps", "-o", "pid=,pcpu=", "-p", f"{busy},{idle}"], capture_output=True, text=True).stdout
        since_start = process_since_start(spent)
        return types.SimpleNamespace(busy=busy, idle=idle, spent=spent, sampler=sampler, clock_offset=clock_offset,
                                     watched=watched, rows=rows, arrived=arrived, served=served, written=written,
                                     report=report, ps=ps, since_start=since_start)
    finally:
        for proc in processes:
            proc.kill()
            proc.wait()


@pytest.mark.uses("cpu")
@WINDOW
def test_a_report_says_since_the_process_started_as_ps_does(window):
    busy, idle = window.busy, window.idle
    assert window.report.returncode == 0, window.report.stderr
    rows = {r["pid"]: r["cpu"] for r in json.loads(window.report.stdout)["rows"]}
    expected = {int(pid): float(pcpu) for pid, pcpu in (line.split() for line in window.ps.splitlines())}
    assert abs(rows[busy] - expected[busy]) <= 5, (rows, expected)
    assert rows[idle] <= 1.0 and expected[idle] <= 1.0


@pytest.mark.uses("cpu")
@WINDOW
def test_watch_mode_says_over_the_interval(window):
    """A busy loop shows what it ran in the interval, 100% of a core where it had one.  The
    machine is shared: the reference is the CPU time the loop got over the same interval
    smem measured (the kernel's ticks, sampled every 10 ms; the interval from when the first
    and the last frame arrived), not what a core would give it."""
    busy, idle = window.busy, window.idle
    assert window.watched[0] == 0, window.watched[1]
    assert max(r["frame"] for r in window.rows) == 4
    last = {r["pid"]: r["cpu"] for r in window.rows if r["frame"] == 4}
    reference = window.sampler.percent(window.arrived[1], window.arrived[4])
    least, most = window.sampler.percents_read_before(window.arrived[1], window.arrived[4])
    print(f"busy loop: watch mode {last[busy]}% (1.5 s since the first frame), its ticks over the same "
          f"interval {reference:.1f}% ({least:.1f}-{most:.1f}% read up to 0.25 s before the frames came)")
    # within 5% of what it ran (the 100% +- 5% at a whole core), and a tick or two, over
    # the interval smem read: its frames came after it read them, later on a loaded machine
    assert least - max(0.05 * least, 1.0) <= last[busy] <= most + max(0.05 * most, 1.0)
    if reference >= 97:  # it had its core: the target
        assert 95 <= last[busy] <= 105
    assert last[idle] <= 1.0


@pytest.mark.uses("cpu")
@WINDOW
def test_smem_serve_says_over_the_interval_between_its_collections(window):
    """smem serve's cpu gauge: what each process ran between two collections (the textfile's
    two writes), as the kernel's ticks sampled over the same interval say (when each collection
    began: its smem_collection_timestamp_seconds less its duration); a process that was busy
    before and idle since shows 0, not its average since it started."""
    pytest.importorskip("prometheus_client", reason="smem serve needs smem[metrics] (prometheus_client)")
    busy, spent = window.busy, window.spent
    assert window.served[0] == 0, window.served[1]
    assert len(window.written) == 2
    # each collection began at its end (a wall-clock time) less its duration, and read the busy
    # loop's stat somewhere within it: on a loaded machine the loop's share of a core moves meanwhile
    (first, first_took), (second, second_took) = (
        (_gauge(text, "smem_collection_timestamp_seconds") - _gauge(text, "smem_collection_duration_seconds")
         - window.clock_offset, _gauge(text, "smem_collection_duration_seconds")) for text in window.written)
    gauges = {int(line.split('pid="')[1].split('"')[0]): float(line.split()[-1])
              for line in window.written[-1].splitlines() if line.startswith("smem_process_cpu_percent{")}
    reference = window.sampler.percent(first, second)
    least, most = window.sampler.percents_within(first, min(first_took, 1.0), second, min(second_took, 1.0))
    print(f"smem serve: busy loop {gauges[busy]}% (its ticks over the interval {reference:.1f}%, "
          f"{least:.1f}-{most:.1f}% as collections read it); "
          f"busy-then-idle {gauges[spent]}% (since it started {window.since_start:.1f}%)")
    slack = max(0.03 * most, 1.5)  # (a tick each end: both count whole ticks of 10 ms)
    assert least - slack <= gauges[busy] <= most + slack
    assert gauges[spent] <= 1.0 < window.since_start


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


def _gauge(text, name):
    """The value of the unlabelled gauge ``name`` in exposition ``text``."""
    return next(float(line.split()[1]) for line in text.splitlines() if line.startswith(name + " "))


def process_since_start(pid):
    """% of one core ``pid`` ran since it started, from its stat and the uptime (as ps)."""
    stat = parse_stat(Path(f"/proc/{pid}/stat").read_bytes())
    return 100.0 * stat.cpu_ticks / 100 / (_uptime() - stat.start_time / 100)
