"""scripts/smemcap.sh: the POSIX sh capture tool for targets without Python: the capture it writes.

Runs the real script on this live system under dash and busybox sh (also
with a PATH holding nothing but busybox applets, and with only the minimum
applets so the mktemp/stat/getconf/hostname fallbacks run: smemcap_shells.py)
and checks the capture against the live /proc, a process the test starts, and
smem 1.5.  Where it writes and how it fails are test_smemcap_sh_output.py.

The captures run in a PID namespace of the module's own (the ``pid_namespace``
fixture), with the process the tests look for started in it: a capture copies
every process it sees, so one of the whole machine costs what the machine
holds (the suite's workers, a browser), one in the namespace a handful.  Kernel
threads are seen only from the machine's own namespace: one capture of the
machine, by one shell, checks them.
"""

import io
import os
import pwd
import socket
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from smemcap_shells import DASH, MARKER_SIZE, NOBODY, run_script, shell, target  # noqa: F401 (fixtures)

SMEM15 = Path("/usr/bin/smem")


@pytest.fixture(scope="module")
def capture(shell, target, pid_namespace, tmp_path_factory):
    """One capture to stdout, in the module's namespace: (completed process, TMPDIR, epoch
    before, epoch after)."""
    tmpdir = tmp_path_factory.mktemp("tmpdir")
    before = int(time.time())
    res = run_script(shell, tmpdir, namespace=pid_namespace)
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


def test_the_scripts_own_shell_is_captured_and_no_cat(tar):
    """As smemcap's own process is in smem 1.5's capture, the script's shell is in its own; the
    cats it runs are not (each starts after it listed the processes), which the README said."""
    comms = {}
    for member in tar.getmembers():
        head, _, leaf = member.name.partition("/")
        if leaf == "stat" and head.isdigit():
            stat = _read(tar, member.name).decode()
            comms[int(head)] = (stat[stat.index("(") + 1:stat.rindex(")")],
                                _read(tar, f"{head}/cmdline").split(b"\0"))
    assert any(any(a.endswith(b"smemcap.sh") for a in argv) for _, argv in comms.values()), comms
    assert "cat" not in {comm for comm, _ in comms.values()}, comms


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
    # the memfd whose name forges ls lines (a newline, a /proc/1/fd: header, an fd 0 of pid 1) is
    # no line of its own, nor of pid 1's: a line's link is checked against readlink's
    assert [h.name for h in inventory.memfds if "forged" in h.name] == []


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


@pytest.mark.uses("cpu")
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
    res = run_script(([DASH], os.environ["PATH"]), tmp_path)
    assert res.returncode == 0, res.stderr
    tar = tarfile.open(fileobj=io.BytesIO(res.stdout), mode="r:gz")
    assert _read(tar, "2/smaps") == b""
    assert _read(tar, "2/status").splitlines()[0] == b"Name:\tkthreadd"

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
