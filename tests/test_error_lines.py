"""Errors and warnings are one line on stderr: bad options, unknown fields, unreadable processes,
a full disk, a source without meminfo."""

import os
import shutil
import re
import signal
import subprocess
import sys
import tarfile

import pytest

from conftest import AS_NOBODY, FIXTURES, run_smem

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs /proc smaps")


def test_errors_are_one_line_on_stderr():
    cases = [
        (["-S", "/nonexistent/capture.tgz"], 1, "No such file"),
        (["-P", "("], 2, "invalid regular expression"),
        (["-M", "[z-a]"], 2, "invalid regular expression"),
        (["-R", "lots"], 2, "cannot read memory size"),
        (["--no-such-option"], 2, "no-such-option"),
    ]
    for args, code, text in cases:
        proc = run_smem(*args)
        err = proc.stderr.decode()
        assert proc.returncode == code, (args, err)
        assert proc.stdout == b""
        assert text in err and "Traceback" not in err
        assert len(err.splitlines()) == 1, err


def test_a_name_in_an_error_cannot_forge_a_line_or_drive_the_terminal():
    """An error, warning or note quotes what the user, a capture or a peer named: its control
    characters (a newline, the ESC of an OSC 52 clipboard write) are written as '?'."""
    named = "/nonexistent/x\nsmem: all is well\x1b]52;c;cm0gLXJm\x07"
    proc = run_smem("-S", named)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and err.count("\n") == 1 and "\x1b" not in err and "\x07" not in err, err
    assert err.startswith("smem: cannot read /nonexistent/x?smem: all is well?]52;c;cm0gLXJm?"), err


def test_unknown_field_goes_to_stderr_with_the_known_fields():
    proc = run_smem("-c", "pid bogus")
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b""
    (line,) = err.splitlines()  # one line, naming the known fields
    assert line.startswith("smem: unknown field for the process view: bogus; known: ")
    for field in ("pid", "user", "name", "command", "maps", "swap", "uss", "rss", "pss", "vss"):
        assert f" {field} " in line
    proc = run_smem("-m", "-s", "nope")
    assert proc.returncode == 2 and "avguss" in proc.stderr.decode()
    # -c help says what each is, aligned, on stdout
    listing = run_smem("-m", "-c", "help")
    lines = listing.stdout.decode().splitlines()
    assert listing.returncode == 0 and lines[0].startswith("Fields of the mapping view")
    assert lines[-1].startswith("By default: ")  # (the view's default -c and -s, under the fields)
    helps = {l.split()[0]: l for l in lines[1:-1]}
    assert "average PSS per process" in helps["avgpss"]
    starts = {len(l) - len(l[len(l.split()[0]):].lstrip()) for l in lines[1:-1]}
    assert len(starts) == 1  # every help starts in the same column, whatever the field's length


def test_a_change_column_without_interval_says_what_it_needs():
    """dpss exists in watch mode and smem diff: alone it is not an unknown field but a missing --interval."""
    for args in (["-s", "dpss"], ["-c", "pid duss"], ["-u", "-s", "dpss"]):
        proc = run_smem(*args)
        assert proc.returncode == 2 and proc.stdout == b""
        (line,) = proc.stderr.decode().splitlines()
        field = args[-1].split()[-1]
        assert line == (f"smem: {field} is the change of {field[1:]} between two readings: "
                        "use it with --interval SECONDS, or compare two captures with smem diff")
    # a "d" before a column that is no amount (the command's name) names no change column
    proc = run_smem("-s", "dname")
    assert proc.returncode == 2 and proc.stderr.decode().startswith(
        "smem: unknown field for the process view: dname (did you mean name?);")


@pytest.mark.parametrize("args", [
    ["-c", "pid wss"], ["-c", "pid pss", "-s", "wsspss"], ["-S", str(FIXTURES / "gpu_proc" / "tree"), "-c", "pid wss"],
    ["-u", "-c", "user wsspss"], ["diff", str(FIXTURES / "gpu_proc" / "tree"), str(FIXTURES / "gpu_proc" / "tree"),
                                  "-c", "pid dwss"],
])
def test_a_working_set_column_without_wss_is_refused_not_filled_with_referenced(args):
    """-c wss without --wss showed smaps' Referenced (pages referenced since whenever the bits were
    last cleared, or a capture's) headed WSS: a working set over no known time."""
    proc = run_smem(*args)
    assert proc.returncode == 2 and proc.stdout == b""
    (line,) = proc.stderr.decode().splitlines()
    assert "is measured by --wss SECONDS" in line, line


def test_a_misspelt_field_is_given_its_close_spelling():
    """--pie nme listed every field and left the user to find name among 48."""
    for args, said in ((["--pie", "nme"], "process view: nme (did you mean name?); known: "),
                       (["-u", "-c", "usr pss"], "user view: usr (did you mean user?); known: "),
                       (["-c", "pid nme psss"], "process view: nme psss (did you mean name for nme, pss for psss?); ")):
        proc = run_smem(*args)
        (line,) = proc.stderr.decode().splitlines()
        assert proc.returncode == 2 and line.startswith(f"smem: unknown field{'s' * ('psss' in said)} for the {said}"), line


def test_a_capture_given_to_lowercase_s_suggests_capital_s():
    """smem -s board.tgz (the shift key missed) listed 48 fields; the file is a capture to read."""
    capture = str(FIXTURES / "captures" / "faithful.tar.gz")
    for spec in (capture, "ssh://box"):
        proc = run_smem("-s", spec, "-t")
        (line,) = proc.stderr.decode().splitlines()
        assert proc.returncode == 2 and line.startswith(
            f"smem: unknown field for the process view: {spec[:40]} (-s sorts by a field; "
            f"did you mean -S {spec}, a source to read?); known: "), line
    proc = run_smem("-s", "nosuchfile.tgz")
    assert "did you mean -S" not in proc.stderr.decode()  # no such file: a field misspelt, as before


