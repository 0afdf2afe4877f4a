"""Usage errors: conflicting, empty or ignored options, misspellings suggested, click's messages
in smem's words -- each one line on stderr and exit status 2."""

import os
import subprocess
import sys

import pytest

import smem.cli
from smem.formats import FORMATS

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


@pytest.mark.uses("cpu")
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


@pytest.mark.parametrize("args,words", [
    (["capture", "--script", "-o", "x.sh"], "it takes no -o"),
    (["capture", "--script", "--compression", "xz"], "it takes no --compression"),
    (["capture", "--force"], "use it with -o"),
    (["--force"], "use it with -o"),
    (["--pie", "", "-o", "x.png"], "unknown field"),
])
def test_options_that_would_be_ignored_are_usage_errors(args, words):
    assert words in _usage_error(run_smem(*args))


@pytest.mark.parametrize("chart", [["--pie", "nosuch"], ["--bar", "pid", "-c", "pid name"]])
def test_a_chart_of_no_field_or_no_amount_is_refused_before_the_source_is_read(tmp_path, chart):
    """Known before a byte is read (the view's columns): a bar chart of no memory column, as an
    unknown field, is refused before the source is opened (a remote host's capture, a whole
    machine's processes), not after."""
    line = _usage_error(run_smem("-S", tmp_path / "nonexistent", *chart, "-o", tmp_path / "x.png"))
    assert ("unknown field" in line if chart[0] == "--pie"
            else "nothing to draw bars of: no memory column among the columns shown (pid name)" in line), line


@pytest.mark.parametrize("args,line", [
    (["diff"], "smem: missing OLD: smem diff takes OLD [NEW] (see 'smem diff --help')"),
    (["diff", CAPTURE], f"smem: smem diff compares OLD and NEW, or the first and last frames of a recording: "
                        f"{CAPTURE} is not a recording; against this machine now: smem diff {CAPTURE} live"),
    (["diff", CAPTURE, CAPTURE, "x"], "smem: unexpected argument 'x': smem diff takes OLD [NEW] (see 'smem diff --help')"),
    (["-t", "x"], "smem: unexpected argument 'x': smem takes options only (see 'smem --help')"),
    (["frobnicate"], "smem: no command 'frobnicate'; the commands: "
                     f"{', '.join(n for n, c in smem.cli.cli.commands.items() if not c.hidden)} (see 'smem --help')"),
    (["captur"], "smem: no command 'captur'; did you mean capture? (see 'smem --help')"),
    (["--group"], "smem: --group takes a value: --group KEY (see 'smem --help')"),
    (["--group", "user"], "smem: --group takes name, not 'user'"),
    (["--totals=1"], "smem: --totals takes no value (see 'smem --help')"),
    (["capture", "-o"], "smem: -o takes a value: -o FILE (see 'smem capture --help')"),
    (["-F", "jsn"], "smem: -F/--format: no such value 'jsn'; did you mean json?"),
    (["-F", "nosuch"], "smem: -F/--format: no such value 'nosuch'; the values: "
                       f"{', '.join(FORMATS)}"),
    (["-R", "2X"], "smem: -R/--realmem: cannot read memory size '2X': use a number with an optional unit, "
                   "e.g. 2G, 2GiB, 1.5G, 512M, 2097152K or 2147483648 (bytes)"),
    (["--max-rss", "0"], "smem: --max-rss: memory size '0' is not more than 0 bytes: give a size such as 2G"),
    (["record"], "smem: smem record needs -o/--output DIR (see 'smem record --help')"),
    (["html"], "smem: smem html needs -o/--output FILE (see 'smem html --help')"),
    (["--interval", "1", "--count", "0"], "smem: --count takes a whole number at least 1 (not 0) (see 'smem --help')"),
    # a number out of range in words, its bounds as written (click: "0.0 is not in the range 0.0<x<=10000000")
    (["-S", "x", "--timeout", "0"], "smem: --timeout takes a number above 0, at most 10000000 (not 0) (see 'smem --help')"),
    (["-w", "--recommend", "2000"], "smem: --recommend takes a number at least 0, at most 1000 (not 2000) "
                                    "(see 'smem --help')"),
    (["-j", "-1"], "smem: -j/--jobs takes a whole number at least 0 (not -1) (see 'smem --help')"),
    # a value just past a bound said whole (click's "1000000.5" is not the bound "1e+06"), and a value
    # not a number at all in the same words (click: "'2.5' is not a valid integer range")
    (["-S", "x", "--speed", "1000000.5"], "smem: --speed takes a number at least 0.001, at most 1000000 "
                                          "(not 1000000.5) (see 'smem --help')"),
    (["--interval", "1", "--count", "2.5"], "smem: --count takes a whole number at least 1 (not '2.5') "
                                            "(see 'smem --help')"),
    (["-w", "--recommend", "abc"], "smem: --recommend takes a number at least 0, at most 1000 (not 'abc') "
                                   "(see 'smem --help')"),
    # --interval and --wss check their range themselves: not a number, they said "'abc' is not a valid float"
    (["--interval", "abc"], "smem: --interval takes a number of seconds (not 'abc') (see 'smem --help')"),
    (["--wss", "1s"], "smem: --wss takes a number of seconds (not '1s') (see 'smem --help')"),
    # an optional value (--recommend [PCT]) does not take what looks like an option: click read -5 as one
    (["-w", "--recommend", "-5"], "smem: no such option -5: a negative number is no option, and no option "
                                  "takes one (see 'smem --help')"),
    # a FIELD forgotten: --bar took -o as its field, and the stray file name was not what was wrong
    (["-w", "--breakdown", "--bar", "-o", "x.png"], "smem: --bar takes FIELD: not the option -o "
                                                    "(see 'smem --help')"),
    (["-S", "x", "--at", "-u", "x"], "smem: --at takes TIME: not the option -u (see 'smem --help')"),
])
def test_click_errors_are_in_smems_words(args, line):
    """One style: click's own messages (Missing argument 'OLD'., Got unexpected extra argument)
    reworded as smem's lowercase one-liners, misspelt commands suggested as options are."""
    assert _usage_error(run_smem(*args)) == line
