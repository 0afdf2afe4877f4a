"""A plain tar capture cut at a member's edge is truncated, not a smaller machine.

busybox without gzip makes smemcap.sh write a plain tar, pushed with ``| nc``; tar writes whole
records, so a sender killed half-way leaves a stream that stops between two members.  smem read
that as a whole capture, exit 0: the processes after the cut missing, or none at all (`0 0`
totals).  Every writer that puts a ``capture-info`` in (smemcap.sh, smem capture, a recording's
frames) ends its tar with zero blocks, so such an archive without them is cut.  C smemcap writes
neither, and its archives without an end still read.

``smem capture`` wrote its capture-info near the end, so a plain tar of its cut before that looked
like C smemcap's, whole, exit 0: it writes one first now (and the last, with every fact, at the
end).  Its captures are made in a PID namespace (conftest's pid_namespace): a handful of processes.
"""

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

import pytest

from conftest import AS_NOBODY, FIXTURES, TESTS, run_smem


def _members(tar_bytes):
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        return tar.getmembers()


def _cut_before(tar_bytes, index):
    """The archive up to (not including) member ``index``'s header: a cut at a member's edge."""
    return tar_bytes[:_members(tar_bytes)[index].offset]


def _without_end(tar_bytes):
    """The archive whole but for its end-of-archive blocks (as C smemcap writes it)."""
    last = _members(tar_bytes)[-1]
    return tar_bytes[:last.offset_data + -(-last.size // 512) * 512]


@pytest.fixture(scope="module")
def faithful_tar():
    return gzip.decompress((FIXTURES / "captures" / "faithful.tar.gz").read_bytes())


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("where", ["last member", "middle", "before the first process"])
@pytest.mark.parametrize("view", [[], ["-m"], ["-w"]], ids=["process", "mappings", "system"])
def test_a_capture_cut_between_members_is_truncated(faithful_tar, tmp_path, where, view):
    members = _members(faithful_tar)
    index = {"last member": len(members) - 1, "middle": len(members) // 2,
             "before the first process": next(i for i, m in enumerate(members) if m.name.split("/")[0].isdigit())}[where]
    cut = tmp_path / "box.tar"
    cut.write_bytes(_cut_before(faithful_tar, index))
    proc = run_smem("-S", str(cut), *view)
    err = proc.stderr.decode()
    assert proc.returncode == 1, (proc.stdout.decode(), err)
    assert err.startswith(f"smem: {cut}: capture archive is truncated") and err.count("\n") == 1, err


@pytest.mark.uses("cpu")
def test_a_cut_archive_read_by_tarfile_is_truncated_too(faithful_tar, tmp_path):
    """A GNU long name sends the archive through tarfile, which stops quietly at the end of data."""
    source = _members(faithful_tar)
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(faithful_tar)) as tar, \
            tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as copy:
        for member in source:
            copy.addfile(member, tar.extractfile(member) if member.isreg() else None)
        info = tarfile.TarInfo("sys/" + "x" * 120)  # (over 100 characters: a GNU long-name header)
        copy.addfile(info, io.BytesIO(b""))
        info = tarfile.TarInfo(source[-1].name)
        copy.addfile(info, io.BytesIO(b""))
    cut = tmp_path / "box.tar"
    cut.write_bytes(_cut_before(out.getvalue(), -1))
    proc = run_smem("-S", str(cut), "-t")
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "capture archive is truncated" in err and err.count("\n") == 1, err


def test_a_whole_capture_without_capture_info_and_end_still_reads(tmp_path):
    """C smemcap's archives carry no capture-info and no end marker: they are whole as they are."""
    whole = gzip.decompress((FIXTURES / "captures" / "armv7-noswap.tar.gz").read_bytes())
    assert "capture-info" not in [m.name for m in _members(whole)]
    plain = tmp_path / "board.tar"
    plain.write_bytes(_without_end(whole))
    expected = run_smem("-S", str(FIXTURES / "captures" / "armv7-noswap.tar.gz"), "-t")
    proc = run_smem("-S", str(plain), "-t")
    assert proc.returncode == 0 and proc.stdout == expected.stdout and expected.stdout


def _smem_capture(argv, out):
    """A plain tar ``smem capture`` writes to ``out`` (run as ``argv`` gives the command)."""
    proc = subprocess.run(argv([sys.executable, "-m", "smem", "capture", "-o", str(out)], cwd=TESTS.parent),
                          capture_output=True, cwd=TESTS.parent, stdin=subprocess.DEVNULL, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out.read_bytes()


@pytest.fixture(scope="module")
def ours(tmp_path_factory, pid_namespace):
    """A plain tar smem capture made of the processes of a PID namespace (its init, and the capture)."""
    return _smem_capture(pid_namespace.argv, tmp_path_factory.mktemp("ours") / "x.tar")


def _boundaries(tar_bytes):
    """Every offset where a member of ``tar_bytes`` ends and the next (or the end blocks) starts."""
    members = _members(tar_bytes)
    return [m.offset for m in members[1:]] + [len(_without_end(tar_bytes))]


def test_a_capture_of_ours_cut_at_any_member_boundary_is_truncated(ours, tmp_path):
    """Cut before its capture-info (near the end, where smem capture wrote its only one), it read as
    a whole, smaller machine, exit 0."""
    names = [m.name for m in _members(ours)]
    assert any(n.split("/")[0].isdigit() for n in names), names
    cut = tmp_path / "x.tar"
    for at in _boundaries(ours):
        cut.write_bytes(ours[:at])
        proc = run_smem("-S", str(cut), "-t")
        err = proc.stderr.decode()
        assert proc.returncode == 1, (at, proc.stdout.decode(), err)
        assert err.startswith(f"smem: {cut}: capture archive is truncated") and err.count("\n") == 1, (at, err)


def _with_info_last_only(tar_bytes):
    """The same capture as smem capture wrote it before: one capture-info, its last, near the end."""
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar, \
            tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as copy:
        members = tar.getmembers()
        infos = [m for m in members if m.name == "capture-info"]
        for member in members:
            if member is infos[0] and len(infos) > 1:
                continue
            copy.addfile(member, tar.extractfile(member) if member.isreg() else None)
    return out.getvalue()


@pytest.mark.parametrize("args", [["-t"], ["-F", "json", "-t"], ["-w"]], ids=["table", "json", "system"])
def test_a_whole_capture_of_ours_reads_as_it_did_with_one_capture_info(ours, tmp_path, args):
    whole, before = tmp_path / "whole.tar", tmp_path / "before.tar"
    whole.write_bytes(ours)
    before.write_bytes(_with_info_last_only(ours))
    expected = run_smem("-S", str(before), *args)
    proc = run_smem("-S", str(whole), *args)
    assert proc.returncode == 0 and expected.returncode == 0, proc.stderr
    assert proc.stdout.replace(b"whole.tar", b"before.tar") == expected.stdout and proc.stdout
    assert proc.stderr.replace(b"whole.tar", b"before.tar") == expected.stderr


#: pid 1 of a namespace of its own: a proc mounted there, root's sleep beside, then the command
_INSIDE = ('mount -t proc proc /proc || exit 77; sleep 600 & '
           'while read -r c </proc/$!/comm && [ "$c" != sleep ]; do :; done; exec "$@"')


@pytest.mark.uses("cpu")
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="needs root to mount a proc and become nobody, and util-linux's unshare")
def test_what_writing_counted_is_read_from_the_last_capture_info():
    """The facts known only once the processes are written (here the one it could not read) are in
    the last capture-info; a reader that streams the processes takes the first as it comes, and the
    last over it."""
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o777)
        path = os.path.join(d, "x.tar")
        code = AS_NOBODY + f"smem.cli.main(['capture', '-o', {path!r}])"
        proc = subprocess.run(["unshare", "--pid", "--fork", "--mount", "--propagation", "private", "sh", "-c",
                               _INSIDE, "sh", sys.executable, "-c", "import smem.capture_writer, smem.output; " + code],
                              capture_output=True, cwd=TESTS.parent, stdin=subprocess.DEVNULL, timeout=120)
        if proc.returncode == 77:
            pytest.skip("cannot mount a proc here")
        assert proc.returncode == 0, proc.stderr
        with open(path, "rb") as f:
            tar_bytes = f.read()
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        infos = [tar.extractfile(m).read().decode() for m in tar.getmembers() if m.name == "capture-info"]
    assert len(infos) == 2 and "unreadable_processes" not in infos[0] and "unreadable_processes=1\n" in infos[1], infos
    document = json.loads(run_smem("-S", "-", "-F", "json", input=tar_bytes, check=True).stdout)
    assert document["source"]["unreadable_processes"] == 1, document["source"]
    proc = run_smem("-S", "-", "-t", input=tar_bytes, check=True)
    assert "1 process" in proc.stderr.decode() and "could not read" in proc.stderr.decode(), proc.stderr


def test_a_capture_of_ours_pushed_cut_is_refused_by_the_listener(ours, tmp_path):
    """smem capture -o - | nc, the sender killed before it wrote its last capture-info: kept as a
    whole capture, exit 0."""
    import socket
    last = [m for m in _members(ours) if m.name == "capture-info"][-1]
    out = tmp_path / "kept.tar"
    proc = subprocess.Popen([sys.executable, "-m", "smem", "capture", "--listen", "127.0.0.1:0", "-o", str(out),
                             "--timeout", "5"], cwd=TESTS.parent, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        line = proc.stderr.readline().decode()
        assert "listening on 127.0.0.1:" in line, line
        port = int(line.split("listening on 127.0.0.1:")[1].split()[0])
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(ours[:last.offset])
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = err.decode().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, err
    assert lines[0].startswith("smem: capture from 127.0.0.1:") and "capture archive is truncated" in lines[0], lines
    assert not out.exists()
