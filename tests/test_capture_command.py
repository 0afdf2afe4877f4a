"""smem capture: the script it prints, and the compressions it writes, read back."""

import subprocess

import pytest

from conftest import TESTS, run_smem


def test_capture_script_prints_the_shell_script_that_captures(tmp_path):
    script = run_smem("capture", "--script")
    assert script.returncode == 0 and script.stdout == (TESTS.parent / "scripts" / "smemcap.sh").read_bytes()
    shell = "dash" if subprocess.run(["which", "dash"], capture_output=True).returncode == 0 else "sh"
    capture = tmp_path / "box.tgz"
    with open(capture, "wb") as out:
        assert subprocess.run([shell], input=script.stdout, stdout=out, timeout=120).returncode == 0
    assert run_smem("-S", capture, "-u").returncode == 0


def test_capture_in_zstd_reads_back(tmp_path):
    pytest.importorskip("zstandard")
    capture = tmp_path / "box.tar.zst"
    assert run_smem("capture", "--compression", "zst", "-o", capture).returncode == 0
    assert capture.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    report = run_smem("-S", capture, "-w")
    assert report.returncode == 0 and b"free memory" in report.stdout


@pytest.mark.parametrize("name,magic", [("gzip", b"\x1f\x8b"), ("bzip2", b"BZh"), ("zstd", b"\x28\xb5\x2f\xfd")])
def test_compression_takes_the_names_of_the_programs(name, magic, tmp_path):
    """--compression zstd was refused (only zst): the program names people know are aliases."""
    if name == "zstd":
        pytest.importorskip("zstandard")
    capture = tmp_path / "box.tar"
    assert run_smem("capture", "--compression", name, "-o", capture).returncode == 0
    assert capture.read_bytes().startswith(magic)
    assert run_smem("-S", capture, "-u").returncode == 0


def test_output_dash_is_standard_output_not_a_file_called_dash(tmp_path):
    """-o - writes the capture to standard output, as smem html's -o - does (it once made a file
    named "-" in the working directory)."""
    import os
    import sys
    env = dict(os.environ, PYTHONPATH=str(TESTS.parent))
    done = subprocess.run([sys.executable, "-m", "smem", "capture", "-o", "-"], cwd=tmp_path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout[:2] == b"\x1f\x8b"
    assert list(tmp_path.iterdir()) == []
