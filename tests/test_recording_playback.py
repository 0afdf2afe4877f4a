"""Playing a recording back (smem/sources/recorded.py, watch.py's replay): --at, smem diff REC,
--all-frames as one stream pandas reads, --speed; a 100 MiB grower started half way shows in each."""

import datetime
import io
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import FIXTURES, TESTS, run_smem, run_smem_process, said_beside
from test_recording import index_lines

pytest.importorskip("zstandard", reason="smem[compression]: zstandard not installed")

GROWER = "import sys; data = b'\\x01' * (100 << 20); print('ready', flush=True); sys.stdin.read()"
MIB_100_KIB = 100 << 10


def wait_frames(rec, proc, count):
    deadline = time.monotonic() + 600
    while not ((rec / "index.jsonl").exists() and len(index_lines(rec)[1]) >= count):
        assert time.monotonic() < deadline and proc.poll() is None, proc.poll()
        time.sleep(0.02)
    return len(index_lines(rec)[1])


@pytest.fixture(scope="module")
def grown(tmp_path_factory, pid_namespace):
    """A recording with a process that touches 100 MiB started half way: (path, the grower's
    pid, its marker, the first frame it is in).  Made in a PID namespace of the module's own
    (tests/pid_namespace.py): five frames a second of what runs there, not of every process of
    the machine."""
    rec = tmp_path_factory.mktemp("playback") / "rec"
    marker = f"smem-grower-{secrets.token_hex(4)}"
    recorder = subprocess.Popen(pid_namespace.argv([sys.executable, "-m", "smem", "record", "-o", rec, "--interval",
                                                    "0.2", "--smaps-every", "1000"], cwd=TESTS.parent),
                                cwd=TESTS.parent, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    recorder_pid = pid_namespace.command_pid(recorder)  # (nsenter forwards no signal)
    grower = grower_pid = None
    try:
        before = wait_frames(rec, recorder, 3)
        grower = subprocess.Popen(pid_namespace.argv([sys.executable, "-c", GROWER, marker]), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        grower_pid = pid_namespace.command_pid(grower)
        assert grower.stdout.readline() == "ready\n"
        seen = len(index_lines(rec)[1])
        wait_frames(rec, recorder, seen + 4)  # the frame being read may have begun before it was ready: 3 after it
        pid = pid_namespace.pid_in(grower_pid)
    finally:
        os.kill(recorder_pid, signal.SIGTERM)
        recorder.communicate(timeout=60)
        if grower is not None:
            os.kill(grower_pid, signal.SIGKILL)
            grower.wait()
    yield rec, pid, marker, before


def test_diff_of_a_recording_shows_the_grower_new(grown):
    rec, pid, marker, _ = grown
    proc = run_smem("diff", rec, "-P", marker, "-c", "pid pss dpss status", "-F", "json", check=True)
    rows = json.loads(proc.stdout)["rows"] if proc.stdout.startswith(b"{") else json.loads(proc.stdout)
    mine = [r for r in rows if r["pid"] == pid]
    assert len(mine) == 1 and mine[0]["status"] == "new" and mine[0]["pss"] >= MIB_100_KIB
    assert mine[0]["dpss"] == mine[0]["pss"]
    # --from a frame it is already in: not new, and no growth
    last = index_lines(rec)[1][-1]["frame"]
    proc = run_smem("diff", rec, "--from", last - 1, "-P", marker, "-c", "pid dpss status", "-F", "json", check=True)
    rows = json.loads(proc.stdout)["rows"] if proc.stdout.startswith(b"{") else json.loads(proc.stdout)
    assert [(r["pid"], r["status"]) for r in rows] == [(pid, "")]


def test_all_frames_is_one_stream_with_a_time_column(grown):
    rec, pid, marker, before = grown
    pandas = pytest.importorskip("pandas", reason="smem[test]: pandas not installed")
    frames = index_lines(rec)[1]
    text = run_smem("-S", rec, "--all-frames", "-F", "csv", "-c", "pid name pss", "-P", marker, check=True).stdout
    table = pandas.read_csv(io.BytesIO(text), parse_dates=["timestamp"])
    assert str(table["timestamp"].dtype).startswith("datetime64")
    # (the first frame it is in may have been read while it was still touching its pages)
    assert set(table["pid"]) == {pid} and (table["pss"].iloc[-3:] >= MIB_100_KIB).all()
    assert table["frame"].min() > before and table["frame"].max() == len(frames)  # half way, to the end
    # every frame of the recording, with its recorded time
    everyone = pandas.read_csv(io.BytesIO(run_smem("-S", rec, "--all-frames", "-F", "csv", "-u", check=True).stdout))
    assert sorted(set(everyone["frame"])) == list(range(1, len(frames) + 1))
    stamps = sorted(set(everyone["timestamp"]))
    assert stamps[0] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(frames[0]["time"]))
    lines = run_smem("-S", rec, "--all-frames", "-F", "json", "-P", marker, check=True).stdout.splitlines()
    assert {json.loads(line)["pid"] for line in lines} == {pid}


def test_at_reads_the_frame_asked_for(grown):
    rec, pid, marker, before = grown
    frames = index_lines(rec)[1]
    pids = lambda *at: {int(w) for w in run_smem("-S", rec, "-c", "pid", "-H", "-P", marker, *at, check=True).stdout.split()}
    assert pids() == {pid} and pids("--at", "last") == {pid}
    assert pids("--at", "1") == set() and pids("--at", "first") == set()
    stamp = datetime.datetime.fromtimestamp(frames[0]["time"]).isoformat()  # to the microsecond: frame 1
    assert pids("--at", stamp) == set()
    last = datetime.datetime.fromtimestamp(frames[-1]["time"]).isoformat()
    assert pids("--at", last) == {pid}
    proc = run_smem("-S", rec, "--at", "yesterday")
    assert proc.returncode == 2 and b"--at takes a frame number" in proc.stderr
    # --at reads a time as local; the frame it is before is shown so too, beside its UTC
    proc = run_smem_process("-S", rec, "--at", "2001-01-01T00:00", env={"TZ": "IST-5:30"})  # (POSIX: no tzdata needed)
    first = datetime.datetime.fromtimestamp(index_lines(rec)[1][0]["time"], datetime.timezone.utc)
    local = first.astimezone(datetime.timezone(datetime.timedelta(hours=5, minutes=30)))
    assert proc.stderr.decode().splitlines() == [
        f"smem: --at 2001-01-01T00:00: before the recording's first frame "
        f"({local.isoformat(timespec='seconds')}, {first.strftime('%Y-%m-%dT%H:%M:%SZ')})"]


def test_a_frame_far_older_than_the_time_asked_is_shown_with_a_warning(grown, tmp_path):
    """--at after the recording's end, or in a gap while the recorder was stopped, showed the frame
    before it without a word: an hour-old figure read as the one asked for."""
    rec = grown[0]
    frames = index_lines(rec)[1]
    quiet = run_smem("-S", rec, "--at", datetime.datetime.fromtimestamp(frames[-1]["time"]).isoformat(), "-u")
    assert quiet.returncode == 0 and said_beside(quiet) == b"", quiet.stderr
    late = run_smem("-S", rec, "--at", "+1h", "-u")
    assert late.returncode == 0 and late.stdout == quiet.stdout
    lines = said_beside(late).decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"smem: warning: --at +1h: the recording's last frame, frame {frames[-1]['frame']} ("), lines
    assert lines[0].endswith("older: it is shown") and " is 59m " in lines[0], lines  # (an hour less its length)
    # a recorder stopped two hours after frame 2 and resumed: a time in the gap is frame 2's, said so
    gap = tmp_path / "gap"
    subprocess.run(["cp", "-a", rec, gap], check=True)
    header, entries = (gap / "index.jsonl").read_text().splitlines(True)[0], index_lines(gap)[1]
    for entry in entries[2:]:
        entry["time"] += 7200
    (gap / "index.jsonl").write_text(header + "".join(json.dumps(e) + "\n" for e in entries))
    asked = datetime.datetime.fromtimestamp(entries[1]["time"] + 3600).isoformat()
    proc = run_smem("diff", gap, "--from", "1", "--to", asked, "-u")
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 0 and len(lines) == 1, lines
    assert lines[0].startswith(f"smem: warning: --to {asked}: the frame before it, frame 2 (") and \
        lines[0].endswith("is 1h older: it is shown (the recording has none in between)"), lines


