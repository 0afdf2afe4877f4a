"""A plain tar capture cut at a member's edge is truncated, not a smaller machine.

busybox without gzip makes smemcap.sh write a plain tar, pushed with ``| nc``; tar writes whole
records, so a sender killed half-way leaves a stream that stops between two members.  smem read
that as a whole capture, exit 0: the processes after the cut missing, or none at all (`0 0`
totals).  Every writer that puts a ``capture-info`` in (smemcap.sh, smem capture, a recording's
frames) ends its tar with zero blocks, so such an archive without them is cut.  C smemcap writes
neither, and its archives without an end still read.
"""

import gzip
import io
import tarfile

import pytest

from conftest import FIXTURES, run_smem


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
