"""How the classic table's lines end: smem 1.5's views as smem 1.5 printed them (every cell
padded, a space after the last), the views it lacked with no whitespace at the end of a line,
and a breakdown's Source wrapped under itself on a terminal too narrow for it."""

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios

import pytest

from conftest import FIXTURES, TESTS, run_smem

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


def _lines(*args, env=None):
    proc = run_smem("-S", CAPTURE, *args, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode().splitlines()


@pytest.mark.parametrize("args", [["-w", "--breakdown"], ["-w", "--breakdown", "-t"], ["--shm", "-t"],
                                  ["--cgroup", "-t"], ["-g"], ["-w", "-c", "area used source"]])
def test_views_smem15_lacked_end_their_lines_without_whitespace(args):
    """--breakdown's lines ended in up to 60 spaces: its Source, left-aligned and last, padded."""
    lines = _lines(*args)
    assert len(lines) > 2 and [line for line in lines if line != line.rstrip()] == []


@pytest.mark.parametrize("args", [["-c", "pid command"], ["-u", "-c", "user"], ["-u"], ["-m", "-c", "map"]])
def test_smem15s_views_keep_its_padding(args):
    """smem 1.5 pads its last column and follows it with a space (tests/test_goldens.py: the bytes)."""
    lines = _lines(*args)
    assert all(line.endswith(" ") for line in lines[:-1]) and len({len(line) for line in lines[1:-1]}) == 1


def _sources(lines, indent):
    """Each row's Source as the table shows it, its wrapped lines joined."""
    rows = []
    for line in lines[1:]:
        if line.startswith(" " * indent) and line[indent:indent + 1] != " ":
            rows[-1] += " " + line[indent:]
        elif not line.startswith("-"):
            rows.append(line[indent:])
    return rows


def _breakdown_sources():
    document = json.loads(run_smem("-S", CAPTURE, "-w", "--breakdown", "-F", "json").stdout)
    return [row["source"] for row in document["rows"]]


def test_breakdown_fits_a_narrow_terminal_with_every_source_whole():
    """142 columns wide here before: on 100 (COLUMNS, as -a reads it) the amounts take only the
    width their values need and Source wraps at words under itself; no word of it is lost."""
    lines = [line for line in _lines("-w", "--breakdown", "-t", env={"COLUMNS": "100"}) if line]
    table = lines[:lines.index(next(line for line in lines if line.startswith("unexplained:")))]
    indent = table[0].index("Source")
    assert max(map(len, table)) <= 99 and len(table) > len(_breakdown_sources()) + 3
    assert _sources(table[:-1], indent) == _breakdown_sources()


def test_breakdown_never_cuts_a_word_of_source():
    """On 80 columns (the usual terminal) the others left Source 11, and its words were cut
    ("smaps_roll" "up", "/sys/kernel/dmab" "uf/buffers"): where the room is narrower than its
    longest word, each row is one line, as in a pipe, with every word whole."""
    lines = [line for line in _lines("-w", "--breakdown", "-t", env={"COLUMNS": "80"}) if line]
    table = lines[:lines.index(next(line for line in lines if line.startswith("unexplained:"))) - 2]  # (no totals)
    assert all(line[:1] != " " for line in table)
    assert _sources(table, table[0].index("Source")) == _breakdown_sources()


def test_breakdown_in_a_pipe_has_one_line_a_row():
    lines = _lines("-w", "--breakdown")
    indent = lines[0].index("Source")
    assert _sources(lines[:lines.index("")] if "" in lines else lines[:-1], indent) == _breakdown_sources()
    assert all(line[:1] != " " for line in lines)


@pytest.mark.uses("cpu")
def test_breakdown_wraps_to_the_terminal_it_is_shown_on():
    """A real terminal of 100 columns (no COLUMNS): stdout's width is read as -a reads it."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([sys.executable, "-m", "smem", "-S", str(CAPTURE), "-w", "--breakdown"],
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.DEVNULL, cwd=TESTS.parent,
                            env=env)
    os.close(slave)
    output = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # (EIO: the terminal's other side closed)
                break
            if not chunk:
                break
            output += chunk
    finally:
        os.close(master)
        assert proc.wait(timeout=60) == 0
    lines = output.decode().replace("\r\n", "\n").splitlines()
    table = lines[:next(i for i, line in enumerate(lines) if line.startswith("unexplained:"))]
    assert max(map(len, table)) <= 99 and _sources(table, table[0].index("Source")) == _breakdown_sources()