@pytest.mark.parametrize("option", ["--from", "--to"])
def test_diffs_frame_options_are_the_ones_their_errors_name(grown, option):
    """smem diff's --from and --to take --at's words; an error named --at, which diff has not."""
    rec = grown[0]
    last = index_lines(rec)[1][-1]["frame"]
    for value, says in (("yesterday", f"{option} takes a frame number"),
                        (str(last + 1), f"{option} {last + 1}: the recording has no frame {last + 1}"),
                        ("2001-01-01T00:00", f"{option} 2001-01-01T00:00: before the recording's first frame"),
                        ("+1x", f"{option} takes a duration above 0"),
                        ("+0", f"{option} takes a duration above 0: seconds, or 90s, 10m, 2h, 1d (not '+0')"),
                        # (a year 1 that this machine's clock cannot place; more digits than int() takes)
                        ("0001-01-01T00:00", f"{option} 0001-01-01T00:00: before the recording's first frame"),
                        ("9" * 5000, f"{option} {'9' * 40}...: the recording has no frame {'9' * 40}... (frames")):
        proc = run_smem("diff", rec, option, value)
        lines = proc.stderr.decode().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"smem: {says}"), lines
        assert len(lines[0]) < 300
    proc = run_smem("diff", FIXTURES / "captures" / "faithful.tar.gz", rec, "--from", "1")
    assert proc.stderr.decode().splitlines() == [
        f"smem: --from chooses a frame of a recording: {FIXTURES / 'captures' / 'faithful.tar.gz'} is a capture"]


