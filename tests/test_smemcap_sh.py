"""scripts/smemcap.sh: the POSIX sh capture tool for targets without Python.

Runs the real script on this live system under dash and busybox sh (also
with a PATH holding nothing but busybox applets, and with only the minimum
applets so the mktemp/stat/getconf/hostname fallbacks run) and checks the
capture against the live /proc, a process the test starts, and smem 1.5.

The captures run in a PID namespace of the module's own (the ``pid_namespace``
fixture), with the process the tests look for started in it: a capture copies
every process it sees, so one of the whole machine costs what the machine
holds (the suite's workers, a browser), one in the namespace a handful.  Kernel
threads are seen only from the machine's own namespace: one capture of the
machine, by one shell, checks them.
"""

import gzip
import io
import os
import pwd
import select
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "smemcap.sh"
SMEM15 = Path("/usr/bin/smem")
DASH = shutil.which("dash")
BUSYBOX = shutil.which("busybox")
# Everything the script needs when mktemp, stat, getconf and hostname are absent.
MINIMAL_APPLETS = ("cat", "tar", "gzip", "mkdir", "rm", "chown", "date", "uname")

MARKER_SIZE = 1 << 20  # bytes mapped by the target process
NOBODY = 65534

TARGET_CODE = r"""
import ctypes, mmap, os, sys
marker, size, uid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.memfd_create(marker)
os.ftruncate(fd, size)
m = mmap.mmap(fd, size)
for off in range(0, size, mmap.PAGESIZE):
    m[off] = 1
if uid >= 0:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    # A uid change clears the dumpable flag, which makes /proc/N root-owned;
    # restore it so /proc/N is owned by the new uid (PR_SET_DUMPABLE = 4).
    ctypes.CDLL(None, use_errno=True).prctl(4, 1, 0, 0, 0)
sys.stdout.write("ready\n")
sys.stdout.flush()
sys.stdin.read()
"""


def _applet_dir(root, applets):
    root.mkdir()
    for name in applets:
        (root / name).symlink_to(BUSYBOX)
    return str(root)


def _busybox_applets():
    out = subprocess.run([BUSYBOX, "--list"], capture_output=True, check=True, text=True).stdout
    return out.split()


# Each way of running the script is an xdist group: one worker makes its capture (a copy of
# /proc, a second or two) once and runs every test of it.
SHELLS = [
    pytest.param("dash", id="dash", marks=[pytest.mark.skipif(DASH is None, reason="no dash"),
                                           pytest.mark.xdist_group("smemcap-dash")]),
    pytest.param("busybox", id="busybox", marks=[pytest.mark.skipif(BUSYBOX is None, reason="no busybox"),
                                                 pytest.mark.xdist_group("smemcap-busybox")]),
    pytest.param("busybox-only", id="busybox-only-path",
                 marks=[pytest.mark.skipif(BUSYBOX is None, reason="no busybox"),
                        pytest.mark.xdist_group("smemcap-busybox-only")]),
    pytest.param("minimal", id="dash-minimal-applets",
                 marks=[pytest.mark.skipif(DASH is None or BUSYBOX is None, reason="no dash or busybox"),
                        pytest.mark.xdist_group("smemcap-minimal")]),
]


@pytest.fixture(scope="module", params=SHELLS)
def shell(request, tmp_path_factory):
    """(argv prefix, PATH) for one way of running the script."""
    kind = request.param
    if kind == "dash":
        return [DASH], os.environ["PATH"]
    if kind == "busybox":
        return [BUSYBOX, "sh"], os.environ["PATH"]
    if kind == "busybox-only":
        path = _applet_dir(tmp_path_factory.mktemp("bb") / "bin", _busybox_applets())
        return [BUSYBOX, "sh"], path
    path = _applet_dir(tmp_path_factory.mktemp("mini") / "bin", MINIMAL_APPLETS)
    return [DASH], path


def _env(path, tmpdir):
    env = dict(os.environ, PATH=path, TMPDIR=str(tmpdir))
    env.pop("POSIXLY_CORRECT", None)
    return env


