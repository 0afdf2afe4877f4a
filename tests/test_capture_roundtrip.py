"""A capture reports what the live system reports: scripts/smemcap.sh under dash and busybox,
and `smem capture`, each compared with the live report and with smem 1.5 on the extracted capture.

The workers, the captures (nobody's too) and the live reports run in the module's PID namespace
(conftest's pid_namespace): each copies or reads every process its /proc shows, there the
workers and a handful besides, not the whole machine; the pids compared are the namespace's.
"""

import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from conftest import TESTS, run_smem
from workload import forked_workers

SCRIPT = TESTS.parent / "scripts" / "smemcap.sh"
# USS and PSS are left out of the whole-process rows: the interpreter's library pages are shared
# with whatever else runs (smem itself, the capturing shell), so both move as those come and go;
# the workers' shared region is theirs alone, and its USS and PSS are compared exactly below.
COLUMNS = "pid user name command maps swap rss vss"


def _live(namespace, *args):
    """``python -m smem ARGS`` on the live /proc of the namespace."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run(namespace.argv([sys.executable, "-m", "smem", *args], cwd=TESTS.parent), capture_output=True,
                          cwd=TESTS.parent, env=env, stdin=subprocess.DEVNULL, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _capture(how, path, namespace):
    if how == "smem capture":
        _live(namespace, "capture", "-o", path)
        return
    shell = shutil.which(how.split()[0])
    if shell is None:
        pytest.skip(f"{how} is not installed")
    subprocess.run(namespace.argv([shell, *how.split()[1:], SCRIPT, path]), check=True, stderr=subprocess.DEVNULL)


def _rows(stdout, pids):
    """The workers' rows as their fields: a column widens for the widest value of the whole
    table, so a process elsewhere on the machine that starts or exits meanwhile moves the padding
    (the byte-exact layout is the goldens' business, on fixed captures)."""
    return sorted(l.split() for l in stdout.decode("utf-8", "surrogateescape").splitlines()
                  if l.split() and l.split()[0] in pids)


@pytest.fixture(scope="module")
def workers(tmp_path_factory, pid_namespace):
    path = os.path.join("/dev/shm" if os.path.isdir("/dev/shm") else str(tmp_path_factory.mktemp("s")),
                        f"smem-roundtrip-{os.getpid()}")
    with forked_workers(4096, 1024, 2, shared_path=path, launch=pid_namespace.argv) as wl:
        yield wl, path
    if os.path.exists(path):
        os.unlink(path)


@pytest.mark.parametrize("how", ["dash", "busybox sh", "smem capture"])
def test_capture_equals_live_and_smem15(how, workers, tmp_path, pid_namespace):
    wl, path = workers
    pids = {str(p) for p in wl.pids}
    live_before = _rows(_live(pid_namespace, "-c", COLUMNS), pids)
    capture = tmp_path / "c.tgz"
    _capture(how, capture, pid_namespace)
    live_after = _rows(_live(pid_namespace, "-c", COLUMNS), pids)
    assert live_before == live_after, "the workers changed while we captured"
    offline = run_smem("-S", capture, "-c", COLUMNS)
    assert offline.returncode == 0, offline.stderr
    assert _rows(offline.stdout, pids) == live_after
    assert len(live_after) == len(pids)
    # the shared region alone, in the mapping view
    args = ["-m", "-M", path, "-c", "map count pids swap uss rss pss vss avgpss avgrss"]
    per_process = ["-M", path, "-c", "pid uss pss rss swap"]
    assert run_smem("-S", capture, *per_process).stdout == _live(pid_namespace, *per_process)
    assert run_smem("-S", capture, *args).stdout == _live(pid_namespace, *args)
    if not os.path.exists("/usr/bin/smem") or os.geteuid() != 0:
        return
    root = tmp_path / "x"
    (root / "proc").mkdir(parents=True)
    with tarfile.open(capture) as t:
        t.extractall(root / "proc", numeric_owner=True, filter="fully_trusted")
    theirs = subprocess.run(["/usr/bin/smem", "-S", root, "-c", COLUMNS], capture_output=True,
                            stdin=subprocess.DEVNULL)
    assert _rows(theirs.stdout, pids) == live_after
    theirs_m = subprocess.run(["/usr/bin/smem", "-S", root, *args], capture_output=True, stdin=subprocess.DEVNULL)
    assert theirs_m.stdout == run_smem("-S", capture, *args).stdout


def test_processes_a_capture_cannot_read_are_named_as_a_report_names_them(workers, pid_namespace):
    """As nobody, other users' smaps are unreadable: the capture names them (pid and name), as a
    report's warning does, not just their number (root's workers and the namespace's init: more
    than the three named)."""
    import re
    from conftest import AS_NOBODY
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user")
    code = ("import smem.app, smem.capture_writer, smem.output, smem.sources.live; "  # before the setuid
            + AS_NOBODY + "smem.cli.main(['capture', '--compression', 'none'])")
    proc = subprocess.run(pid_namespace.argv([sys.executable, "-c", code], cwd=TESTS.parent), capture_output=True,
                          cwd=TESTS.parent, stdin=subprocess.DEVNULL, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (warning,) = proc.stderr.decode().splitlines()
    match = re.fullmatch(r"smem: warning: (\d+) process(?:es)? could not be read and (?:was|were) left out: "
                         r"(pid \d+ \([^)]*\)(?:, pid \d+ \([^)]*\))*)(?: and (\d+) more)?; run as root to capture them",
                         warning)
    assert match, warning
    count, named = int(match.group(1)), re.findall(r"pid (\d+) \(([^)]*)\)", match.group(2))
    assert count > 3 and len(named) == 3 and match.group(3) is not None
    with tarfile.open(fileobj=__import__("io").BytesIO(proc.stdout)) as tar:
        held = {m.name for m in tar.getmembers()}
    for pid, name in named:
        assert f"{pid}/smaps" not in held and name  # left out, and named by its comm


@pytest.mark.uses("cpu")
def test_capture_info_says_when_the_capture_started():
    """capture-info's time (docs/capture-format.md: "when the capture started") was taken at its
    end, after every process was copied: 24 s after its meminfo on a machine of 1,600 processes, so
    a recording's page showed its frame at one time in the header and another on its slider.
    Here copying the processes takes 2 s (their listing is held up)."""
    import io
    import time

    from smem.capture_writer import write_capture
    from smem.sources.live import LiveSource

    class HeldUp(LiveSource):
        def pids(self):
            time.sleep(2.2)
            return [os.getpid()]

    started = time.time()
    buffer = io.BytesIO()
    write_capture(HeldUp(), buffer, compression=None)
    buffer.seek(0)
    with tarfile.open(fileobj=buffer) as tar:
        info = dict(line.split("=", 1) for line in tar.extractfile("capture-info").read().decode().splitlines())
    assert int(started) <= int(info["epoch"]) <= started + 1, (started, info)
