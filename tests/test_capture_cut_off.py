"""A capture that cannot be written whole is an error, never a quiet exit 0.

``smem capture`` and ``scripts/smemcap.sh`` write into a pipe a reader closes early
(``head -c``: what a dropped ssh or nc does) and into a filesystem that fills up (a
small tmpfs); both say so in one line and exit non-zero, and a file that ``-o`` named is
not left behind half written.  Reading a capture cut short says so, naming the file as
the user gave it, whatever its compression.

The captures run in a PID namespace of the module's own (the ``pid_namespace`` fixture): one
of the whole machine copies every process on it, the suite's workers and browser too, before it
meets the cut; in the namespace it copies a handful.  Its mounts are its own, so the full
filesystem is mounted there.
"""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import FIXTURES, TESTS, run_smem

SCRIPT = TESTS.parent / "scripts" / "smemcap.sh"
SMEM = [sys.executable, "-m", "smem"]
#: smem as this checkout has it, wherever the command's working directory is
ENV = dict(os.environ, PYTHONPATH=str(TESTS.parent))


def _into_closed_pipe(command):
    """Run ``command`` writing into a pipe whose reader has gone (as ``| head -c 0`` leaves it,
    and a dropped ssh or nc): its status and what it said on stderr.  The reader is gone before
    the first write, so the outcome does not hang on whether the capture outgrows the pipe's buffer."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(command, stdout=write_end, stderr=subprocess.PIPE, env=ENV,
                              stdin=subprocess.DEVNULL, timeout=120)
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr.decode()


@pytest.mark.process
def test_smem_capture_into_a_closed_pipe_fails(pid_namespace):
    status, err = _into_closed_pipe(pid_namespace.argv([*SMEM, "capture"]))
    assert status == 1
    lines = err.strip().splitlines()
    assert lines[-1].startswith("smem: the capture was cut off") and "Traceback" not in err


@pytest.mark.process
@pytest.mark.skipif(shutil.which("dash") is None and shutil.which("busybox") is None, reason="no sh to run")
def test_smemcap_sh_into_a_closed_pipe_fails(pid_namespace):
    shell = shutil.which("dash") or shutil.which("busybox")
    command = [shell, str(SCRIPT)] if shell.endswith("dash") else [shell, "sh", str(SCRIPT)]
    status, err = _into_closed_pipe(pid_namespace.argv(command))
    assert status == 1 and "smemcap.sh: writing the capture failed" in err


@pytest.mark.process
def test_smem_capture_onto_a_full_filesystem_fails_and_leaves_no_file(pid_namespace, full_filesystem):
    target = full_filesystem.path / "box.tgz"
    proc = subprocess.run(pid_namespace.argv([*SMEM, "capture", "-o", target]), capture_output=True, env=ENV,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.decode() == f"smem: cannot write the capture to {target}: No space left on device\n"
    assert list(full_filesystem.seen.iterdir()) == []


@pytest.mark.process
def test_smem_capture_to_stdout_on_a_full_filesystem_fails(pid_namespace, full_filesystem):
    with open(full_filesystem.seen / "box.tgz", "wb") as out:
        proc = subprocess.run(pid_namespace.argv([*SMEM, "capture"]), stdout=out, stderr=subprocess.PIPE,
                              env=ENV, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.decode() == "smem: cannot write the capture: No space left on device\n"


@pytest.mark.process
@pytest.mark.skipif(shutil.which("dash") is None, reason="no dash")
def test_smemcap_sh_onto_a_full_filesystem_fails_and_leaves_no_file(pid_namespace, full_filesystem):
    target = full_filesystem.path / "box.tgz"
    proc = subprocess.run(pid_namespace.argv(["dash", SCRIPT, target]), capture_output=True, timeout=120)
    assert proc.returncode == 1 and b"writing the capture failed" in proc.stderr
    assert list(full_filesystem.seen.iterdir()) == []


def test_smemcap_sh_onto_a_full_filesystem_keeps_the_capture_there(pid_namespace, full_filesystem):
    """Yesterday's capture fills the disk (a 4 KiB tmpfs: its one page): the new one cannot be
    written, and the old one is as it was.  The script copied its capture straight over FILE, which
    truncated it first: the old capture was lost, and FILE a cut gzip."""
    import gzip
    import io
    import tarfile
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("meminfo")
        info.size = len(b"MemTotal: 1024 kB\n")
        tar.addfile(info, io.BytesIO(b"MemTotal: 1024 kB\n"))
    before = gzip.compress(raw.getvalue())
    (full_filesystem.seen / "box.tgz").write_bytes(before)
    target = full_filesystem.path / "box.tgz"
    proc = subprocess.run(pid_namespace.argv(["dash", SCRIPT, target]), capture_output=True, timeout=120)
    assert proc.returncode == 1 and b"writing the capture failed" in proc.stderr, proc.stderr
    assert proc.stderr.decode().count("\n") == 1, proc.stderr
    assert [p.name for p in full_filesystem.seen.iterdir()] == ["box.tgz"]  # (nothing left beside it)
    assert (full_filesystem.seen / "box.tgz").read_bytes() == before


@pytest.fixture(scope="module")
def whole_capture(tmp_path_factory):
    """One uncompressed capture (a recorded one: its size, and so what compressing it costs, is
    not this machine's); the compressed ones are made from it."""
    import gzip
    path = tmp_path_factory.mktemp("whole") / "box.tar"
    path.write_bytes(gzip.decompress((FIXTURES / "captures" / "faithful.tar.gz").read_bytes()))
    return path


COMPRESSORS = {
    "gz": (["gzip", "-c"], "gzip data is truncated"),
    "bz2": (["bzip2", "-c"], "bzip2 data is truncated"),
    "xz": (["xz", "-c"], "xz data is truncated"),
    "zst": (["zstd", "-q", "-c"], "zstd data is truncated"),
    "tar": (None, "capture archive is truncated"),
}


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("kind", COMPRESSORS)
def test_reading_a_cut_off_capture_says_so_and_names_the_file(kind, whole_capture, tmp_path):
    program, said = COMPRESSORS[kind]
    if program is not None and shutil.which(program[0]) is None:
        pytest.skip(f"no {program[0]}")
    if kind == "zst":
        pytest.importorskip("zstandard", reason="smem[compression]: zstandard not installed")
    data = whole_capture.read_bytes()
    if program is not None:
        data = subprocess.run(program, input=data, capture_output=True, check=True).stdout
    cut = tmp_path / "sub dir" / f"box.{kind}"
    cut.parent.mkdir()
    cut.write_bytes(data[: len(data) // 2])
    proc = run_smem("-S", str(cut))
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert err.startswith(f"smem: {cut}: ") and said in err and err.count("\n") == 1


@pytest.mark.process
@pytest.mark.skipif(shutil.which("busybox") is None, reason="no busybox")
@pytest.mark.parametrize("gzip", [True, False], ids=["gzip", "no-gzip"])
def test_smemcap_sh_piped_into_nc_that_cannot_connect_says_the_reader_went_away(pid_namespace, tmp_path, gzip):
    """On a board, ``sh smemcap.sh | nc HOST PORT`` with nothing listening (the listener not
    started yet, a wrong port): nc goes, and the script said "writing the capture failed (gzip exit
    141)" (with gzip) or "(tar error)" (without), which says nothing of a pipe.  It names the reader."""
    import socket
    busybox = shutil.which("busybox")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    applets = subprocess.run([busybox, "--list"], capture_output=True, check=True, text=True).stdout.split()
    for name in applets:
        if gzip or name != "gzip":
            (bindir / name).symlink_to(busybox)
    with socket.socket() as bound:  # bound, never listening: a connection to it is refused
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        line = f"sh {SCRIPT} | nc 127.0.0.1 {port}"
        proc = subprocess.run(pid_namespace.argv([busybox, "sh", "-c", line]), env=dict(os.environ, PATH=str(bindir)),
                              capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    err = proc.stderr.decode()
    (said,) = [l for l in err.splitlines() if l.startswith("smemcap.sh: writing")]
    assert said.startswith("smemcap.sh: writing the capture failed: whatever read its output closed the pipe"), err
