"""Every option-combination rule of smem/validate.py, through the command line: the one line
the user reads (exit 2, nothing on stdout), for each command.  Each case fails before anything
is read, so none waits on /proc."""

import os

import pytest

from conftest import FIXTURES, run_smem

CAPTURE = str(FIXTURES / "captures" / "faithful.tar.gz")
CAPTURE_DIR = str(FIXTURES / "cgroup2_zswap" / "capture")
WATCH_ONLY = "is for watch mode: use it with --interval SECONDS"
TCP_ONLY = "--timeout bounds a sender over TCP: use it with --listen"
FORCE_NEEDS_O = "--force lets -o replace a file: use it with -o"


@pytest.fixture
def recording(tmp_path):
    """A directory smem takes for a recording (its index), for rules that fail before a frame is read."""
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "index.jsonl").write_text("")
    return str(tmp_path / "rec")


def _refused(*args):
    proc = run_smem(*args)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 2 and proc.stdout == b"" and len(lines) == 1, (args, proc.returncode, lines)
    return lines[0]


@pytest.mark.parametrize("args, said", [
    (["--pie", "name", "--bar", "name"], "choose one chart: --pie or --bar"),
    (["-o", "x.png"], "-o/--output saves a chart: use it with --pie or --bar"),
    (["--pie", "name", "--force"], FORCE_NEEDS_O),
    (["--speed", "2", "--all-frames"], "choose one: --speed X plays a recording back at a pace, --all-frames all at once"),
    (["--speed", "2", "--interval", "1"],
     "--interval watches this machine: a recording is played back at its own pace (--speed)"),
    (["--all-frames", "--max-staleness", "3"],
     "--max-staleness is for watching this machine (--interval): a recording's frames are as recorded"),
    (["--count", "3"], f"--count N {WATCH_ONLY}"),
    (["--delta", "previous"], f"--delta {WATCH_ONLY}"),
    (["--max-staleness", "3"], f"--max-staleness {WATCH_ONLY}"),
    (["--breakdown", "-u"], "--breakdown accounts for all of MemTotal: use it with -w"),
    (["--shm", "-M", "x"], "the shared memory view attributes memory to every process: it takes no -M"),
    (["--shm", "-P", "x", "--pid", "1"], "the shared memory view attributes memory to every process: it takes no -P or --pid"),
    (["--interval", "0"], "--interval takes a number of seconds above 0, at most 10000000 (not 0)"),
    (["--interval", "inf"], "--interval takes a number of seconds above 0, at most 10000000 (not inf)"),
    (["--interval", "1", "-S", CAPTURE], "--interval watches this machine: a capture (-S) is one instant (a recording "
     "is played back with --speed or --all-frames); on a remote host run smem --interval there"),
    (["--speed", "2", "-S", CAPTURE], "--speed and --all-frames play a recording back: use them with -S RECORDING"),
    (["--interval", "1", "--pie", "name"], "--interval redraws a report: it does not combine with --pie or --bar"),
    (["--interval", "1", "--exact"], "--interval does not combine with --exact or --shared-with"),
    (["--interval", "1", "-F", "openmetrics"],
     "-F openmetrics is one document, not a stream: watch mode writes json (JSON Lines), csv or a table"),
    (["--shared-with"], "--shared-with needs a selection: -P, -U or --pid"),
    (["--wss", "1", "-S", CAPTURE], "--wss measures this machine's processes over time: not a capture or another host"),
    (["--wss", "nan"], "--wss takes a number of seconds above 0, at most 10000000 (not nan)"),
    (["--wss", "1", "-m"], "--wss measures processes' working set: the mappings view has no wss column"),
    (["--wss", "1", "--interval", "1"], "--wss measures once: it does not combine with --interval"),
    # --timeout bounds only a capture received over TCP: it was ignored without -S tcp://
    (["--timeout", "3"], "--timeout bounds a sender over TCP: use it with -S tcp://HOST:PORT"),
    (["-S", CAPTURE, "--timeout", "3"], "--timeout bounds a sender over TCP: use it with -S tcp://HOST:PORT"),
    (["diff", CAPTURE, "live", "--timeout", "3"],
     "--timeout bounds a sender over TCP: use it with OLD or NEW tcp://HOST:PORT"),
    (["--recommend", "5", "-u"], "--recommend sizes RAM for the whole system: use it with -w"),
    # -K (even a file that is not there) was ignored outside -w, the table shown as if it were used
    (["-K", "/nonexistent/vmlinux"], "-K sizes the kernel image for the whole system: use it with -w"),
    (["-K", "/nonexistent/vmlinux", "-u", "-p"], "-K sizes the kernel image for the whole system: use it with -w"),
    (["-K", "/nonexistent/vmlinux", "--shm"], "-K sizes the kernel image for the whole system: use it with -w"),
    (["--recommend", "5", "-w", "--interval", "1"], "--recommend sizes RAM from one reading: not with --interval"),
    (["--pie", "name", "-F", "json"], "-F json formats a table, and --pie and --bar draw a chart: choose one "
     "(-o FILE.png, .svg or .pdf chooses the chart's format)"),
    (["--bar", "pid", "-F", "csv", "-o", "x.png"], "-F csv formats a table, and --pie and --bar draw a chart: "
     "choose one (-o FILE.png, .svg or .pdf chooses the chart's format)"),
    (["-m", "--exact"], "--exact accounts processes: use it with the process, -u, -g or --cgroup views"),
    (["--at", "1"], "--at chooses a frame of a recording: use it with -S RECORDING"),
    (["--at", "1", "-S", "-"], "--at chooses a frame of a recording: use it with -S RECORDING"),
    (["--at", "1", "-S", "ssh://box"], "--at chooses a frame of a recording: use it with -S RECORDING"),
    (["--at", "1", "-S", CAPTURE], f"--at chooses a frame of a recording: {CAPTURE} is a capture"),
    (["--at", "1", "-S", CAPTURE_DIR], f"--at chooses a frame of a recording: {CAPTURE_DIR} is a capture directory"),
])
def test_report_rules(args, said):
    if "--wss" in args and "-S" not in args and "nan" not in args and os.geteuid() != 0:
        pytest.skip("--wss is refused before its other rules when not root")
    assert _refused(*args) == f"smem: {said}"


