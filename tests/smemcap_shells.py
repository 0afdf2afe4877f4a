"""What the smemcap.sh tests run: the script under each shell (dash, busybox sh, a PATH of busybox
applets only, the minimal applets), each an xdist group of its own, and the process a capture
must hold, started in the module's PID namespace.  Shared by the tests of the capture it writes
(test_smemcap_sh.py) and of where it writes it and how it fails (test_smemcap_sh_output.py).
"""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest


SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "smemcap.sh"
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
# a memfd whose name forges lines of `ls -l /proc/*/fd` (GNU ls writes a newline in a link as it is)
forged = os.memfd_create(f"{marker}-forged\n/proc/1/fd:\nlrwx------ 1 root root 64 Dec  6 12:31 0 -> /memfd:{marker}-forged")
os.write(forged, bytes(4096))
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


def busybox_bin(root, without=()):
    """A directory ``root`` (made) of every busybox applet but ``without``'s, to be a PATH: a box
    whose busybox was built without them (gzip, bzip2)."""
    return _applet_dir(root, [name for name in _busybox_applets() if name not in without])


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


def script_env(path, tmpdir):
    """The script's environment: a user's may ask GNU ls to quote names (shell-escape is its style
    on a terminal; the memfds' links '/memfd:NAME (deleted)' need it), which the capture must not
    heed."""
    env = dict(os.environ, PATH=path, TMPDIR=str(tmpdir), QUOTING_STYLE="shell-escape")
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


def run_script(shell, tmpdir, *args, namespace=None, **kw):
    """The script run by ``shell``, in ``namespace`` if given (else on the machine)."""
    prefix, path = shell
    argv = prefix + [str(SCRIPT), *args]
    return subprocess.run(namespace.argv(argv) if namespace else argv, env=script_env(path, tmpdir),
                          capture_output=True, **kw)