def test_diff_of_two_frames_read_from_one_key_frame_is_refused(grown, tmp_path):
    """Two frames, the later without smaps, compared by a report of mappings, were both read from
    one key frame: -m showed every change 0 however much had grown between them, with one warning
    that did not say both sides were that frame.  So did ``smem diff REC -m`` of a recording under
    way (or killed), whose last frame is no key frame and whose first is its only one."""
    rec, pid, marker, before = grown
    frames = index_lines(rec)[1]
    last = frames[-1]["frame"]
    assert [f["frame"] for f in frames if f["smaps"]] == [1, last]  # (--smaps-every 1000: the first and the stop)
    tail = ("which only key frames keep, and the key frame before {} is frame 1: both sides would be that frame, "
            "every change 0; compare key frames (smem record --smaps-every N keeps every Nth), or a view without mappings")
    for view in ("-m", "--shm"):
        proc = run_smem("diff", rec, "--from", "2", "--to", last - 1, view)
        lines = proc.stderr.decode().splitlines()
        assert proc.returncode == 2 and proc.stdout == b"", lines
        assert lines == [f"smem: --from 2 and --to {last - 1}: this report reads mappings (-m, -M, --shm, maps, vss), "
                         + tail.format("them")]
    # a recording whose recorder was killed before its last frame: its index ends a frame earlier
    cut = tmp_path / "cut"
    shutil.copytree(rec, cut)
    with open(cut / "index.jsonl", "rb") as f:
        lines = f.readlines()
    with open(cut / "index.jsonl", "wb") as f:
        f.writelines(lines[:-1])
    proc = run_smem("diff", cut, "-m", "-P", marker)
    assert proc.returncode == 2 and proc.stderr.decode().splitlines() == [
        f"smem: --from 1 and --to {last - 1}: this report reads mappings (-m, -M, --shm, maps, vss), "
        + tail.format(f"--to's frame {last - 1}")]
    # the same frames' own figures, and a key frame against one read from the key frame before it
    grew = run_smem("diff", rec, "--from", "2", "--to", last - 1, "-P", marker, "-c", "pid dpss", "-H", check=True)
    assert grew.stdout.split()[0] == str(pid).encode() and int(grew.stdout.split()[1]) >= MIB_100_KIB
    run_smem("diff", rec, "--from", "2", "--to", last, "-m", "-P", marker, check=True)
    run_smem("diff", rec, "--from", "2", "--to", "2", "-m", "-P", marker, check=True)  # (asked: the same frame)


