"""smem capture: the script it prints, and the compressions it writes, read back.

The captures run in a PID namespace of the module's own (the ``pid_namespace`` fixture): one of
the whole machine copies every process on it, the suite's workers and browser too; in the
namespace it copies a handful, and what is read back is the same kind of capture.
"""

import os
import subprocess
import sys

import pytest

from conftest import TESTS, run_smem


def _capture(namespace, *args, cwd=None, wrap=(), **kw):
    """``python -m smem capture ARGS`` of this checkout, in ``namespace``, working in ``cwd``
    (nsenter would otherwise set its own), run by the command ``wrap`` if given."""
    env = dict(os.environ, PYTHONPATH=str(TESTS.parent))
    argv = [*wrap, sys.executable, "-m", "smem", "capture", *map(str, args)]
    if cwd is not None:
        argv = ["env", "-C", str(cwd), *argv]
    return subprocess.run(namespace.argv(argv), env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=120, **kw)


def test_capture_script_prints_the_shell_script_that_captures(pid_namespace, tmp_path):
    script = run_smem("capture", "--script")
    assert script.returncode == 0 and script.stdout == (TESTS.parent / "scripts" / "smemcap.sh").read_bytes()
    shell = "dash" if subprocess.run(["which", "dash"], capture_output=True).returncode == 0 else "sh"
    capture = tmp_path / "box.tgz"
    with open(capture, "wb") as out:
        assert subprocess.run(pid_namespace.argv([shell]), input=script.stdout, stdout=out,
                              timeout=120).returncode == 0
    assert run_smem("-S", capture, "-u").returncode == 0


def test_capture_in_zstd_reads_back(pid_namespace, tmp_path):
    pytest.importorskip("zstandard", reason="smem[compression]: zstandard not installed")
    capture = tmp_path / "box.tar.zst"
    assert _capture(pid_namespace, "--compression", "zst", "-o", capture).returncode == 0
    assert capture.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    report = run_smem("-S", capture, "-w")
    assert report.returncode == 0 and b"free memory" in report.stdout


@pytest.mark.parametrize("name,magic", [("gzip", b"\x1f\x8b"), ("bzip2", b"BZh"), ("zstd", b"\x28\xb5\x2f\xfd")])
def test_compression_takes_the_names_of_the_programs(pid_namespace, name, magic, tmp_path):
    """--compression zstd was refused (only zst): the program names people know are aliases."""
    if name == "zstd":
        pytest.importorskip("zstandard", reason="smem[compression]: zstandard not installed")
    capture = tmp_path / "box.tar"
    assert _capture(pid_namespace, "--compression", name, "-o", capture).returncode == 0
    assert capture.read_bytes().startswith(magic)
    assert run_smem("-S", capture, "-u").returncode == 0


def test_output_dash_is_standard_output_not_a_file_called_dash(pid_namespace, tmp_path):
    """-o - writes the capture to standard output, as smem html's -o - does (it once made a file
    named "-" in the working directory)."""
    done = _capture(pid_namespace, "-o", "-", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout[:2] == b"\x1f\x8b"
    assert list(tmp_path.iterdir()) == []


def test_the_capturing_smem_is_not_in_its_capture(pid_namespace):
    """A capture held the smem that made it: two captures of an idle machine a minute apart
    showed it in smem diff as a process gone and another new (17 MiB each way on a desktop).
    (In the module's PID namespace: a shell says its pid, then its child's, which becomes smem.)"""
    import io
    import tarfile
    done = _capture(pid_namespace, "-o", "-", wrap=["sh", "-c", 'echo "$$" >&2; sh -c \'echo "$$" >&2; exec "$@"\' sh "$@"; :',
                                                     "sh"])
    assert done.returncode == 0, done.stderr
    parent, capturer = done.stderr.decode().split()[:2]
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        pids = {name.split("/")[0] for name in tar.getnames() if name.split("/")[0].isdigit()}
    assert parent in pids and capturer not in pids  # (its parent is)


@pytest.mark.parametrize("name,magic", [
    ("box.tar", None), ("box.tar.xz", b"\xfd7zXZ\x00"), ("BOX.TAR.BZ2", b"BZh"), ("box.tbz2", b"BZh"),
    ("box.txz", b"\xfd7zXZ\x00"), ("box.tgz", b"\x1f\x8b"), ("box.tar.gz", b"\x1f\x8b"), ("box.cap", b"\x1f\x8b"),
])
def test_the_output_name_chooses_the_compression(pid_namespace, name, magic, tmp_path):
    """-o box.tar.xz wrote gzip under that name (tar xJf refused it): without --compression, the
    name's extension says which; a name that says none gets the default, gzip."""
    capture = tmp_path / name
    done = _capture(pid_namespace, "-o", capture)
    assert done.returncode == 0, done.stderr
    head = capture.read_bytes()[:512]
    assert head.startswith(magic) if magic else head[257:262] == b"ustar"  # (a plain tar's magic)
    assert run_smem("-S", capture, "-u").returncode == 0
