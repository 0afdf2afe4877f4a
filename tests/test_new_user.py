"""What a new user trips on (issue 15): conflicting options, empty values, suggestions, -c all,
-S - on a terminal, and the --exact totals' footnote."""

import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, TESTS, run_smem

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


def _usage_error(proc):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("smem: ") and proc.stdout == b"", lines
    return lines[0]


@pytest.mark.parametrize("views", [["-w", "-m"], ["-m", "-u"], ["-u", "-g"], ["--cgroup", "-w"]])
def test_two_views_are_a_usage_error(views):
    line = _usage_error(run_smem("-S", CAPTURE, *views))
    assert "choose one view" in line and all(v in line for v in views)


@pytest.mark.parametrize("args,words", [
    (["-c", ""], "-c/--columns is empty"),
    (["-c", " , "], "-c/--columns is empty"),
    (["-o", "x.png"], "use it with --pie or --bar"),
    (["--pie", "name", "--bar", "name", "-o", "x.png"], "choose one chart"),
])
def test_empty_or_conflicting_values_are_usage_errors(args, words):
    assert words in _usage_error(run_smem("-S", CAPTURE, *args))


def test_an_unknown_option_suggests_only_a_near_one():
    assert "did you mean" not in _usage_error(run_smem("--bogus"))
    assert "did you mean --totals?" in _usage_error(run_smem("--tota"))
    assert "did you mean --columns?" in _usage_error(run_smem("--column", "pid"))
    assert "did you mean --compression?" in _usage_error(run_smem("capture", "--compresion", "gz"))


def test_all_columns_start_with_the_defaults_in_their_order():
    header = run_smem("-S", CAPTURE, "-c", "all").stdout.decode().splitlines()[0].split()
    defaults = run_smem("-S", CAPTURE).stdout.decode().splitlines()[0].split()
    assert header[:len(defaults)] == defaults and header.index("PSS") < header.index("RSS")
    assert len(header) > len(defaults) + 10


def test_reading_a_capture_from_a_terminal_is_refused():
    import pty
    master, slave = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "smem", "-S", "-"], stdin=slave, capture_output=True,
                              cwd=TESTS.parent, timeout=30)
    finally:
        os.close(master)
        os.close(slave)
    assert "standard input, which is a terminal" in _usage_error(proc)


def test_exact_totals_say_they_are_one_group():
    proc = run_smem("--exact", "-u", "-t")
    if b"showing the smaps figures" in proc.stderr:
        pytest.skip("exact accounting is not available here (root and /proc/kpagecount)")
    lines = proc.stdout.decode().splitlines()
    assert proc.returncode == 0 and lines[-1].startswith("totals: the processes of all rows as one group")
    plain = run_smem("-u", "-t").stdout.decode().splitlines()
    assert not plain[-1].startswith("totals:")