def test_a_frame_read_whole_after_its_stream_still_names_its_key_frame(grown):
    """A frame streamed, then read whole (an archive one pass cannot read: loading.load_reading
    takes its held form), is still the frame asked for read from its key frame: what smem diff
    refuses two sides by, and the note the report says."""
    from smem.sources.recorded import open_recording
    rec = grown[0]
    streamed = open_recording(rec, at="2", streamed=True)
    assert (streamed.recording_frame.asked, streamed.recording_frame.read) == (2, 1) and streamed.notes
    for again in (streamed.held(), streamed.replayed()):  # (read whole; a worker's walk of it)
        assert (again.description, again.notes, again.recording_frame) == \
            (streamed.description, streamed.notes, streamed.recording_frame), again


def test_speed_replays_at_the_recorded_pace(grown):
    rec, pid, marker, _ = grown
    proc = run_smem("-S", rec, "--speed", "1000", "-F", "json", "-c", "pid pss", "-P", marker, check=True)
    assert {json.loads(line)["pid"] for line in proc.stdout.splitlines()} == {pid}
    assert run_smem("-S", rec, "--speed", "2", "--interval", "1").returncode == 2


def test_at_a_clock_time_in_a_recording_across_midnight_names_the_evening(grown, tmp_path):
    """A night's recording, 22:00 to 05:0x: --at 23:00 is the evening's 23:00 (its first frame),
    not the next evening's, which is after the last frame (that one was taken, without a word)."""
    import shutil
    rec, pid, marker, before = grown
    night = tmp_path / "night"
    shutil.copytree(rec, night)
    head, frames = index_lines(night)
    evening = datetime.datetime.combine(datetime.date(2026, 12, 4), datetime.time(22, 0))
    times = [evening.timestamp()] + [(evening + datetime.timedelta(hours=7, minutes=k)).timestamp()
                                     for k in range(1, len(frames))]
    lines = [json.dumps(head)] + [json.dumps(dict(frame, time=t)) for frame, t in zip(frames, times)]
    (night / "index.jsonl").write_text("\n".join(lines) + "\n")
    at = lambda moment: {int(w) for w in run_smem("-S", night, "-c", "pid", "-H", "-P", marker, "--at", moment,
                                                  check=True).stdout.split()}
    assert at("23:00") == set() == at("first") and at("05:59") == {pid} == at("last")


def test_all_frames_parse_the_index_once(grown, monkeypatch):
    """Each frame opens the recording again: its index was parsed again each time, every line of
    it, so that playing a day of frames took hours; it is parsed once while the file is the same."""
    from smem.sources import recorded
    rec = grown[0]
    frames = len(index_lines(rec)[1])
    parsed = []
    monkeypatch.setattr(recorded, "_entry", lambda line, where, entry=recorded._entry: parsed.append(line) or
                        entry(line, where))
    monkeypatch.setattr(recorded, "_LAST_INDEX", [None, None], raising=False)  # (nothing kept from before)
    run_smem("-S", rec, "--all-frames", "-F", "csv", "-c", "pid pss", check=True)
    assert frames >= 3 and len(parsed) == frames


