"""The fast tar index (smem/sources/tar_index.py) gives what tarfile gives, or hands over.

Every tar we can make or have is indexed both ways: member by member the same (name,
type, uid, uname, data offset, size) and the same end of the headers, and a capture
read with and without the fast path answers the same; what the fast index leaves to
tarfile (pax and GNU extensions, odd numbers and checksums, damage) gives the same
capture or the same error as before.
"""

import gzip
import io
import os
import random
import shutil
import signal
import subprocess
import sys
import tarfile
import time

import pytest

# Its module fixtures are costly: one worker builds them and runs every test here.
pytestmark = pytest.mark.xdist_group("tar_index")

from conftest import FIXTURES, TESTS
from smem.errors import CaptureError
from smem.sources import archive as capture
from smem.sources.archive import ArchiveSource
from smem.sources.tar_index import NeedTarfile
from tar_whole_index import index_tar

SCRIPT = TESTS.parent / "scripts" / "smemcap.sh"
MEMINFO = b"MemTotal:        1024000 kB\nMemFree:          512000 kB\n"
# The applets scripts/smemcap.sh uses, for a run with busybox alone (its own tar writes).
BUSYBOX_APPLETS = ("sh", "cat", "tar", "gzip", "mkdir", "rm", "chown", "date", "uname",
                   "mktemp", "stat", "hostname")


def _by_tarfile(raw):
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        members = [(m.name, m.type, m.uid, m.uname, m.offset_data, m.size) for m in tar]
        return members, tar.offset


def _by_index(raw):
    members, end = index_tar(raw)
    return [tuple(m) for m in members], end


def _answers(raw):
    """All a capture tells, or the error it gives (its class and message)."""
    try:
        src = ArchiveSource(raw, "t.tar")
    except Exception as e:
        return type(e), str(e)
    pids = src.pids()
    uids = set(src._dirs.values()) | {src.owner(pid) for pid in pids} | {0, 1000, 65534}
    return (pids, {path: src.read(path) for path in sorted(src._files)},
            {pid: src.owner(pid) for pid in pids},
            {uid: src.user_name(uid) for uid in uids if uid is not None})


def _both_ways(raw, monkeypatch):
    """The capture's answers with the fast index and with tarfile alone."""
    refused = []

    def refuse(header):
        refused.append(header)
        raise NeedTarfile

    fast = _answers(raw)
    with monkeypatch.context() as m:
        m.setattr(capture, "read_header", refuse)
        slow = _answers(raw)
    assert refused or not raw, "the fast index was not asked"  # (empty: tarfile words the error)
    return fast, slow


def _same_as_tarfile(raw, monkeypatch):
    assert _by_index(raw) == _by_tarfile(raw)
    fast, slow = _both_ways(raw, monkeypatch)
    assert fast == slow
    return fast


def _left_to_tarfile(raw, monkeypatch):
    with pytest.raises(NeedTarfile):
        index_tar(raw)
    fast, slow = _both_ways(raw, monkeypatch)
    assert fast == slow
    return fast


# -- captures as the tools write them -----------------------------------------------------

#: In the PID namespace, beside its init: a process and a zombie it never reaps, whose cmdline and
#: smaps are empty (as a kernel thread's are on the machine): members of no data
ZOMBIE_PARENT = ["sh", "-c", "true & exec sleep 600"]


@pytest.fixture(scope="module")
def captures(tmp_path_factory, pid_namespace):
    """name -> uncompressed tar, made once: the fixtures, and by every tool the module's PID
    namespace, a process and its zombie there.  (Not the machine: each test reads each capture
    twice, with and without the fast index, so a capture of a machine of 10,000 processes made
    this file take minutes of CPU.)"""
    tmp = tmp_path_factory.mktemp("captures")
    tars = {p.name: gzip.decompress(p.read_bytes()) for p in sorted((FIXTURES / "captures").glob("*.tar.gz"))}
    parent, inside = subprocess.Popen(pid_namespace.argv(ZOMBIE_PARENT)), None
    try:
        inside = pid_namespace.command_pid(parent)
        _wait_for_a_zombie(inside)
        subprocess.run(pid_namespace.argv([sys.executable, "-m", "smem", "capture", "--compression", "none", "-o",
                                           tmp / "smem.tar"], cwd=TESTS.parent),
                       env=dict(os.environ, PYTHONPATH=str(TESTS.parent)), stdin=subprocess.DEVNULL, check=True)
        tars["smem capture"] = (tmp / "smem.tar").read_bytes()
        subprocess.run(pid_namespace.argv(["sh", SCRIPT, tmp / "sh.tgz"]), check=True, stderr=subprocess.DEVNULL)
        tars["smemcap.sh"] = gzip.decompress((tmp / "sh.tgz").read_bytes())
        busybox = shutil.which("busybox")
        if busybox:  # its own tar writes the headers
            (tmp / "bin").mkdir()
            for applet in BUSYBOX_APPLETS:
                (tmp / "bin" / applet).symlink_to(busybox)
            subprocess.run(pid_namespace.argv([busybox, "sh", SCRIPT, tmp / "bb.tgz"]), check=True,
                           stderr=subprocess.DEVNULL, env={"PATH": str(tmp / "bin"), "TMPDIR": str(tmp)})
            tars["smemcap.sh, busybox"] = gzip.decompress((tmp / "bb.tgz").read_bytes())
        if shutil.which("smemcap"):
            tars["C smemcap"] = subprocess.run(pid_namespace.argv(["smemcap"]), capture_output=True, check=True).stdout
    finally:
        if inside is not None and inside != parent.pid:
            os.kill(inside, signal.SIGKILL)  # (nsenter waits for it)
        parent.kill()
        parent.wait()
    return tars


