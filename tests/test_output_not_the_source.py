"""-o never names what the report is read from: with --force (which lets -o replace a file that
holds no chart, no page), ``smem html -S box.tgz -o box.tgz --force`` wrote the page over the
capture it was made from, and a chart or page into a recording's directory over its index or a
frame; the capture, or the recording, was lost.  And ``smem record -o -`` made a directory named
"-" where every other -o - is standard output.  Each is one usage line now, the file untouched."""

import shutil
import subprocess
import sys

import pytest

from conftest import FIXTURES, run_smem

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"
RECORDING = FIXTURES / "recordings" / "small"


def _refused(args, file, said):
    before = file.read_bytes()
    proc = run_smem(*args)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 2 and proc.stdout == b"" and len(lines) == 1, (args, proc.returncode, lines)
    assert said in lines[0], lines
    assert file.read_bytes() == before


@pytest.mark.parametrize("how", ["-S", "--compare", "a link to it"])
def test_the_page_is_not_written_over_its_capture(tmp_path, how):
    pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
    capture = tmp_path / "box.tgz"
    shutil.copy(CAPTURE, capture)
    output = capture
    if how == "a link to it":
        output = tmp_path / "box.html"
        output.symlink_to(capture)
    args = ["html", "-S", capture] if how != "--compare" else ["html", "-S", CAPTURE, "--compare", capture]
    _refused([*args, "-o", output, "--force"], capture, f"-o {output} is the source {capture} itself")


def test_a_chart_is_not_written_over_its_capture(tmp_path):
    capture = tmp_path / "box.png"  # (a capture is read by its bytes, whatever its name)
    shutil.copy(CAPTURE, capture)
    _refused(["-S", capture, "--pie", "name", "-o", capture, "--force"], capture, "is the source")



@pytest.mark.process
def test_a_chart_is_not_written_over_the_capture_on_standard_input(tmp_path):
    """`smem -S - --pie name -o box.png --force < box.png` wrote the chart over the capture it read."""
    capture = tmp_path / "box.png"
    shutil.copy(CAPTURE, capture)
    with open(capture, "rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "smem", "-S", "-", "--pie", "name", "-o", str(capture), "--force"],
                              stdin=stdin, capture_output=True, cwd=FIXTURES.parents[1], timeout=120)
    assert proc.returncode == 2 and proc.stdout == b"", proc
    assert proc.stderr.decode() == (f"smem: -o {capture} is the source on standard input (-) itself: it would be "
                                    "replaced by what is read from it; name another file\n")
    assert capture.read_bytes() == CAPTURE.read_bytes()

@pytest.mark.parametrize("member", ["index.jsonl", "frames/000004.zst"])
def test_force_replaces_no_file_of_a_recording_read(tmp_path, member):
    pytest.importorskip("zstandard", reason="a recording needs smem[compression]")
    rec = tmp_path / "rec"
    shutil.copytree(RECORDING, rec)
    _refused(["-S", rec, "--bar", "pid", "-o", rec / member, "--force"], rec / member,
             f"is a file of the source {rec}")
    assert run_smem("-S", rec, "-u").returncode == 0
    # without --force a chart of its own in the directory is written there, and again
    for _ in range(2):
        proc = run_smem("-S", rec, "--bar", "pid", "-o", rec / "bar.svg")
        assert proc.returncode == 0, proc.stderr


def test_record_to_standard_output_is_refused(tmp_path):
    # (run where a directory "-" made would be seen: run_smem runs in the checkout)
    proc = subprocess.run([sys.executable, "-m", "smem", "record", "-o", "-", "--count", "1"], cwd=tmp_path,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=120)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "-o -" in lines[0], lines
    assert not (tmp_path / "-").exists()
