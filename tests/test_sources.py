"""Sources: archives in every layout and compression, directories and stdin give one answer;
bad and hostile captures give one clear error line."""

import bz2
import gzip
import io
import lzma
import re
import os
import shutil
import signal
import subprocess
import sys
import tarfile

import pytest

from conftest import FIXTURES, TESTS, run_smem

VIEWS = [[], ["-m"], ["-u"], ["-w"], ["-c", "pid user name maps vss", "-n", "-t"]]


@pytest.fixture(scope="module")
def capture_tar(tmp_path_factory, pid_namespace):
    """A plain tar capture made once by `smem capture`, of live processes: in a PID namespace of
    the module's own, a few started there (one of them another user's), not the whole machine,
    whose size is whatever the other workers run (tests/pid_namespace.py)."""
    path = tmp_path_factory.mktemp("cap") / "live.tar"
    nobody = ([shutil.which("setpriv"), "--reuid", "65534", "--regid", "65534", "--clear-groups"]
              if shutil.which("setpriv") and os.geteuid() == 0 else [])
    started = [subprocess.Popen(pid_namespace.argv(argv), stdin=subprocess.DEVNULL)
               for argv in (["sleep", "300"], ["sh", "-c", "sleep 300; :"], [*nobody, "sleep", "300"])]
    try:
        commands = [pid_namespace.command_pid(popen) for popen in started]
        subprocess.run(pid_namespace.argv([sys.executable, "-m", "smem", "capture", "--compression", "none",
                                           "-o", path], cwd=TESTS.parent),
                       cwd=TESTS.parent, stdin=subprocess.DEVNULL, check=True, timeout=120)
        for pid in commands:
            os.kill(pid, signal.SIGKILL)
    finally:
        for popen in started:
            popen.kill()
            popen.wait()
    return path


def _rewrite(src, dst, rename=lambda n: n, extra=None):
    with tarfile.open(src) as tin, tarfile.open(dst, "w", format=tarfile.GNU_FORMAT) as tout:
        for m in tin:
            data = tin.extractfile(m).read() if m.isreg() else None
            m.name = rename(m.name)
            tout.addfile(m, io.BytesIO(data) if data is not None else None)
        for info, data in extra or ():
            tout.addfile(info, io.BytesIO(data) if data is not None else None)


def _outputs(source, **kw):
    out = []
    for args in VIEWS:
        proc = run_smem("-S", source, *args, **kw)
        assert proc.returncode == 0, proc.stderr
        out.append(proc.stdout)
    return out


def test_every_layout_and_compression_gives_the_same_report(capture_tar, tmp_path):
    expected = _outputs(capture_tar)
    assert b"PID" in expected[0] and expected[0].count(b"\n") > 3
    raw = capture_tar.read_bytes()
    variants = {
        "c.tgz": gzip.compress(raw),
        "c.tar.bz2": bz2.compress(raw),
        "c.tar.xz": lzma.compress(raw),
        "misnamed.zip": gzip.compress(raw),  # content decides, not the name
    }
    try:
        import zstandard
        variants["c.tar.zst"] = zstandard.ZstdCompressor().compress(raw)
    except ImportError:
        pass
    for name, data in variants.items():
        (tmp_path / name).write_bytes(data)
        assert _outputs(tmp_path / name) == expected, name
    _rewrite(capture_tar, tmp_path / "dot.tar", lambda n: "./" + n)
    _rewrite(capture_tar, tmp_path / "proc.tar", lambda n: "proc/" + n)
    assert _outputs(tmp_path / "dot.tar") == expected
    assert _outputs(tmp_path / "proc.tar") == expected
    # stdin
    assert [run_smem("-S", "-", *a, input=gzip.compress(raw)).stdout for a in VIEWS] == expected
    # an extracted directory, in smem 1.5's DIR/proc layout and as the bare proc files
    for layout in ("withproc/proc", "bare"):
        target = tmp_path / layout
        target.mkdir(parents=True)
        with tarfile.open(capture_tar) as t:
            t.extractall(target, filter="fully_trusted")
        assert _outputs(target.parent if layout.endswith("proc") else target) == expected, layout


