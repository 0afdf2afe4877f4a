"""scripts/smemcap.sh: where it writes a capture and how it fails: a FILE argument (private,
never replacing what is not a capture unless forced), unwritable output, usage, no /proc, a
signal at any moment (no temporary file left), processes vanishing while it copies, and no
bashisms.  Apart from the capture's contents (test_smemcap_sh.py): these run the script once
each, not against the one capture a shell makes there.
"""

import gzip
import os
import select
import shutil
import signal
import subprocess
import tarfile
import time

import pytest

from conftest import FIXTURES, run_smem
from smemcap_shells import BUSYBOX, DASH, MINIMAL_APPLETS, NOBODY, SCRIPT, SHELLS, run_script, script_env
from smemcap_shells import shell, target  # noqa: F401 (fixtures)


@pytest.mark.parametrize("shell", [SHELLS[0], SHELLS[2]], indirect=True)  # as for vanishing processes
def test_writes_to_a_file_argument(shell, target, pid_namespace, tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "cap.tgz"
    res = run_script(shell, tmpdir, str(out), namespace=pid_namespace, preexec_fn=lambda: os.umask(0o022))
    assert res.returncode == 0, res.stderr
    assert (res.stdout, res.stderr) == (b"", b"")
    assert out.stat().st_mode & 0o777 == 0o600  # private whatever the umask, as smem capture -o's
    assert list(tmpdir.iterdir()) == []
    with tarfile.open(out, mode="r:gz") as t:
        assert t.getmember(str(target.pid)).isdir()
        assert t.extractfile("%d/cmdline" % target.pid).read().split(b"\0")[0] == target.argv[0].encode()


def test_refuses_to_replace_a_file_that_is_not_a_capture(shell, tmp_path):
    """A user's document named as FILE by mistake is kept, as smem capture -o keeps it."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    doc = tmp_path / "notes.txt"
    doc.write_bytes(b"a user's notes\n")
    res = run_script(shell, tmpdir, str(doc))
    assert res.returncode == 1 and res.stdout == b""
    assert res.stderr.decode().splitlines() == [
        f"smemcap.sh: refusing to replace {doc}: it exists and does not hold a capture; give -f to replace it"]
    assert doc.read_bytes() == b"a user's notes\n"
    assert list(tmpdir.iterdir()) == []


@pytest.mark.parametrize("content", [bytes(64 << 10), b"\x1f" + bytes(511)], ids=["zeros", "one magic byte"])
def test_a_file_of_zeros_is_no_capture_and_is_kept(shell, tmp_path, content):
    """To tar, a file of zeros (a disk image, a swap file) is an empty archive: it is kept."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    doc = tmp_path / "disk.img"
    doc.write_bytes(content)
    res = run_script(shell, tmpdir, str(doc), timeout=60)
    assert res.returncode == 1 and res.stdout == b""
    assert res.stderr.decode().splitlines() == [
        f"smemcap.sh: refusing to replace {doc}: it exists and does not hold a capture; give -f to replace it"]
    assert doc.read_bytes() == content


#: A bound on a hang, not a speed: dd reads 6 bytes at once, a shell reading the line of 64 MiB
#: reads it a byte at a time, for a minute or more
LINE_SECONDS = 20


def test_a_file_of_one_long_line_is_refused_without_reading_it_whole(shell, tmp_path):
    """What FILE holds is told from its first bytes: a file of 64 MiB with no newline is not read
    into the shell (where dd is there to read 6)."""
    if not any(os.access(os.path.join(d, "dd"), os.X_OK) for d in shell[1].split(os.pathsep)):
        pytest.skip("no dd on this PATH: the script reads the first line")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    doc = tmp_path / "one-line.txt"
    doc.write_bytes(b"x" * (64 << 20))
    proc = subprocess.Popen(shell[0] + [str(SCRIPT), str(doc)], env=script_env(shell[1], tmpdir),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=LINE_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still reading FILE after {LINE_SECONDS} s: the line is read, not its first bytes")
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 1 and out == b""
    assert err.decode().splitlines() == [
        f"smemcap.sh: refusing to replace {doc}: it exists and does not hold a capture; give -f to replace it"]
    assert doc.stat().st_size == 64 << 20


@pytest.mark.parametrize("existing", ["gzip capture", "zstd capture", "empty", "document with -f"])
def test_rewrites_a_capture_an_empty_file_or_any_file_when_forced(shell, pid_namespace, tmp_path, existing):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "cap.tgz"
    out.write_bytes({"gzip capture": gzip.compress(b"old capture"), "zstd capture": b"\x28\xb5\x2f\xfd old",
                     "empty": b"", "document with -f": b"a user's notes\n"}[existing])
    args = ["-f", str(out)] if existing.endswith("-f") else [str(out)]
    res = run_script(shell, tmpdir, *args, namespace=pid_namespace)
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    with tarfile.open(out, mode="r:gz") as t:
        assert "meminfo" in t.getnames()
    assert list(tmpdir.iterdir()) == []


@pytest.mark.parametrize("shell", [SHELLS[0], SHELLS[2]], indirect=True)  # as for vanishing processes
def test_signal_leaves_the_capture_it_would_replace_whole(shell, pid_namespace, tmp_path):
    """Killed before it is done, the script leaves FILE as it found it: last night's capture is
    not lost to an empty file because this morning's run was stopped."""
    prefix, path = shell
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "cap.tgz"
    old = gzip.compress(b"an older capture")
    out.write_bytes(old)
    proc = subprocess.Popen(pid_namespace.argv(prefix + [str(SCRIPT), str(out)]), env=script_env(path, tmpdir),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        script = pid_namespace.command_pid(proc)  # nsenter passes no signal on: the script gets it
        while not any(tmpdir.glob("*/c/*")):
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.001)
        os.kill(script, signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, stdout, stderr) == (-signal.SIGTERM, b"", b"")
    assert out.read_bytes() == old
    assert list(tmpdir.iterdir()) == []


@pytest.mark.parametrize("where", ["missing-dir", "a-directory"])
def test_unwritable_output_fails_with_one_line(shell, tmp_path, where):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "nonexistent" / "cap.tgz" if where == "missing-dir" else tmp_path
    res = run_script(shell, tmpdir, str(out))
    assert res.returncode != 0
    lines = res.stderr.decode().splitlines()
    assert len(lines) == 1 and str(out) in lines[0]
    assert res.stdout == b""
    assert list(tmpdir.iterdir()) == []
    assert not (tmp_path / "nonexistent").exists()


@pytest.mark.uses("shells")
@pytest.mark.skipif(DASH is None or BUSYBOX is None, reason="no dash or busybox")
@pytest.mark.parametrize("missing", ["cat", "mkdir", "rm", "tar", "chown"])
def test_a_missing_applet_is_named_in_one_line(missing, tmp_path):
    """A small busybox built without one of the applets the script needs: one line naming it,
    before any work, rather than a line per process, a misleading cause or a quiet success."""
    if missing == "chown" and os.geteuid() != 0:
        pytest.skip("chown is only needed as root")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in MINIMAL_APPLETS:
        if name != missing:
            (bindir / name).symlink_to(BUSYBOX)
    out = tmp_path / "cap.tgz"
    res = subprocess.run([DASH, str(SCRIPT), str(out)], env=script_env(str(bindir), tmpdir), capture_output=True)
    assert (res.returncode, res.stdout) == (1, b"")
    assert res.stderr.decode().splitlines() == [
        f"smemcap.sh: {missing} not found on PATH (the script needs cat, mkdir, rm and tar, "
        "and chown as root)"]
    assert list(tmpdir.iterdir()) == []
    assert not out.exists()


@pytest.mark.skipif(DASH is None or shutil.which("setpriv") is None, reason="no dash or setpriv")
def test_processes_it_cannot_read_are_named_as_smem_capture_names_them(pid_namespace):
    """Run as another user (a board's login), the processes whose smaps it may not read are left
    out and named in one warning, as smem capture names them, not dropped without a word."""
    import re
    import tempfile
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user")
    with tempfile.TemporaryDirectory() as tmpdir:
        os.chmod(tmpdir, 0o777)  # the script's TMPDIR, for nobody
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", DASH, str(SCRIPT)]
        res = subprocess.run(pid_namespace.argv(argv, cwd="/"), env=script_env(os.environ["PATH"], tmpdir),
                             capture_output=True, timeout=300)
        assert os.listdir(tmpdir) == []
    assert res.returncode == 0, res.stderr
    # the namespace's init, root's, is the first /proc lists
    first = r"pid 1 \([^)]+\)" if pid_namespace.isolated else r"pid \d+ \([^)]*\)"
    (warning,) = res.stderr.decode().splitlines()
    assert re.fullmatch(r"smemcap.sh: warning: (1 process could not be read and was|\d+ processes could not be read "
                        rf"and were) left out: {first}(, pid \d+ \([^)]*\))*( and \d+ more)?; run as root to capture "
                        "them", warning), warning
    with tarfile.open(fileobj=__import__("io").BytesIO(res.stdout)) as tar:
        held = tar.getnames()
    assert "meminfo" in held
    for pid in re.findall(r"pid (\d+)", warning):
        assert f"{pid}/smaps" not in held


def test_an_unwritable_tmpdir_says_to_set_tmpdir(shell, tmp_path):
    """A board's /tmp may be read-only: the one line says what to do about it."""
    out = tmp_path / "cap.tgz"
    res = run_script(shell, tmp_path / "missing", str(out))
    assert (res.returncode, res.stdout) == (1, b"")
    assert res.stderr.decode().splitlines() == [
        f"smemcap.sh: cannot create a temporary directory under {tmp_path / 'missing'} "
        "(set TMPDIR to a writable directory)"]
    assert not out.exists()


@pytest.mark.parametrize("as_file", [False, True], ids=["stdout", "FILE"])
def test_refuses_to_write_to_a_terminal(shell, tmp_path, as_file):
    """Compressed bytes on a terminal garble it: refused before any work, as stdout or as FILE."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    master, slave = os.openpty()
    try:
        prefix, path = shell
        argv = prefix + [str(SCRIPT)] + ([os.ttyname(slave)] if as_file else [])
        res = subprocess.run(argv, env=script_env(path, tmpdir), stdout=subprocess.DEVNULL if as_file else slave,
                             stderr=subprocess.PIPE, timeout=60)  # not refused, it blocks on the full terminal
    finally:
        os.close(slave)
        os.close(master)
    assert res.returncode == 1
    assert res.stderr.decode().splitlines() == [
        "smemcap.sh: refusing to write a capture to a terminal (give FILE or redirect stdout)"]
    assert list(tmpdir.iterdir()) == []


def test_help_and_bad_usage(shell, tmp_path):
    res = run_script(shell, tmp_path, "-h")
    assert res.returncode == 0 and res.stdout.startswith(b"usage: smemcap.sh")
    res = run_script(shell, tmp_path, "--bogus")
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_fails_without_proc(shell, tmp_path):
    """Over an empty /proc (private mount namespace), a clear error."""
    prefix, path = shell
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True) if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        pytest.skip("cannot create a mount namespace")
    cmd = 'mount -t tmpfs none /proc && exec "$@"'
    res = subprocess.run(["unshare", "-m", "sh", "-c", cmd, "sh", *prefix, str(SCRIPT)],
                         env=script_env(path + ":" + os.environ["PATH"], tmp_path), capture_output=True)
    assert res.returncode != 0
    assert res.stderr.decode().splitlines() == [
        "smemcap.sh: /proc is not mounted (cannot read /proc/meminfo)"]
    assert res.stdout == b""
    assert list(tmp_path.iterdir()) == []


def test_a_kernel_without_smaps_is_captured_without_memory_and_said(shell, tmp_path):
    """A board's kernel built without CONFIG_PROC_PAGE_MONITOR (or without an MMU) has no
    /proc/PID/smaps: every process was passed over and the script said "no process could be read
    (is /proc mounted?)", then refused such a kernel outright; a capture of it still sizes the
    system (-w).  Its processes are captured without their memory, as smem capture's are, and
    said so once.  A tmpfs over /proc (private mount namespace) holding tests/fixtures/nosmaps
    (a kernel of that kind's processes: cmdline, stat, status, no smaps) stands in."""
    prefix, path = shell
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True) if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        pytest.skip("cannot create a mount namespace")
    board = FIXTURES / "nosmaps"
    cmd = ('cp /proc/version "$0"/version && mount -t tmpfs none /proc && cp "$0"/version /proc && rm "$0"/version '
           f'&& cp -r {board}/[0-9]* {board}/meminfo /proc && cp -r /proc/1 /proc/$$ && ln -s $$ /proc/self '
           '&& exec "$@" "$0"/board.tgz')  # (the script's own process: init's files)
    res = subprocess.run(["unshare", "-m", "sh", "-c", cmd, str(tmp_path), *prefix, str(SCRIPT)],
                         env=script_env(path + ":" + os.environ["PATH"], tmp_path), capture_output=True)
    assert res.returncode == 0, res.stderr
    assert res.stderr.decode().splitlines() == [
        "smemcap.sh: warning: the kernel gives no /proc/PID/smaps (built without CONFIG_PROC_PAGE_MONITOR, or "
        "without an MMU): no process's memory can be measured, and the processes are captured without it; smem -w "
        "reads the system's"]
    with tarfile.open(tmp_path / "board.tgz") as tar:
        names = set(tar.getnames())
    assert {"1/cmdline", "1/stat", "1/status", "1915/stat", "3247/cmdline", "meminfo"} <= names
    assert not any(n.endswith(("smaps", "smaps_rollup")) for n in names)
    said = run_smem("-S", tmp_path / "board.tgz")
    assert said.returncode == 0 and "the kernel gives no /proc/PID/smaps" in said.stderr.decode(), said.stderr
    assert run_smem("-S", tmp_path / "board.tgz", "-w", check=True).stdout  # (the system's, as for any capture)


def _drain_to_eof(fd):
    """Reads fd until every writer (the script, tar's gzip) has gone."""
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        assert ready, "a writer of the capture pipe is still alive"
        if not os.read(fd, 65536):
            return


# The script's traps are the same for every signal; a signal while writing (after a whole
# copy of /proc, a second each) is sent once per shell, each signal to some shell.
WRITING_SIGNAL = {"dash": signal.SIGTERM, "busybox": signal.SIGHUP,
                  "busybox-only": signal.SIGINT, "minimal": signal.SIGHUP}


@pytest.mark.parametrize("phase,sig", [
    ("copying", signal.SIGINT), ("copying", signal.SIGTERM), ("writing", None),
], ids=lambda v: getattr(v, "name", v))
def test_signal_removes_temporary_files(shell, target, pid_namespace, tmp_path, phase, sig, request):
    """Killed while copying /proc or while blocked on a slow sink, nothing is left behind."""
    prefix, path = shell
    sig = sig or WRITING_SIGNAL[request.node.callspec.params["shell"]]
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    rfd, wfd = os.pipe()
    proc = None
    try:
        # A one-page pipe nobody reads: the capture cannot complete.
        fcntl = pytest.importorskip("fcntl")
        fcntl.fcntl(wfd, fcntl.F_SETPIPE_SZ, os.sysconf("SC_PAGE_SIZE"))
        proc = subprocess.Popen(pid_namespace.argv(prefix + [str(SCRIPT)]), env=script_env(path, tmpdir),
                                stdout=wfd, stderr=subprocess.PIPE)
        os.close(wfd)
        wfd = None
        script = pid_namespace.command_pid(proc)  # nsenter passes no signal on: the script gets it
        if phase == "writing":
            # the copy of /proc comes first: a second on a quiet machine, minutes with thousands
            # of processes and the machine busy, so wait for as long as the script is alive
            deadline = time.monotonic() + 900
            while not select.select([rfd], [], [], 1)[0]:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "no output"
        else:
            while not any(tmpdir.glob("*/c/*")):
                assert proc.poll() is None, proc.stderr.read()
                time.sleep(0.001)
        os.kill(script, sig)
        # Nothing reads the sink yet: the script must stop its tar|gzip itself.
        proc.wait(60)
        _drain_to_eof(rfd)
        assert proc.returncode == -sig  # re-raised, so callers see the signal
        assert proc.stderr.read() == b""
        proc.stderr.close()
    finally:
        os.close(rfd)
        if wfd is not None:
            os.close(wfd)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
    assert list(tmpdir.iterdir()) == []


# dash with the system's cat, and busybox sh with nothing but busybox applets (its cat): the
# two shells and the two cats whose errors the copy loop meets when a process exits under it
@pytest.mark.parametrize("shell", [SHELLS[0], SHELLS[2]], indirect=True)
def test_vanishing_processes_are_tolerated(shell, pid_namespace, tmp_path):
    """Processes that exit while being copied are skipped, never fatal."""
    prefix, path = shell
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "cap.tgz"
    # in the namespace the script copies, for as long as it runs, processes that live a tenth of a
    # second, a new one every hundredth: the copy finds some gone, and some going as it copies them
    loop = 'echo started; while :; do "$0" 0.1 & "$0" 0.01; done'
    churn = subprocess.Popen(pid_namespace.argv(["sh", "-c", loop, shutil.which("sleep")]), stdout=subprocess.PIPE)
    churner = pid_namespace.command_pid(churn)
    try:
        assert churn.stdout.readline() == b"started\n"
        proc = subprocess.Popen(pid_namespace.argv(prefix + [str(SCRIPT), str(out)]), env=script_env(path, tmpdir),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout, stderr = proc.communicate()
    finally:
        os.kill(churner, signal.SIGKILL)
        churn.wait()
        churn.stdout.close()
    assert (proc.returncode, stdout, stderr) == (0, b"", b"")
    assert list(tmpdir.iterdir()) == []
    with tarfile.open(out, mode="r:gz") as t:
        assert "meminfo" in t.getnames()
        for m in t.getmembers():
            if m.isdir() and m.name.isdigit():
                for f in ("smaps", "cmdline", "stat", "status"):
                    t.getmember("%s/%s" % (m.name, f))


@pytest.mark.skipif(shutil.which("checkbashisms") is None, reason="checkbashisms (devscripts) not installed")
def test_no_bashisms():
    res = subprocess.run(["checkbashisms", "-p", "-x", str(SCRIPT)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
