"""Watch mode (smem --interval) as a stream: frames off a terminal, JSON lines and CSV records,
usage errors, and children that grow, start and exit between frames (a separate smem, read frame
by frame).  What a person sees on a terminal is test_watch_terminal.py.

The processes watched are real: this test's own (in-process runs), and children it starts.
"""

import csv
import io
import json
import os
import re
import select
import signal
import subprocess
import sys

import pytest

from conftest import FIXTURES, TESTS, run_smem

STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
ME = str(os.getpid())


def _frames(text):
    """{frame number: [table lines]} of a table stream, checking each frame's time line."""
    frames = {}
    for block in text.split("\n\n"):
        lines = block.strip("\n").split("\n")
        match = re.fullmatch(rf"# {STAMP} frame (\d+) of (\d+)", lines[0])
        assert match, block
        frames[int(match.group(1))] = lines[1:]
    return frames


@pytest.mark.parametrize("since", ["first", "previous"])
def test_frames_off_a_terminal_with_their_changes(since):
    proc = run_smem("--pid", ME, "--interval", "0.02", "--count", "3", "--delta", since,
                    "-c", "pid pss dpss status")
    assert proc.returncode == 0, proc.stderr
    frames = _frames(proc.stdout.decode())
    assert sorted(frames) == [1, 2, 3]
    rows = {}
    for number, lines in frames.items():
        assert lines[0].split() == ["PID", "PSS", "dPSS", "Status"]
        (pid, pss, dpss), = [line.split() for line in lines[1:]]  # (no status: the same process)
        assert pid == ME
        rows[number] = int(pss), int(dpss)
    assert rows[1][1] == 0  # the first frame is its own baseline
    for number in (2, 3):
        base = rows[1 if since == "first" else number - 1][0]
        assert rows[number][1] == rows[number][0] - base


@pytest.mark.uses("cpu")
def test_json_lines_and_csv_are_one_record_stream():
    jsonl = run_smem("--pid", ME, "--interval", "0.02", "--count", "2", "-F", "json", "-t", "-c", "pid pss dpss")
    assert jsonl.returncode == 0, jsonl.stderr
    records = [json.loads(line) for line in jsonl.stdout.decode().splitlines()]
    assert [(r["frame"], r["total"]) for r in records] == [(1, False), (1, True), (2, False), (2, True)]
    assert all(re.fullmatch(STAMP, r["timestamp"]) for r in records)
    assert records[0]["pid"] == int(ME) and records[0]["dpss"] == 0
    assert records[1]["pss"] == records[0]["pss"] and "pid" not in records[1]  # sums only: no pid 1
    comma = run_smem("--pid", ME, "--interval", "0.02", "--count", "2", "-F", "csv", "-c", "pid pss dpss status")
    assert comma.returncode == 0, comma.stderr
    text = comma.stdout.decode()
    assert text.count("timestamp") == 1  # one header for the whole stream
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == ["timestamp", "frame", "pid", "pss", "dpss", "status"]
    assert [(r["frame"], r["pid"]) for r in rows] == [("1", ME), ("2", ME)]
    assert rows[0]["dpss"] == "0" and int(rows[1]["dpss"]) == int(rows[1]["pss"]) - int(rows[0]["pss"])
    pandas = pytest.importorskip("pandas", reason="smem[test]: pandas not installed")
    frame = pandas.read_json(io.BytesIO(jsonl.stdout), lines=True)
    assert list(frame["frame"]) == [1, 1, 2, 2] and str(frame["timestamp"].dtype).startswith("datetime64")
    assert list(pandas.read_csv(io.StringIO(text))["pid"]) == [int(ME)] * 2


@pytest.mark.parametrize("args, said", [
    (["--count", "3"], "--count N is for watch mode"),
    (["--delta", "previous"], "--delta is for watch mode"),
    (["--interval", "0"], "above 0"),
    (["--interval", "-2"], "above 0"),
    (["--interval", "nan"], "above 0"),
    (["--interval", "1", "-S", str(FIXTURES / "captures" / "faithful.tar.gz")], "a capture (-S) is one instant"),
    (["--interval", "1", "-F", "openmetrics"], "one document, not a stream"),
    (["--interval", "1", "--exact"], "--interval does not combine with --exact"),
    (["--interval", "1", "--pie", "name"], "--pie or --bar"),
    (["--interval", "1", "-c", "pid nosuch"], "unknown field"),
])
def test_watch_usage_errors_are_one_line(args, said):
    proc = run_smem(*args)
    assert proc.returncode == 2 and proc.stdout == b""
    assert said in proc.stderr.decode() and proc.stderr.decode().count("\n") == 1, proc.stderr


