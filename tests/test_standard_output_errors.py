"""Help, version, the page and a chart (-o -) written to a standard output that cannot take them (a full disk,
stdout closed, a pipe closed before their end) are one line on stderr and exit status 1, as the report's
are: `smem --help > /dev/full` and `smem html -o - >&-` printed Python's traceback."""

import os
import subprocess
import sys

import pytest

from conftest import FIXTURES
from running_smem import refused_on_a_terminal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


def _smem(args, stdout):
    return subprocess.run([sys.executable, "-m", "smem", *args], stdout=stdout, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, cwd=ROOT)


def _to_full_disk(args):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "wb") as full:
        return _smem(args, full)


@pytest.mark.process
@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"], ["diff", "--help"], ["capture", "--help"]])
def test_help_and_version_to_a_full_disk_are_one_line(args):
    proc = _to_full_disk(args)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and err == "smem: cannot write to standard output: No space left on device\n", err


@pytest.mark.process
def test_the_page_to_a_full_disk_is_one_line():
    pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
    proc = _to_full_disk(["html", "-S", str(CAPTURE), "-o", "-"])
    err = proc.stderr.decode()
    assert proc.returncode == 1 and err == "smem: cannot write the page: No space left on device\n", err


@pytest.mark.process
def test_the_page_to_a_closed_standard_output_is_one_line_before_reading():
    """Said before the source is read: a missing capture is not what stops it."""
    pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
    proc = subprocess.run([sys.executable, "-m", "smem", "html", "-S", "nothere.tgz", "-o", "-"],
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ROOT, preexec_fn=lambda: os.close(1))
    err = proc.stderr.decode()
    assert proc.returncode == 1 and err == "smem: cannot write the page: standard output is closed; use -o FILE\n", err


@pytest.mark.process
def test_the_page_to_a_terminal_is_refused_before_reading():
    """smem html -o - on a terminal poured 6 MB of HTML and plotly.js (raw control bytes among
    them) onto it; it is refused as a capture or a chart is, before a missing capture is read.
    What reached the terminal is read up to a mark written after smem exited."""
    pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
    proc, shown = refused_on_a_terminal(["html", "-S", "nothere.tgz", "-o", "-"])
    assert proc.returncode == 2 and shown == b""
    assert proc.stderr.decode() == "smem: refusing to write a page to a terminal; use -o FILE or a pipe\n"


@pytest.mark.process
@pytest.mark.parametrize("args", [["--help"], ["--version"], ["diff", "--help"]])
def test_help_and_version_to_a_closed_standard_output_are_one_line(args):
    """They printed nothing and exited 0, as if said: smem >&- of a report is an error already."""
    proc = subprocess.run([sys.executable, "-m", "smem", *args], stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                          cwd=ROOT, preexec_fn=lambda: os.close(1))
    err = proc.stderr.decode()
    assert proc.returncode == 1 and err == "smem: cannot write to standard output: standard output is closed\n", err


@pytest.mark.process
@pytest.mark.uses("charts")
def test_a_chart_to_a_full_disk_or_a_closed_standard_output_is_one_line():
    """The closed one said before the source is read, as the page's: a missing capture is not what stops it."""
    pytest.importorskip("matplotlib", reason="smem[charts]: matplotlib not installed")
    full = _to_full_disk(["-S", str(CAPTURE), "--pie", "name", "-o", "-"])
    assert full.returncode == 1 and full.stderr.decode() == "smem: cannot write the chart: No space left on device\n"
    closed = subprocess.run([sys.executable, "-m", "smem", "-S", "nothere.tgz", "--bar", "name", "-o", "-"],
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ROOT, preexec_fn=lambda: os.close(1))
    err = closed.stderr.decode()
    assert closed.returncode == 1, err
    assert err == "smem: cannot write the chart: standard output is closed; use -o FILE\n", err


@pytest.mark.process
@pytest.mark.parametrize("args, what, extra", [
    (["html", "-S", str(CAPTURE), "-o", "-"], "page", "plotly"),
    pytest.param(["-S", str(CAPTURE), "--pie", "name", "-o", "-"], "chart", "matplotlib",
                 marks=pytest.mark.uses("charts")),
])
def test_a_page_or_chart_whose_reader_leaves_early_is_said_cut_off(args, what, extra):
    """The reader of a pipe gone before the end (a dropped ssh, `| head`): exit 0 without a word, as a
    report read by head, though what it had was not a whole page or PNG (a capture cut off so is an
    error).  The one write of it took part and said so only by its count, never raising at all."""
    pytest.importorskip(extra, reason=f"{extra} not installed")
    proc = subprocess.Popen([sys.executable, "-m", "smem", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, cwd=ROOT)
    assert len(proc.stdout.read(100)) == 100  # (the page is megabytes, the PNG 160 KiB: more than a pipe holds)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1, err
    assert err == (f"smem: the {what} was cut off: standard output was closed before the end (broken pipe); "
                   "what was written is not whole\n"), err