@pytest.mark.parametrize("args, said", [
    (["--all-frames", "--at", "1"], "--at chooses one frame: --speed and --all-frames play them all"),
    (["--all-frames", "--exact"], "--all-frames does not combine with --exact or --shared-with"),
    (["--speed", "2", "--pie", "name"], "--speed redraws a report: it does not combine with --pie or --bar"),
    (["--speed", "2", "-F", "openmetrics"],
     "-F openmetrics is one document, not a stream: watch mode writes json (JSON Lines), csv or a table"),
])
def test_playback_rules(recording, args, said):
    assert _refused("-S", recording, *args) == f"smem: {said}"


@pytest.mark.parametrize("args, said", [
    ([CAPTURE], f"smem diff compares OLD and NEW, or the first and last frames of a recording: {CAPTURE} is not "
                f"a recording; against this machine now: smem diff {CAPTURE} live"),
    ([CAPTURE, CAPTURE, "--breakdown"], "--breakdown accounts for all of MemTotal: use it with -w"),
    ([CAPTURE, CAPTURE, "--shm", "-U", "x"],
     "the shared memory: changes view attributes memory to every process: it takes no -U"),
    ([CAPTURE, "live", "--from", "1"], f"--from chooses a frame of a recording: {CAPTURE} is a capture"),
    ([CAPTURE, "live", "--to", "1"], "--to chooses a frame of a recording: use it with a recording"),
    ([CAPTURE_DIR, CAPTURE, "--from", "1"], f"--from chooses a frame of a recording: {CAPTURE_DIR} is a capture directory"),
])
def test_diff_rules(args, said):
    assert _refused("diff", *args) == f"smem: {said}"