@pytest.mark.uses("cpu")
def test_c_smemcap_archive_matches_smem15_on_the_same_data(tmp_path):
    if not (shutil.which("smemcap") and os.path.exists("/usr/bin/smem")):
        pytest.skip("smemcap and smem 1.5 are not installed")
    whole = tmp_path / "whole.tar"
    with open(whole, "wb") as f:
        subprocess.run(["smemcap"], stdout=f, check=True)
    # smem 1.5 prints some command lines and names otherwise (README-listed differences):
    # leave out those processes, such as a CI runner's `bash -c` script with a newline
    tar = tmp_path / "c.tar"
    _drop_processes_smem15_shows_otherwise(whole, tar)
    (tmp_path / "d" / "proc").mkdir(parents=True)
    subprocess.run(["tar", "xf", tar, "-C", tmp_path / "d" / "proc"], check=True)
    # (mapping names with spaces, such as "/memfd:x (deleted)", are cut by smem 1.5: compare /usr maps)
    for args in (["-c", "pid name command swap uss pss rss vss maps"], ["-m", "-t", "-M", "^/usr/"], ["-w"]):
        ours = run_smem("-S", tar, *args)
        theirs = subprocess.run(["/usr/bin/smem", "-S", tmp_path / "d", *args], capture_output=True,
                                stdin=subprocess.DEVNULL, env={"PATH": os.environ["PATH"]})
        assert ours.returncode == 0, ours.stderr
        assert ours.stdout.decode(errors="replace").splitlines() == (
            theirs.stdout.decode(errors="replace").splitlines()), args


def _drop_processes_smem15_shows_otherwise(source, target):
    """Copy a capture without the processes smem 1.5 prints otherwise (README-listed): names with
    control characters, bytes that are not UTF-8 (in a mapped path too: smem 1.5 drops or
    crashes on such a process), a command line without its final NUL or empty, a ")" in the name; and a pid over 99999 or an amount over 8 digits (a browser maps a
    TiB and more: such a column widens here, and is misaligned there)."""
    control = re.compile(rb"[\x01-\x1f\x7f]")

    def odd_text(data):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return True
        return bool(control.search(data))

    with tarfile.open(source) as t:
        members = [(m, t.extractfile(m).read() if m.isfile() else None) for m in t.getmembers()]
    odd = set()
    for m, data in members:
        pid, _, leaf = m.name.partition("/")
        if leaf == "cmdline" and (odd_text(data) or not data.endswith(b"\0")):
            odd.add(pid)
        if leaf == "smaps" and data and not data.isascii():
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                odd.add(pid)
        comm = data.partition(b"(")[2].rpartition(b")")[0] if leaf == "stat" and data else b""
        if odd_text(comm) or b")" in comm:
            odd.add(pid)
        if pid.isdigit() and (int(pid) > 99999 or leaf == "smaps" and data and _over_8_digits(data)):
            odd.add(pid)
    with tarfile.open(target, "w", format=tarfile.GNU_FORMAT) as out:
        for m, data in members:
            if m.name.partition("/")[0] not in odd:
                out.addfile(m, io.BytesIO(data) if data is not None else None)


def _over_8_digits(smaps):
    """Whether a process's total of Size, Rss, Pss or Swap over its mappings is over 8 digits."""
    totals = {}
    for line in smaps.splitlines():
        key, _, rest = line.partition(b":")
        if key in (b"Size", b"Rss", b"Pss", b"Swap") and rest.strip().endswith(b"kB"):
            totals[key] = totals.get(key, 0) + int(rest.split()[0])
    return any(total > 99_999_999 for total in totals.values())