def _wait_for_a_zombie(pid):
    """Until the child of ``pid`` (this machine's pid) has exited, unreaped."""
    for _ in range(1000):
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = f.read().split()
        for child in children:
            with open(f"/proc/{child}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    return
        time.sleep(0.005)
    raise AssertionError(f"{ZOMBIE_PARENT}: no zombie")


@pytest.mark.parametrize("name", ["faithful.tar.gz", "quirks.tar.gz", "smem capture", "smemcap.sh",
                                  "smemcap.sh, busybox", "C smemcap"])
def test_every_capture_is_indexed_as_tarfile_does(captures, name, monkeypatch):
    if name not in captures:
        pytest.skip(f"{name}: the tool is not installed")
    raw = captures[name]
    pids, files, _, _ = _same_as_tarfile(raw, monkeypatch)
    assert "meminfo" in files and len(pids) > 1
    # members of no data among them (a kernel thread's or a zombie's smaps and cmdline)
    assert any(size == 0 and kind == tarfile.REGTYPE for _, kind, _, _, _, size in _by_index(raw)[0])


def test_damaged_captures_give_the_same_error(captures, monkeypatch):
    raw = captures["smem capture"]
    members, end = _by_index(raw)
    header = members[len(members) // 2][4] - 512  # a header in the middle
    data = max(m[4] for m in members if m[5] > 600)  # (the last) data longer than a block
    cases = {
        "empty": b"",
        "zeros": bytes(2048),
        "header cut": raw[:header + 100],
        "data cut": raw[:data + 300],
        # (a third of the way, inside a member's data: a cut that falls between two members
        # is an archive without an end marker, which is no error)
        "a third": raw[:next(m[4] for m in members if m[4] > len(raw) // 3 and m[5] > 600) + 100],
        "garbage after the end": raw + b"garbage",
        "garbage after the last member": raw[:end] + b"garbage" + bytes(2048),
        "garbage header": raw[:header] + random.Random(8).randbytes(512) + raw[header + 512:],
        "checksum of the first header": _patch(raw, 148, b"1"),
        "checksum in the middle": _patch(raw, header + 148, b"1"),
        "size in the middle": _patch(raw, header + 124, b"8"),
        "random": random.Random(7).randbytes(4000),
        "text": b"MemTotal: 1 kB\n" * 100,
    }
    for case, damaged in cases.items():
        fast, slow = _both_ways(damaged, monkeypatch)
        assert fast == slow, case
        assert fast[0] is CaptureError, (case, fast[0])
    # cut at a header: smem capture's archive holds its capture-info from its first member on, so
    # the cut is said (tests/test_capture_cut_between_members.py), by either reader alike
    fast, slow = _both_ways(raw[:header], monkeypatch)
    assert fast == slow and fast[0] is CaptureError and "truncated" in str(fast[1]), fast


def test_a_capture_without_capture_info_cut_at_a_header_reads(captures, monkeypatch):
    """C smemcap writes no end marker and no capture-info: an archive that stops after a whole
    member is read as it is, by either reader alike."""
    if "C smemcap" not in captures:
        pytest.skip("C smemcap: the tool is not installed")
    raw = captures["C smemcap"]
    members, _ = _by_index(raw)
    header = members[len(members) // 2][4] - 512
    fast, slow = _both_ways(raw[:header], monkeypatch)
    assert fast == slow and isinstance(fast[0], list)


def _patch(raw, offset, value):
    return raw[:offset] + value + raw[offset + len(value):]


def test_huge_member_claims_and_members_running_past_the_end(monkeypatch):
    # a member claiming 8 GiB is refused before anything is inflated, kept or not
    for name in (b"123456/smaps", b"/abs/smaps"):
        raw = _crafted(_header(name=name, size=8 ** 11 - 1))
        assert _left_to_tarfile(raw, monkeypatch) == (
            CaptureError, f"t.tar: member 2 ({name.decode()}) inflates past the limit of 256 MiB per member "
                          f"(8589934591 bytes)")
    # a member running past the end of the data
    raw = _crafted(_header(name=b"123456/smaps", size=8 ** 7))
    assert _left_to_tarfile(raw, monkeypatch)[0] is CaptureError


# -- what tarfile writes ------------------------------------------------------------------

def _add(tar, name, data=None, kind=tarfile.REGTYPE, uid=0, uname="", link=""):
    info = tarfile.TarInfo(name)
    info.type, info.uid, info.uname, info.linkname = kind, uid, uname, link
    info.mode = 0o555 if kind == tarfile.DIRTYPE else 0o444
    info.size = len(data) if data is not None else 0
    tar.addfile(info, io.BytesIO(data) if data is not None else None)


PREFIXED = "sys/firmware/memmap/" + "0" * 90 + "/start"  # 116 characters: a ustar prefix


def _tar(fmt, extra=(), **kw):
    """A small capture in format fmt with every kind of member, then the extra ones."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt, **kw) as tar:
        _add(tar, "meminfo", MEMINFO)
        _add(tar, "version", b"Linux version 6.1.0 (x@y) #1 SMP\n")
        _add(tar, "passwd", b"root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n")
        _add(tar, "42", kind=tarfile.DIRTYPE, uid=1000, uname="alice")
        _add(tar, "42/smaps", b"00400000-00401000 r-xp 00000000 08:01 1 /bin/cat\nRss: 4 kB\n" * 20)
        _add(tar, "42/cmdline", b"cat\0-\0")
        _add(tar, "42/cgroup", b"")
        _add(tar, "./43/", kind=tarfile.DIRTYPE, uid=7, uname="lp")
        _add(tar, "./43/stat", b"43 (x) S 1 1 1 0 -1 0\n")
        _add(tar, "proc/44", kind=tarfile.DIRTYPE, uid=65534)
        _add(tar, "proc/44/status", b"Name:\tx\nUid:\t5\t5\t5\t5\n")
        _add(tar, "45/status", b"Name:\ty\nUid:\t6\t6\t6\t6\n")
        _add(tar, "42/exe", kind=tarfile.SYMTYPE, link="/bin/cat")
        _add(tar, "42/maps", kind=tarfile.LNKTYPE, link="42/smaps")
        _add(tar, "46/smaps", kind=tarfile.FIFOTYPE)
        _add(tar, "47/smaps", kind=tarfile.CHRTYPE)
        _add(tar, "../48/smaps", b"x")
        if fmt == tarfile.USTAR_FORMAT:  # others write a long name or pax header for these
            _add(tar, PREFIXED, b"0x0\n")
            _add(tar, "caf\udcff/x", b"a name that is not UTF-8")
        for name, data, kind, uid, uname in extra:
            _add(tar, name, data, kind, uid, uname)
    return out.getvalue()


@pytest.mark.parametrize("fmt", [tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_tarfile_archives_are_indexed_as_tarfile_does(fmt, monkeypatch):
    pids, files, owners, names = _same_as_tarfile(_tar(fmt), monkeypatch)
    assert pids == [42, 43, 44, 45]
    assert owners == {42: 1000, 43: 7, 44: 65534, 45: 6}
    assert names[1000] == "alice" and names[7] == "lp" and names[0] == "root"
    assert files["42/smaps"].startswith(b"00400000") and files["42/cgroup"] == b""
    assert (PREFIXED in files) == (fmt == tarfile.USTAR_FORMAT)
    assert "42/exe" not in files and "42/maps" not in files and "48/smaps" not in files


LONG = "sys/firmware/memmap/" + "0" * 100 + "/end"


@pytest.mark.parametrize("fmt, extra, kw", [
    (tarfile.GNU_FORMAT, [(LONG, b"0x1\n", tarfile.REGTYPE, 0, "")], {}),  # a GNU long name
    (tarfile.GNU_FORMAT, [("49", None, tarfile.DIRTYPE, 8 ** 8, "big")], {}),  # a base-256 uid
    (tarfile.PAX_FORMAT, [(LONG, b"0x1\n", tarfile.REGTYPE, 0, "")], {}),
    (tarfile.PAX_FORMAT, [("49", None, tarfile.DIRTYPE, 1001, "zoë")], {}),  # non-ASCII: a pax header
    (tarfile.PAX_FORMAT, [], {"pax_headers": {"comment": "a global header"}}),
], ids=["gnu-longname", "gnu-base256", "pax-longname", "pax-uname", "pax-global"])
def test_extensions_are_left_to_tarfile(fmt, extra, kw, monkeypatch):
    pids, files, owners, names = _left_to_tarfile(_tar(fmt, extra, **kw), monkeypatch)
    assert pids[:4] == [42, 43, 44, 45]
    if extra and extra[0][0] == LONG:
        assert files[LONG] == b"0x1\n"
    if extra and extra[0][0] == "49":
        assert owners[49] == extra[0][3] and names[extra[0][3]] == extra[0][4]


# -- headers as other tars write them -----------------------------------------------------

def _header(name, kind=b"0", size=0, uid=0, uname=b"", prefix=b"", magic=b"ustar\x0000",
            fields=(), chksum=b"%06o\0 ", signed=False):
    """A header made by hand: fields are (offset, bytes) written over the usual ones."""
    h = bytearray(512)
    for offset, value in ((0, name), (100, b"0000444\0"), (108, b"%07o\0" % uid), (116, b"0000000\0"),
                          (124, b"%011o\0" % size), (136, b"14000000000\0"), (156, kind),
                          (257, magic), (265, uname), (345, prefix), *fields):
        h[offset:offset + len(value)] = value
    h[148:156] = b" " * 8
    total = sum(b - 256 if signed and b > 127 else b for b in h)
    h[148:156] = (chksum % total).ljust(8, b"\0")
    return bytes(h)


def _member(data=b"", **kw):
    return _header(size=len(data), **kw) + data + bytes(-len(data) % 512)


def _crafted(*members):
    return _member(MEMINFO, name=b"meminfo") + b"".join(members) + bytes(1024)


CRAFTED = {
    # v7: no magic; a directory is a regular file named with a slash
    "v7": [_member(name=b"42/", kind=b"\0", uid=7, magic=bytes(8), uname=b"lp"),
           _member(b"42 (x) S\n", name=b"42/stat", kind=b"\0", magic=bytes(8))],
    # numbers padded with spaces, or filling their field (C smemcap), other checksum layouts
    "numbers": [_member(name=b"42", kind=b"5", fields=[(100, b"   555 \0"), (108, b"00000007"),
                                                       (116, b"     7  "), (136, bytes(12))]),
                _member(b"abc", name=b"42/cmdline", chksum=b"%07o\0", fields=[(329, b"0000000 "),
                                                                             (337, b"      ")]),
                _member(b"abc", name=b"42/stat", chksum=b" %06o "),
                _member(b"x" * 513, name=b"42/smaps", chksum=b"%o")],
    "prefix": [_member(name=b"45/", kind=b"5", uid=3, prefix=b"proc"),
               _member(b"1\n", name=b"cmdline", prefix=b"proc/45"),
               _member(name=b"/", kind=b"5", uid=4, prefix=b"46//")],
    # a hard link's size field is no data; a device's numbers; a name that is not UTF-8
    "links": [_header(name=b"42/maps", kind=b"1", size=700, fields=[(157, b"meminfo")]),
              _member(name=b"42/dev", kind=b"3", fields=[(329, b"0000001\0"), (337, b"0000003\0")]),
              _member(b"x", name=b"42/caf\xff", uname=b"\xe9t\xe9")],
}


@pytest.mark.parametrize("case", CRAFTED)
def test_other_tars_headers_are_indexed_as_tarfile_does(case, monkeypatch):
    _same_as_tarfile(_crafted(*CRAFTED[case]), monkeypatch)


BASE256 = b"\x80" + bytes(10) + b"\x03"
LEFT_TO_TARFILE = {
    "signed checksum": _member(b"x", name=b"42/caf\xe9", signed=True),
    "tab in a number": _member(name=b"42", kind=b"5", fields=[(108, b"\t7\0")]),
    "sign in a number": _member(name=b"42", kind=b"5", fields=[(108, b"+7\0")]),
    "base-256 size": _header(name=b"42/smaps", fields=[(124, BASE256)]) + b"abc".ljust(512, b"\0"),
    "not octal": _member(name=b"42", kind=b"5", fields=[(108, b"0000008\0")]),
    "unknown type": _member(b"data", name=b"42/smaps", kind=b"Z"),
    "GNU sparse": _member(b"data", name=b"42/smaps", kind=b"S"),
    "pax header": _member(b"10 path=x\n", name=b"PaxHeader", kind=b"x") + _member(b"abc", name=b"42/smaps"),
    "bad checksum": _patch(_member(b"abc", name=b"42/smaps"), 148, b"0000001\0"),
}


@pytest.mark.parametrize("case", LEFT_TO_TARFILE)
def test_what_tarfile_must_read(case, monkeypatch):
    _left_to_tarfile(_crafted(LEFT_TO_TARFILE[case]), monkeypatch)


@pytest.mark.uses("cpu")
def test_reading_a_capture_imports_no_tarfile():
    code = ("import sys; from smem.sources.archive import ArchiveSource; "
            f"ArchiveSource(open({str(FIXTURES / 'captures' / 'quirks.tar.gz')!r}, 'rb').read(), 'q'); "
            "assert 'tarfile' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=TESTS.parent)