def test_diff_of_one_not_a_recording_suggests_no_command_that_fails(tmp_path):
    """OLD alone, not a recording, was told 'smem diff OLD live' whatever it was: for a path not
    there (which fails too: it should say so), for live (live against live), for ssh://box."""
    missing = tmp_path / "box.tgz"
    proc = run_smem("diff", missing)
    assert (proc.returncode, proc.stderr.decode()) == (1, f"smem: cannot read {missing}: No such file or directory\n")
    assert run_smem("diff", missing, "live").stderr == proc.stderr  # (as with NEW given)
    said = "smem diff compares OLD and NEW, or the first and last frames of a recording: "
    assert _refused("diff", "live") == (f"smem: {said}live is not a recording: it is this machine now; give a "
                                        "capture or recording to compare with it, then live")
    assert _refused("diff", "ssh://box") == f"smem: {said}ssh://box is not a recording"


@pytest.mark.parametrize("args", [["-S", CAPTURE, "--pie", "name"], ["html", "-S", CAPTURE], ["capture"],
                                  ["capture", "--listen", "127.0.0.1:0"], ["record"]])
def test_an_empty_output_name_is_refused(args):
    """-o '' was taken as no -o by the charts (a window, or "no display"), and as a directory by
    the others ("cannot write : a directory")."""
    what = "the recording's directory" if args == ["record"] else "a file (or - for standard output)"
    assert _refused(*args, "-o", "") == f"smem: -o takes the name of {what}: '' names none"


def test_diff_of_standard_input_alone_or_twice_says_so():
    """smem diff - (a capture on stdin, alone) said "cannot read -: No such file or directory", and
    smem diff - - "standard input: empty (no capture)": its second read found nothing left."""
    said = "smem diff compares OLD and NEW, or the first and last frames of a recording: "
    assert _refused("diff", "-") == (f"smem: {said}standard input (-) is not a recording; a capture on it "
                                     "compares with this machine now: smem diff - live")
    assert _refused("diff", "-", "-") == ("smem: OLD and NEW cannot both be standard input (-): it is read once; "
                                          "name one of them a file")


@pytest.mark.parametrize("args, said", [
    (["--listen", "127.0.0.1:0", "--exact", "--script", "--compression", "xz"],
     "--listen writes the capture as the target sent it: it takes no --exact or --script or --compression"),
    (["--listen", "127.0.0.1:0", "--host", "ssh://box"], "--listen writes the capture as the target sent it: it takes no --host"),
    (["--timeout", "3"], TCP_ONLY),
    (["--script", "-o", "x", "--force"], "--script prints the capture script to standard output: it takes no -o or --force"),
    (["--script", "--compression", "xz"], "--script prints the capture script to standard output: it takes no --compression"),
    (["--force"], FORCE_NEEDS_O),
    (["--exact", "--host", "ssh://box", "-o", "x"],
     "--exact cannot capture over ssh: the shell script cannot read pagemap; run 'smem capture --exact' on the host"),
])
def test_capture_rules(args, said):
    assert _refused("capture", *args) == f"smem: {said}"


CANNOT_WRITE = ("which smem capture cannot write: it writes gz, bz2, xz, zst or none, as -o's extension "
                "names it (.tgz, .tar.bz2, .tar.xz, .tar.zst, .tar) or --compression chooses")


@pytest.mark.parametrize("name, says", [("x.tar.lz4", "lz4"), ("x.tar.lz", "lzip"), ("x.tar.lzma", "lzma"),
                                        ("x.tlz", "lzma"), ("x.tar.lzo", "lzop"), ("x.tar.Z", "compress")])
@pytest.mark.parametrize("given", [[], ["--compression", "gz"], ["--listen", "127.0.0.1:0"]])
def test_capture_refuses_a_name_that_says_a_compression_it_cannot_write(tmp_path, name, says, given):
    """smem capture -o x.tar.lz4 wrote a gzip archive named .lz4 (gz, the default for a name it
    does not know), and --compression gz there (or a capture received with --listen) is as
    mislabelled: every tool that reads it by its name is misled.  Refused, nothing written."""
    output = tmp_path / name
    assert _refused("capture", "-o", output, *given) == f"smem: -o {output} names {says}, {CANNOT_WRITE}"
    assert not output.exists()


