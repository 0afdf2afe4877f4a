"""scripts/smemcap.sh FILE compresses as FILE's name says, as `smem capture -o` does (box.tar.xz:
xz, box.tar: none), with the tool where the box has it; where it has none that compresses
(busybox's xz only decompresses), one line and exit 1, never a capture in another format under
that name.  Standard output and a name that says none stay gzip's (a plain tar, said, without it).
"""

import os
import subprocess

import pytest

from smem.compression import compression_of
from smemcap_shells import BUSYBOX, DASH, SHELLS, busybox_bin, run_script, script_env, SCRIPT
from smemcap_shells import shell  # noqa: F401 (fixture)


GZIP, BZIP2, XZ, ZSTD = b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd"
USTAR = (257, b"ustar")


def _member_names(path):
    """The members of the capture at ``path``, unpacked by the tool of the compression it starts with."""
    compression = compression_of(path.read_bytes()[:8])
    data = path.read_bytes()
    if compression is not None:
        data = subprocess.run([compression.name, "-dc", str(path)], capture_output=True, check=True).stdout
    return subprocess.run(["tar", "tf", "-"], input=data, capture_output=True, check=True).stdout.decode().split()


def _starts_as(data, magic):
    if magic == USTAR:
        return data[257:262] == b"ustar"
    return data.startswith(magic)


@pytest.mark.parametrize("shell", [SHELLS[0], SHELLS[1]], indirect=True)  # dash, busybox sh
@pytest.mark.parametrize("name, magic", [
    ("box.tar.xz", XZ), ("box.txz", XZ), ("box.tar.bz2", BZIP2), ("box.tbz2", BZIP2),
    ("box.tar.zst", ZSTD), ("box.TAR.GZ", GZIP), ("box.tgz", GZIP), ("box.tar", USTAR), ("box.cap", GZIP)])
def test_file_is_written_in_the_compression_its_name_says(shell, pid_namespace, tmp_path, name, magic):
    tool = {XZ: "xz", BZIP2: "bzip2", ZSTD: "zstd"}.get(magic)
    if tool and not any(os.access(os.path.join(d, tool), os.X_OK) for d in shell[1].split(os.pathsep)):
        pytest.skip(f"no {tool} here")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / name
    res = run_script(shell, tmpdir, str(out), namespace=pid_namespace)
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    assert _starts_as(out.read_bytes(), magic), out.read_bytes()[:8]
    assert "meminfo" in _member_names(out)
    assert list(tmpdir.iterdir()) == []


@pytest.mark.parametrize("shell", [SHELLS[0], SHELLS[1]], indirect=True)  # dash, busybox sh
@pytest.mark.parametrize("name, says", [("box.tar.lz4", "lz4"), ("box.tar.lz", "lzip"), ("box.tlz", "lzma"),
                                        ("box.tar.lzo", "lzop"), ("box.tar.Z", "compress"), ("box.taZ", "compress")])
def test_a_name_that_says_a_compression_it_never_writes_is_refused(shell, pid_namespace, tmp_path, name, says):
    """box.tar.lz4 was written as gzip (the compression of a name it does not know): a file that
    says lz4 and holds gzip misleads every tool that reads it.  A usage error, as smem capture's."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / name
    res = run_script(shell, tmpdir, str(out), namespace=pid_namespace, timeout=120)
    assert (res.returncode, res.stdout) == (2, b""), res
    assert res.stderr.decode().splitlines() == [
        f"smemcap.sh: {out} names {says}, which smemcap.sh cannot write: name it FILE.tgz, FILE.tar.bz2, "
        "FILE.tar.xz, FILE.tar.zst or FILE.tar"]
    assert not out.exists() and list(tmpdir.iterdir()) == []


@pytest.mark.uses("shells")
@pytest.mark.skipif(DASH is None or BUSYBOX is None, reason="no dash or busybox")
@pytest.mark.parametrize("name, tool, bins", [
    # busybox's xz applet only decompresses; busybox has no zstd
    ("box.tar.xz", "xz", "busybox"), ("box.tar.zst", "zstd", "busybox"),
    ("box.tgz", "gzip", "busybox without gzip"), ("box.tar.bz2", "bzip2", "busybox without bzip2")])
def test_a_compression_the_box_cannot_write_is_refused_in_one_line(tmp_path, name, tool, bins):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    bindir = busybox_bin(tmp_path / "bin", without=bins.split(" without ")[1:])
    out = tmp_path / name
    for argv in ([DASH], [BUSYBOX, "sh"]):
        res = subprocess.run(argv + [str(SCRIPT), str(out)], env=script_env(str(bindir), tmpdir),
                             capture_output=True, timeout=60)
        assert (res.returncode, res.stdout) == (1, b"")
        assert res.stderr.decode().splitlines() == [
            f"smemcap.sh: cannot write {out} as its name asks: no {tool} on PATH that compresses; "
            "name it " + ("FILE.tar for a plain tar" if tool == "gzip" else "FILE.tgz, or FILE.tar for a plain tar")]
        assert not out.exists()
        assert list(tmpdir.iterdir()) == []


@pytest.mark.skipif(BUSYBOX is None, reason="no busybox")
def test_a_plain_tar_named_so_needs_no_gzip_and_says_nothing(tmp_path, pid_namespace):
    """box.tar asks for a tar: a box without gzip writes it without the warning stdout gets."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    bindir = busybox_bin(tmp_path / "bin", without=("gzip",))
    out = tmp_path / "box.tar"
    res = run_script(([BUSYBOX, "sh"], str(bindir)), tmpdir, str(out), namespace=pid_namespace)
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    assert out.read_bytes()[257:262] == b"ustar"
    to_stdout = run_script(([BUSYBOX, "sh"], str(bindir)), tmpdir, namespace=pid_namespace)
    assert to_stdout.returncode == 0
    assert to_stdout.stderr.decode().splitlines() == [
        "smemcap.sh: warning: gzip not found on PATH: writing an uncompressed tar"]
    assert to_stdout.stdout[257:262] == b"ustar"
