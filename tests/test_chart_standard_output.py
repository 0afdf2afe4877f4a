"""`smem --pie FIELD -o -` (and --bar): the chart as a PNG on standard output, for a pipe (`| display`,
`ssh box smem --pie name -o - > pie.png`). It was refused ("no file extension"). A terminal is refused
before anything is read (a PNG shown there is garbage), as `smem capture` refuses one; a full disk or a
closed standard output is test_standard_output_errors.py's."""

import pytest

from conftest import FIXTURES, run_smem
from running_smem import refused_on_a_terminal

pytest.importorskip("matplotlib", reason="smem[charts]: matplotlib not installed")
pytestmark = pytest.mark.uses("charts")  # each test draws with matplotlib

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


@pytest.mark.parametrize("chart", [("--pie", "name"), ("-u", "--bar", "user")])
def test_a_chart_to_standard_output_is_the_png_o_file_png_saves(tmp_path, chart):
    piped = run_smem("-S", CAPTURE, *chart, "-o", "-")
    assert piped.returncode == 0 and piped.stderr == b"", piped.stderr
    saved = tmp_path / "chart.png"
    assert run_smem("-S", CAPTURE, *chart, "-o", saved).returncode == 0
    assert piped.stdout.startswith(b"\x89PNG\r\n\x1a\n") and b"software\x00matplotlib" in piped.stdout[:200].lower()
    assert piped.stdout == saved.read_bytes()


def test_force_is_refused_with_standard_output():
    proc = run_smem("-S", CAPTURE, "--pie", "name", "-o", "-", "--force")
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().startswith("smem: --force lets -o replace a file: not with -o -")


@pytest.mark.process
def test_a_terminal_is_refused_before_the_source_is_read():
    """A missing capture is not what stops it; nothing reaches the terminal (read up to a mark
    written after smem exited: a terminal hands what is written to its master a moment later)."""
    proc, shown = refused_on_a_terminal(["-S", "nothere.tgz", "--pie", "name", "-o", "-"])
    assert proc.returncode == 2 and shown == b""
    assert proc.stderr.decode() == "smem: refusing to write a chart to a terminal; use -o FILE or a pipe\n"