def _one_error_line(proc):
    err = proc.stderr.decode()
    assert proc.returncode != 0
    assert err.count("\n") == 1 and err.startswith("smem: "), err
    assert "Traceback" not in err
    return err


def test_truncated_corrupt_and_missing(capture_tar, tmp_path):
    raw = capture_tar.read_bytes()
    cases = {
        "truncated.tgz": gzip.compress(raw)[: len(gzip.compress(raw)) // 2],
        "truncated.tar": raw[: len(raw) // 3],
        "garbage.tgz": b"\x1f\x8b" + os.urandom(4000),
        "random.bin": os.urandom(4000),
        "empty.tar": b"",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        err = _one_error_line(run_smem("-S", tmp_path / name))
        assert name in err or "capture" in err, err
    # a capture without meminfo
    with tarfile.open(capture_tar) as tin, tarfile.open(tmp_path / "nomem.tar", "w") as tout:
        for m in tin:
            if m.name != "meminfo":
                tout.addfile(m, tin.extractfile(m) if m.isreg() else None)
    assert "meminfo" in _one_error_line(run_smem("-S", tmp_path / "nomem.tar"))
    assert "No such file" in _one_error_line(run_smem("-S", tmp_path / "does-not-exist.tgz"))
    assert "meminfo" in _one_error_line(run_smem("-S", tmp_path))  # a directory that is no capture
    assert "standard input" in _one_error_line(run_smem("-S", "-", input=b""))
    # what is not a capture, or one cut off, on stdin: named as the empty one is, not "<stdin>"
    assert _one_error_line(run_smem("-S", "-", input=b"<html>not a capture</html>\n" * 40)).startswith(
        "smem: standard input: not a capture (it looks like an HTML page)")
    assert _one_error_line(run_smem("-S", "-", input=(FIXTURES / "captures" / "faithful.tar.gz").read_bytes()[:5000])
                           ).startswith("smem: standard input: gzip data is truncated")


def test_hostile_members_are_ignored_and_nothing_is_written(capture_tar, tmp_path):
    pid = next(m.name for m in tarfile.open(capture_tar) if m.isdir() and m.name.isdigit())
    evil = []

    def member(name, kind=tarfile.REGTYPE, data=b"", link=""):
        info = tarfile.TarInfo(name)
        info.type = kind
        info.linkname = link
        info.size = len(data) if kind == tarfile.REGTYPE else 0
        evil.append((info, data if kind == tarfile.REGTYPE else None))

    member("/tmp/smem-evil-abs", data=b"x")
    member("../smem-evil-up", data=b"x")
    member("99999/../../smem-evil-up2", data=b"x")
    member("777777/smaps", tarfile.SYMTYPE, link="/proc/self/smaps")
    member("777777/stat", data=b"777777 (evil) S 1 1 1 0 -1 0 0 0")
    member("777777/cmdline", data=b"evil\0")
    member("777778/smaps", tarfile.LNKTYPE, link=f"{pid}/smaps")
    member("777778/cmdline", data=b"evil2\0")
    member("777779/smaps", tarfile.FIFOTYPE)
    _rewrite(capture_tar, tmp_path / "evil.tar", extra=evil)
    # (of /tmp, only what the members name: the other worker's tests come and go there)
    before = set(os.listdir(tmp_path)), {n for n in os.listdir("/tmp") if "evil" in n}
    proc = run_smem("-S", tmp_path / "evil.tar", "-c", "pid command pss")
    assert proc.returncode == 0, proc.stderr
    assert b"evil" not in proc.stdout and b"777777" not in proc.stdout
    assert proc.stdout == run_smem("-S", capture_tar, "-c", "pid command pss").stdout
    assert (set(os.listdir(tmp_path)), {n for n in os.listdir("/tmp") if "evil" in n}) == before
    assert not os.path.exists("/tmp/smem-evil-abs") and not os.path.exists(tmp_path.parent / "smem-evil-up")


def test_huge_member_claim_is_a_clear_error(capture_tar, tmp_path):
    raw = bytearray(capture_tar.read_bytes())
    info = tarfile.TarInfo("123456/smaps")
    info.size = 1 << 40  # claims a terabyte, holds nothing
    header = info.tobuf(format=tarfile.GNU_FORMAT)
    end = len(raw) - 1024  # before the two zero blocks
    data = bytes(raw[:end]) + header + b"\0" * 4096
    (tmp_path / "huge.tar").write_bytes(data)
    err = _one_error_line(run_smem("-S", tmp_path / "huge.tar"))
    # read in one pass, the claim is refused at the member limit before the end is missed; read
    # whole (an archive whose processes' members are apart), the archive is found truncated
    assert "past the limit of 256 MiB per member" in err or "truncated" in err or "corrupt" in err, err


def test_missing_process_files_report_the_rest(capture_tar, tmp_path):
    pids = sorted({m.name.split("/")[0] for m in tarfile.open(capture_tar) if m.name.endswith("/smaps")
                   and m.size > 0})
    dropped = pids[: len(pids) // 2]
    with tarfile.open(capture_tar) as tin, tarfile.open(tmp_path / "part.tar", "w") as tout:
        for m in tin:
            if m.name.split("/")[0] in dropped and m.name.endswith(("/smaps", "/smaps_rollup", "/cmdline")):
                continue
            tout.addfile(m, tin.extractfile(m) if m.isreg() else None)
    whole = run_smem("-S", capture_tar, "-c", "pid pss", "-H").stdout.decode().splitlines()
    part = run_smem("-S", tmp_path / "part.tar", "-c", "pid pss", "-H")
    assert part.returncode == 0 and part.stderr == b""
    assert part.stdout.decode().splitlines() == [l for l in whole if l.split()[0] not in dropped]


def test_a_member_that_is_not_what_its_name_says(capture_tar, tmp_path):
    with tarfile.open(capture_tar) as tin, tarfile.open(tmp_path / "odd.tar", "w") as tout:
        for m in tin:
            data = tin.extractfile(m).read() if m.isreg() else None
            if m.name == "meminfo":
                data = os.urandom(2000)
                m.size = len(data)
            tout.addfile(m, io.BytesIO(data) if data is not None else None)
    assert "MemTotal" in _one_error_line(run_smem("-S", tmp_path / "odd.tar"))


def test_endless_or_device_inputs_are_refused_at_once():
    for args, kw in ((["-S", "/dev/zero"], {}), (["-S", "-"], {"input": b"\0" * (1 << 20)})):
        err = _one_error_line(run_smem(*args, **kw))
        assert "not a capture" in err, err


@pytest.mark.uses("cpu")
def test_capture_output_never_replaces_a_link_or_a_pipe(tmp_path):
    import stat
    import threading
    real = tmp_path / "real.tgz"
    link = tmp_path / "link.tgz"
    link.symlink_to(real)
    assert run_smem("capture", "-o", link).returncode == 0
    assert link.is_symlink() and real.stat().st_size > 0
    assert run_smem("-S", link, "-w").returncode == 0
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the reader is there before smem opens the FIFO

    def read_all():
        import select
        import time
        chunks = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not select.select([fd], [], [], 1)[0]:
                continue  # (the writer is silent while it reads /proc: seconds on a loaded machine)
            chunk = os.read(fd, 1 << 16)
            if chunk:
                chunks.append(chunk)
            elif chunks:
                break  # the writer came and went
            else:
                time.sleep(0.01)  # no writer yet: a FIFO without one reads as its end
        os.close(fd)
        got.append(b"".join(chunks))
    reader = threading.Thread(target=read_all)
    reader.start()
    assert run_smem("capture", "-o", fifo).returncode == 0
    reader.join(60)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and got[0][:2] == b"\x1f\x8b"
    assert sorted(os.listdir(tmp_path)) == ["fifo", "link.tgz", "real.tgz"]  # no temporary left