class Target:
    """The process a capture must hold: ``pid`` as the capture (the namespace's /proc) names it,
    ``host_pid`` as this machine's /proc does."""

    def __init__(self, pid, host_pid, argv, marker):
        self.pid, self.host_pid, self.argv, self.marker = pid, host_pid, argv, marker


@pytest.fixture(scope="module")
def target(pid_namespace):
    """A process in the module's namespace that maps a named memfd; as nobody when we are root."""
    marker = "smemcap-sh-test-%d" % os.getpid()
    uid = NOBODY if os.geteuid() == 0 else -1
    argv = [sys.executable, "-c", TARGET_CODE, marker, str(MARKER_SIZE), str(uid)]
    proc = subprocess.Popen(pid_namespace.argv(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    host_pid = None
    try:
        assert proc.stdout.readline() == b"ready\n"
        host_pid = pid_namespace.command_pid(proc)
        yield Target(pid_namespace.pid_in(host_pid), host_pid, argv, marker)
    finally:
        if host_pid is not None:
            os.kill(host_pid, signal.SIGKILL)  # nsenter itself waits for it
        proc.kill()
        proc.wait()


def _run(shell, tmpdir, *args, namespace=None, **kw):
    """The script run by ``shell``, in ``namespace`` if given (else on the machine)."""
    prefix, path = shell
    argv = prefix + [str(SCRIPT), *args]
    return subprocess.run(namespace.argv(argv) if namespace else argv, env=_env(path, tmpdir),
                          capture_output=True, **kw)


@pytest.fixture(scope="module")
def capture(shell, target, pid_namespace, tmp_path_factory):
    """One capture to stdout, in the module's namespace: (completed process, TMPDIR, epoch
    before, epoch after)."""
    tmpdir = tmp_path_factory.mktemp("tmpdir")
    before = int(time.time())
    res = _run(shell, tmpdir, namespace=pid_namespace)
    after = int(time.time()) + 1
    return res, tmpdir, before, after


@pytest.fixture(scope="module")
def tar(capture):
    res = capture[0]
    assert res.returncode == 0, res.stderr
    return tarfile.open(fileobj=io.BytesIO(res.stdout), mode="r:gz")


def _read(tar, name):
    return tar.extractfile(name).read()


def _kib(text, field):
    for line in text.splitlines():
        if line.startswith(field + ":"):
            value, unit = line.split()[1:3]
            assert unit == "kB"
            return int(value)
    raise AssertionError("%s missing" % field)


def test_writes_a_gzip_tar_to_stdout_and_nothing_else(capture, tar):
    res = capture[0]
    assert res.stdout[:2] == b"\x1f\x8b"
    assert res.stderr == b""
    names = tar.getnames()
    assert names
    assert not [n for n in names if n.startswith(("/", "./", "proc/"))]


def test_leaves_no_temporary_files(capture):
    assert list(capture[1].iterdir()) == []


def test_system_files_are_copies_of_proc(tar):
    meminfo = _read(tar, "meminfo").decode()
    assert _kib(meminfo, "MemTotal") == _kib(Path("/proc/meminfo").read_text(), "MemTotal")
    assert _read(tar, "version") == Path("/proc/version").read_bytes()
    assert _read(tar, "passwd") == Path("/etc/passwd").read_bytes()


def test_optional_system_files(tar):
    names = set(tar.getnames())
    if os.access("/proc/iomem", os.R_OK):
        assert _read(tar, "iomem") == Path("/proc/iomem").read_bytes()
    assert _read(tar, "swaps").split(b"\n")[0] == Path("/proc/swaps").read_bytes().split(b"\n")[0]
    assert b"pagesets" in _read(tar, "zoneinfo")
    assert 0 < float(_read(tar, "uptime").split()[0]) <= float(Path("/proc/uptime").read_text().split()[0])
    if Path("/proc/pressure/memory").is_file():
        assert _read(tar, "pressure/memory").startswith(b"some avg10=")
    memmap = Path("/sys/firmware/memmap")
    entries = sorted(p.name for p in memmap.iterdir()) if memmap.is_dir() else []
    captured = sorted({n.split("/")[3] for n in names
                       if n.startswith("sys/firmware/memmap/") and n.count("/") >= 3})
    assert captured == entries
    for k in entries:
        for f in ("start", "end", "type"):
            assert _read(tar, "sys/firmware/memmap/%s/%s" % (k, f)) == (memmap / k / f).read_bytes()


def test_capture_info(capture, tar):
    _, _, before, after = capture
    info = dict(line.split("=", 1) for line in _read(tar, "capture-info").decode().splitlines())
    assert info["tool"] == "smemcap.sh 1"
    assert info["hostname"] == socket.gethostname()
    assert info["kernel"] == os.uname().release
    assert info["machine"] == os.uname().machine
    assert int(info["pagesize"]) == os.sysconf("SC_PAGE_SIZE")
    epoch = int(info["epoch"])
    assert before <= epoch <= after
    assert info["time"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def test_started_process_is_captured(tar, target):
    pid, argv, marker = target.pid, target.argv, target.marker
    st = os.stat("/proc/%d" % target.host_pid)
    d = tar.getmember(str(pid))
    assert d.isdir()
    assert (d.uid, d.gid) == (st.st_uid, st.st_gid)
    if os.geteuid() == 0:
        assert d.uid == NOBODY  # owner really was transferred, not just ours
    assert _read(tar, "%d/cmdline" % pid) == b"\0".join(a.encode() for a in argv) + b"\0"

    smaps = _read(tar, "%d/smaps" % pid).decode()
    header, _, rest = smaps.partition("/memfd:%s" % marker)
    assert rest, "memfd mapping missing from smaps"
    start, end = header.splitlines()[-1].split()[0].split("-")
    assert int(end, 16) - int(start, 16) == MARKER_SIZE
    assert _kib(rest, "Size") * 1024 == MARKER_SIZE

    stat = _read(tar, "%d/stat" % pid).decode()
    comm = Path("/proc/%d/comm" % target.host_pid).read_text().rstrip("\n")
    assert stat.startswith("%d (%s) " % (pid, comm))
    status = _read(tar, "%d/status" % pid).decode()
    assert "\nPid:\t%d\n" % pid in status

    if Path("/proc/self/smaps_rollup").exists():
        rollup = _read(tar, "%d/smaps_rollup" % pid).decode()
        assert "[rollup]" in rollup.splitlines()[0]
        assert _kib(rollup, "Rss") >= _kib(rest, "Rss") > 0


def test_shared_memory_and_sys_members(shell, tar, target):
    """sysvipc/shm, the smem/shmem inventory (where stat is there) and the KSM files."""
    from smem.parsers.shmem_inventory import parse_shmem_inventory
    names = set(tar.getnames())
    header = Path("/proc/sysvipc/shm").read_bytes().splitlines()[0]
    assert _read(tar, "sysvipc/shm").splitlines()[0] == header
    ksm = Path("/sys/kernel/mm/ksm")
    if ksm.is_dir():
        assert {n.rpartition("/")[2] for n in names if n.startswith("sys/kernel/mm/ksm/")} == \
            {p.name for p in ksm.iterdir() if p.is_file() and os.access(p, os.R_OK)}
    if shell[0] == [DASH] and shell[1] != os.environ["PATH"]:  # the minimal applets: no stat
        assert "smem/shmem" not in names
        return
    inventory = parse_shmem_inventory(_read(tar, "smem/shmem"))
    shm = os.stat("/dev/shm")
    assert [m for m in inventory.mounts if m.device == (os.major(shm.st_dev), os.minor(shm.st_dev))
            and m.capacity == os.statvfs("/dev/shm").f_blocks * os.statvfs("/dev/shm").f_frsize]
    held = [h for h in inventory.memfds if h.pid == target.pid and h.name == target.marker]
    assert held and held[0].size == held[0].allocated == MARKER_SIZE


def test_every_process_directory_is_complete(tar):
    files = {}
    for m in tar.getmembers():
        first, _, rest = m.name.partition("/")
        if first.isdigit():
            files.setdefault(first, set())
            if rest:
                files[first].add(rest)
    assert files
    required = {"smaps", "cmdline", "stat", "status"}
    for pid, got in files.items():
        assert required <= got <= required | {"smaps_rollup", "cgroup"}, pid


@pytest.mark.skipif(DASH is None, reason="no dash")
def test_kernel_threads_are_included(tmp_path):
    """A capture of the machine itself (the one of this module: a child namespace has no kernel
    threads) holds them, with their empty smaps."""
    # kthreadd is pid 2 when we share the kernel's initial pid namespace.
    try:
        name = Path("/proc/2/status").read_text().splitlines()[0]
    except FileNotFoundError:
        pytest.skip("no pid 2 in this pid namespace")
    if name != "Name:\tkthreadd":
        pytest.skip("pid 2 is not kthreadd here")
    res = _run(([DASH], os.environ["PATH"]), tmp_path)
    assert res.returncode == 0, res.stderr
    tar = tarfile.open(fileobj=io.BytesIO(res.stdout), mode="r:gz")
    assert _read(tar, "2/smaps") == b""
    assert _read(tar, "2/status").splitlines()[0] == b"Name:\tkthreadd"


@pytest.mark.parametrize("shell", [SHELLS[0], SHELLS[2]], indirect=True)  # as for vanishing processes
def test_writes_to_a_file_argument(shell, target, pid_namespace, tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "cap.tgz"
    res = _run(shell, tmpdir, str(out), namespace=pid_namespace, preexec_fn=lambda: os.umask(0o022))
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
    res = _run(shell, tmpdir, str(doc))
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
    res = _run(shell, tmpdir, str(doc), timeout=60)
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
    proc = subprocess.Popen(shell[0] + [str(SCRIPT), str(doc)], env=_env(shell[1], tmpdir),
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
    res = _run(shell, tmpdir, *args, namespace=pid_namespace)
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    with tarfile.open(out, mode="r:gz") as t:
        assert "meminfo" in t.getnames()
    assert list(tmpdir.iterdir()) == []


@pytest.mark.skipif(not SMEM15.exists(), reason="smem 1.5 not installed")
def test_smem15_reads_the_extracted_capture(tar, target, tmp_path):
    pid = target.pid
    (tmp_path / "proc").mkdir()
    kw = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
    tar.extractall(tmp_path / "proc", **kw)
    res = subprocess.run([str(SMEM15), "-S", str(tmp_path), "-H", "-c", "pid user pss"],
                         capture_output=True, text=True, check=True)
    rows = {int(r.split()[0]): r.split()[1:] for r in res.stdout.splitlines()}
    assert pid in rows
    if os.geteuid() == 0:  # extraction kept the owner smemcap.sh recorded
        assert rows[pid][0] == pwd.getpwuid(os.stat("/proc/%d" % target.host_pid).st_uid).pw_name
    assert int(rows[pid][1]) > 0


@pytest.mark.parametrize("where", ["missing-dir", "a-directory"])
def test_unwritable_output_fails_with_one_line(shell, tmp_path, where):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "nonexistent" / "cap.tgz" if where == "missing-dir" else tmp_path
    res = _run(shell, tmpdir, str(out))
    assert res.returncode != 0
    lines = res.stderr.decode().splitlines()
    assert len(lines) == 1 and str(out) in lines[0]
    assert res.stdout == b""
    assert list(tmpdir.iterdir()) == []
    assert not (tmp_path / "nonexistent").exists()


def test_help_and_bad_usage(shell, tmp_path):
    res = _run(shell, tmp_path, "-h")
    assert res.returncode == 0 and res.stdout.startswith(b"usage: smemcap.sh")
    res = _run(shell, tmp_path, "--bogus")
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
                         env=_env(path + ":" + os.environ["PATH"], tmp_path), capture_output=True)
    assert res.returncode != 0
    assert res.stderr.decode().splitlines() == [
        "smemcap.sh: /proc is not mounted (cannot read /proc/meminfo)"]
    assert res.stdout == b""
    assert list(tmp_path.iterdir()) == []


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
        proc = subprocess.Popen(pid_namespace.argv(prefix + [str(SCRIPT)]), env=_env(path, tmpdir),
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
        proc = subprocess.Popen(pid_namespace.argv(prefix + [str(SCRIPT), str(out)]), env=_env(path, tmpdir),
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