def test_field_help_lists_the_changes():
    proc = run_smem("--interval", "1", "-c", "help", "-u")
    assert proc.returncode == 0
    text = proc.stdout.decode()
    assert re.search(r"^dpss +change in pss: this frame - the first frame$", text, re.M)
    assert re.search(r"^status +new ", text, re.M) and "\nold_pss " in text


CHILD = r"""
import mmap, sys
print("ready", flush=True)
held = []
for line in sys.stdin:
    if line.strip() == "grow":
        m = mmap.mmap(-1, 8 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        for offset in range(0, len(m), mmap.PAGESIZE):
            m[offset] = 1
        held.append(m)
        print("grown", flush=True)
"""


def _child(marker):
    child = subprocess.Popen([sys.executable, "-c", CHILD, marker], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "ready\n"
    return child


def _next_frame(stream):
    """The records of the next frame (-t: a frame ends with its totals record)."""
    records = []
    while True:
        ready, _, _ = select.select([stream], [], [], 60)  # a hang guard, not a timing
        assert ready, "smem wrote no frame for 60 s"
        line = stream.readline()
        assert line, "smem ended early"
        record = json.loads(line)
        if record["total"]:
            return {r["pid"]: r for r in records}
        records.append(record)


@pytest.mark.uses("cpu")
def test_growth_new_and_gone_processes_between_frames():
    """A process that grows shows its growth; one that starts is marked new, one that exits gone."""
    marker = f"smem-watch-test-{os.getpid()}"
    grower, later = _child(marker), None
    smem = subprocess.Popen([sys.executable, "-m", "smem", "--interval", "0.1", "-P", marker, "-F", "json", "-t",
                             "-c", "pid uss duss status"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            cwd=TESTS.parent, text=True)
    try:
        first = _next_frame(smem.stdout)
        assert list(first) == [grower.pid] and first[grower.pid]["duss"] == 0 and first[grower.pid]["status"] == ""
        grower.stdin.write("grow\n")
        grower.stdin.flush()
        assert grower.stdout.readline() == "grown\n"
        later = _child(marker)
        # Frames taken before the other child started may still come; one that shows it was
        # read after the growth.  (A hang guard in frames, not a timing.)
        frame = _next_frame(smem.stdout)
        for _ in range(600):
            if later.pid in frame:
                break
            frame = _next_frame(smem.stdout)
        assert later.pid in frame, "the second child never appeared"
        assert frame[grower.pid]["duss"] == frame[grower.pid]["uss"] - first[grower.pid]["uss"]
        # 8 MiB written; the child's file pages that only it mapped before may now be shared
        # with the second interpreter (less USS), so the growth is 8 MiB less a little
        assert 8192 - 1024 < frame[grower.pid]["duss"] <= 8192 + 1024
        assert frame[later.pid]["status"] == "new" and frame[later.pid]["duss"] == frame[later.pid]["uss"]
        grower.stdin.close()
        grower.wait()
        for _ in range(600):
            if frame[grower.pid]["status"] == "gone":
                break
            frame = _next_frame(smem.stdout)
        assert frame[grower.pid]["uss"] is None  # gone: no figure now, and the change is all of it
        assert frame[grower.pid]["duss"] == -first[grower.pid]["uss"]
        smem.send_signal(signal.SIGINT)
        assert smem.wait(60) == 0  # Ctrl-C ends a watch: not a failure
    finally:
        for proc in (smem, grower, later):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.uses("cpu")
def test_gone_rows_leave_a_stream_after_a_few_reports():
    """With --delta first, a process that exited is a gone row for GONE_KEPT reports, then no more
    (on a busy machine they would pile up in every record of the stream)."""
    from smem.watch import GONE_KEPT
    marker = f"smem-watch-gone-{os.getpid()}"
    children = [_child(marker) for _ in range(2)]
    smem = subprocess.Popen([sys.executable, "-m", "smem", "--interval", "0.1", "-P", marker, "-F", "json", "-t",
                             "-c", "pid uss duss status"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            cwd=TESTS.parent, text=True)
    try:
        first = _next_frame(smem.stdout)
        assert sorted(first) == sorted(c.pid for c in children)
        for child in children:
            child.stdin.close()
            child.wait()
        frame = _next_frame(smem.stdout)
        for _ in range(600):  # a hang guard in frames, not a timing
            if all(frame.get(c.pid, {}).get("status") == "gone" for c in children):
                break
            frame = _next_frame(smem.stdout)
        shown = 0  # (from the report both are gone in: a first to go is folded a report earlier)
        while frame and shown <= GONE_KEPT:
            assert all(r["status"] == "gone" for r in frame.values())
            shown += 1
            frame = _next_frame(smem.stdout)
        assert shown == GONE_KEPT and frame == {}  # kept a few reports, then gone from the stream
        smem.send_signal(signal.SIGINT)
        assert smem.wait(60) == 0
    finally:
        for proc in (smem, *children):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