def test_speed_plays_a_gap_as_one_usual_spacing_and_says_so(grown, tmp_path, monkeypatch):
    """A recorder stopped for an hour, then resumed: --speed X waited the hour / X there (at
    --speed 10, six minutes of a screen that looked hung).  The gap is played as one usual spacing
    and said once; every frame keeps its recorded time.  The waits asked of time.sleep are taken
    down, not slept: the schedule is what is checked, not a clock."""
    import shutil
    import smem.watch
    rec, pid, marker, _ = grown
    gap = tmp_path / "gap"
    shutil.copytree(rec, gap)
    head, frames = index_lines(gap)
    for frame in frames[2:]:
        frame["time"] += 3720
    (gap / "index.jsonl").write_text("".join(json.dumps(line) + "\n" for line in [head, *frames]))
    waits = []
    monkeypatch.setattr(smem.watch.time, "sleep", waits.append)
    proc = run_smem("-S", gap, "--speed", "10", "-F", "csv", "-c", "pid pss", "-P", marker, check=True)
    assert waits and max(waits) < 60, waits  # (the hour / 10 was 372 s)
    before = time.strftime("%H:%M:%S", time.localtime(frames[1]["time"]))
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"smem: warning: skipped a gap of 1h 2m at {before} (no frame between frames 2 and 3): played as "), lines
    stamps = {row.split(",")[0] for row in proc.stdout.decode().splitlines()[1:]}
    assert time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(frames[-1]["time"])) in stamps
    # every frame at once (--all-frames) skips no wait: nothing to say
    assert run_smem("-S", gap, "--all-frames", "-F", "csv", "-P", marker, check=True).stderr == b""


def test_a_recording_compared_with_itself_says_both_sides_are_one_frame(grown, tmp_path):
    """smem diff REC REC (and smem html --compare REC -S REC) compared the last frame with itself,
    every change 0, in silence: REC alone compares the first frame with the last."""
    rec, pid, marker, _ = grown
    last = index_lines(rec)[1][-1]["frame"]
    for other in (rec, f"{rec}/"):
        proc = run_smem("diff", rec, other, "-P", marker, "-c", "pid dpss", "-H", check=True)
        assert proc.stdout.split() == [str(pid).encode(), b"0"]
        assert proc.stderr.decode().splitlines() == [
            f"smem: warning: OLD and NEW are one frame, frame {last} of recording {other}: every change is 0 "
            "(smem diff REC alone compares its first frame with its last; --from and --to choose others)"]
    assert run_smem("diff", rec, rec, "--from", "1", check=True).stderr == b""
    pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
    proc = run_smem("html", "--compare", rec, "-S", rec, "-P", marker, "-o", tmp_path / "same.html", check=True)
    # (recorded in a PID namespace, the page's breakdown also says its processes are not the machine's)
    assert [line for line in proc.stderr.decode().splitlines() if "one PID namespace" not in line] == [
        f"smem: warning: OLD and NEW are one frame, frame {last} of recording {rec}: every change is 0 "
        "(the page of a recording alone, smem html -S REC, draws it over time)"]


def _recording_left_out(tmp_path):
    """A recording of four frames, each of a capture whose writer could not read 3 processes."""
    import hostile_inputs as hc
    from smem.recording.store import RecordingWriter
    rec = tmp_path / "rec"
    info = ("capture-info", b"pagesize=4096\nunreadable_processes=3\n")
    with RecordingWriter(str(rec), smaps_every=2) as writer:
        for i in range(4):
            capture = hc.capture_tar(processes={1234: hc.process_files(smaps_rollup=hc.SMAPS)}, extra=[info])
            writer.add(io.BytesIO(capture), taken=1796598000 + 10 * i)
    return rec


def test_a_warning_every_frame_repeats_is_said_once_in_all_frames(tmp_path):
    """A recording whose writer could not read a process: --all-frames said "recording REC frame
    N, TIME left out 1 process ..." for every frame, a day's 8,640 lines on stderr beside the
    CSV.  The same warning of another frame is said once."""
    rec = _recording_left_out(tmp_path)
    proc = run_smem("-S", rec, "--all-frames", "-F", "csv", "-c", "pid pss")
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.decode().splitlines()) == 1 + 4  # a header, a row a frame
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and "left out 3 processes its writer could not read" in lines[0], lines


def test_a_warning_every_frame_repeats_is_said_once_by_the_page_of_a_recording(tmp_path):
    """smem html -S REC read each instant it embeds and said each one's warning: one line a frame
    the slider stops at, up to 48."""
    pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
    rec = _recording_left_out(tmp_path)
    proc = run_smem("html", "-S", rec, "-o", tmp_path / "page.html")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and "left out 3 processes its writer could not read" in lines[0], lines