@pytest.mark.parametrize("args, said", [
    (["-o", "-", "--force"], "--force lets -o replace a file: not with -o -"),
    (["-o", "page.html", "-S", "-"], "smem html reads captures by name: -S - and --compare - are not supported"),
    (["-o", "page.html", "--compare", "-"], "smem html reads captures by name: -S - and --compare - are not supported"),
])
def test_html_rules(tmp_path, args, said):
    assert _refused("html", *[str(tmp_path / a) if a == "page.html" else a for a in args]) == f"smem: {said}"
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("args, said", [
    (["--count", "2", "--duration", "1m"], "choose one end: --count N or --duration T"),
    (["--listen", "127.0.0.1:0", "--interval", "2"],
     "--interval paces this machine's frames: with --listen the target's loop sets the pace"),
    (["--timeout", "3"], TCP_ONLY),
])
def test_record_rules(tmp_path, args, said):
    assert _refused("record", "-o", tmp_path / "rec", *args) == f"smem: {said}"
    assert not (tmp_path / "rec").exists()


@pytest.mark.parametrize("args, said", [
    (["--interval", "5"], "--interval and --count say how often --textfile writes: use them with --textfile"),
    (["--count", "1"], "--interval and --count say how often --textfile writes: use them with --textfile"),
    (["--textfile", ".", "--listen", "127.0.0.1:0"], "choose one: --listen serves HTTP, --textfile writes a file"),
    (["-S", "-"], "smem serve reads its source again at every collection: -S - (standard input) cannot be read "
                  "twice; name a capture file or directory"),
])
def test_serve_rules(args, said):
    assert _refused("serve", *args) == f"smem: {said}"


@pytest.mark.parametrize("args", [
    ["--interval", "1", "--max-staleness", "nan"],
    ["--interval", "1", "--max-staleness", "inf"],
    ["-w", "--recommend", "nan"],
    ["record", "-o", "rec", "--interval", "nan", "--count", "1"],
    ["record", "-o", "rec", "--interval", "inf", "--count", "1"],
    ["serve", "--max-staleness", "nan"],
    ["serve", "--min-interval", "inf"],
    ["serve", "--textfile", ".", "--interval", "inf", "--count", "2"],
    ["capture", "--listen", "127.0.0.1:0", "--timeout", "nan", "-o", "x"],
])
def test_no_nan_or_inf(tmp_path, args):
    """click's ranges let nan through (every comparison with it is false) and inf past a minimum:
    given a timer or a rate, either was a traceback once the first collection or sleep used it."""
    args = [str(tmp_path / a) if a in ("rec", "x") else a for a in args]
    said = _refused(*args)
    assert said.startswith("smem: --") and said.endswith(("not 'nan'", "not 'inf'")), said


@pytest.mark.parametrize("args", [
    ["--interval", "1e12", "--count", "2"],
    ["record", "-o", "rec", "--interval", "1e12", "--count", "2"],
    ["capture", "--listen", "127.0.0.1:0", "--timeout", "1e12", "-o", "x"],
    ["serve", "--max-staleness", "1e20"],
    ["serve", "--textfile", ".", "--interval", "1e10", "--count", "2"],
])
def test_no_time_past_what_a_timer_takes(tmp_path, args):
    """A sleep, a select or a socket's timeout overflows past about 9.2e9 s: a time option over
    options.MAX_SECONDS is refused in one line, not a traceback once the first sleep used it."""
    args = [str(tmp_path / a) if a in ("rec", "x") else a for a in args]
    said = _refused(*args)
    assert said.startswith("smem: --") and "10000000" in said, said


def test_no_speed_that_stops_the_clock(recording):
    said = _refused("-S", recording, "--speed", "1e-308")
    assert said.startswith("smem: --speed takes a number at least 0.001, at most 1000000 (not 1e-308)"), said


def test_no_nan_speed(recording):
    assert _refused("-S", recording, "--speed", "nan") == "smem: --speed takes a finite number, not 'nan'"