@pytest.mark.process
def test_unreadable_processes_are_one_warning_not_silence(pid_namespace):
    """Run in the module's PID namespace with five root processes there (its init and four
    sleepers): smem sees those, not the machine, whose processes other workers start and end by
    the dozen between smem's scan and a count made after it."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run smem as another user")
    if not pid_namespace.isolated:
        pytest.skip("needs a PID namespace (root and util-linux) to know every process smem sees")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    cwd = os.path.dirname(os.path.dirname(__file__))
    sleepers, inner = [subprocess.Popen(pid_namespace.argv(["sleep", "600"])) for _ in range(4)], []
    try:
        for sleeper in sleepers:
            inner.append(pid_namespace.command_pid(sleeper))  # there before smem looks
        # Python itself may live under /root: import smem as root, then become nobody.
        become_nobody = AS_NOBODY + "smem.cli.main(['-c', 'pid user'])"
        proc = subprocess.run(pid_namespace.argv([sys.executable, "-c", become_nobody], cwd=cwd), capture_output=True,
                              env=env, cwd=cwd, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr
        (warning,) = proc.stderr.decode().splitlines()
        inside = f"/proc/{pid_namespace.init}/root/proc"  # the namespace's /proc, as smem saw it

        def others_pid(entry):
            return os.stat(f"{inside}/{entry}").st_uid != 65534 and open(f"{inside}/{entry}/cmdline", "rb").read()
        others = sum(1 for e in os.listdir(inside) if e.isdigit() and others_pid(e))
        comms = {pid: open(f"{inside}/{pid}/comm").read().rstrip("\n")
                 for pid, _ in re.findall(r"pid (\d+) \(([^)]*)\)", warning)}
    finally:
        for pid in inner:
            os.kill(pid, signal.SIGKILL)  # (the namespace's init reaps them)
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()
    count = int(warning.split()[2])
    assert warning.startswith("smem: warning: ") and "could not be read (permission denied): pid " in warning
    assert "run as root" in warning
    assert count == others == 5
    # up to three are named, with their names; the rest counted
    named = re.findall(r"pid (\d+) \(([^)]*)\)", warning)
    assert len(named) == min(count, 3)
    assert (f"and {count - 3} more" in warning) == (count > 3)
    assert all(comms[pid] == name for pid, name in named)
    assert all(l.split()[1] == "nobody" for l in proc.stdout.decode().splitlines()[1:])


@pytest.mark.uses("cpu")
@pytest.mark.process
def test_write_errors_are_one_line():
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    for args, what in ((["-c", "pid pss"], "report"), (["capture"], "capture")):
        with open("/dev/full", "wb") as full:
            proc = subprocess.run([sys.executable, "-m", "smem", *args], stdout=full, stderr=subprocess.PIPE,
                                  cwd=os.path.dirname(os.path.dirname(__file__)))
        err = proc.stderr.decode().splitlines()
        assert proc.returncode == 1 and err[-1] == f"smem: cannot write the {what}: No space left on device"
        assert "Traceback" not in proc.stderr.decode()


@pytest.mark.uses("cpu")
def test_a_directory_above_the_capture_names_the_capture(tmp_path):
    """smem -S on the folder a capture was extracted into one level down, or the folder that holds
    the capture file: "no meminfo in this directory" and nothing of where it is."""
    from conftest import FIXTURES
    capture = FIXTURES / "captures" / "faithful.tar.gz"
    with tarfile.open(capture) as tar:
        tar.extractall(tmp_path / "outer" / "board", filter="tar")
    ours = run_smem("-S", tmp_path / "outer", "-t")
    assert ours.returncode == 1
    assert ours.stderr.decode() == (f"smem: {tmp_path / 'outer'}: no meminfo in this directory (not a capture or a "
                                    f"proc tree?); {tmp_path / 'outer' / 'board'} holds a capture\n")
    shutil.copy(capture, tmp_path / "board.tgz")
    ours = run_smem("-S", tmp_path, "-t")
    assert ours.returncode == 1 and ours.stderr.decode().endswith(f"; {tmp_path / 'board.tgz'} may be one\n"), ours.stderr
    assert run_smem("-S", tmp_path / "outer" / "board", "-t").returncode == 0


def test_a_source_without_meminfo_is_an_error_not_silence(tmp_path):
    """smem 1.5 swallowed the OSError of a tree without meminfo (the bare smaps of the ARM sets):
    nothing printed, exit 0, with -p or without."""
    from conftest import FIXTURES
    with tarfile.open(FIXTURES / "captures" / "armv7-noswap.tar.gz") as tar:
        tar.extractall(tmp_path / "proc", filter="tar")
    os.unlink(tmp_path / "proc" / "meminfo")
    for args in ([], ["-p"]):
        ours = run_smem("-S", tmp_path, *args)
        assert ours.returncode == 1 and ours.stdout == b""
        assert ours.stderr.decode() == f"smem: {tmp_path}: no meminfo in this directory (not a capture or a proc tree?)\n"
        if os.path.exists("/usr/bin/smem"):
            theirs = subprocess.run(["/usr/bin/smem", "-S", tmp_path, *args], capture_output=True,
                                    stdin=subprocess.DEVNULL, cwd="/tmp")
            assert (theirs.returncode, theirs.stdout, theirs.stderr) == (0, b"", b"")
