"""Shared test helpers: where the recorded data lives, the suite's hooks, and the processes,
namespaces and devices tests share; running smem as a user would is tests/running_smem.py,
imported here so that tests name it from conftest."""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

# smem as the suite runs it keeps compiled modules, as an installed smem does: an environment
# with PYTHONDONTWRITEBYTECODE (this one sets it) would have every `python -m smem` the tests
# start, and every xdist worker, compile the package again.  Into a directory of their own
# under the temporary directory, so the checkout is left as it was.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    import tempfile
    os.environ.setdefault("PYTHONPYCACHEPREFIX", os.path.join(tempfile.gettempdir(), f"smem-tests-pycache-{os.getuid()}"))
    sys.dont_write_bytecode = False
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]

# A suite started in the background (`cmd &`, nohup, some CI runners) starts with SIGINT (and
# under nohup SIGHUP) ignored, and so would every process it starts (an ignored signal stays
# ignored across exec, and a shell cannot trap one ignored on entry): smem and smemcap.sh under
# the tests that send them would never see them.  A handler of our own is reset to the default
# in what we start; here SIGINT is Python's KeyboardInterrupt, the others stay without effect.
for _ignored in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT):
    if signal.getsignal(_ignored) is signal.SIG_IGN:
        signal.signal(_ignored, signal.default_int_handler if _ignored == signal.SIGINT else lambda *_: None)

import pytest

from page_browser import _blank_when_done, _chromium, browser  # noqa: F401 (fixtures: one browser a worker)
# --use: the tiers of the suite, and what each test needs (tests/resource_tiers.py)
from resource_tiers import (enabled, leave_out, pytest_addoption, pytest_configure,  # noqa: F401 (hooks)
                            pytest_terminal_summary, pytest_testnodedown)
# running smem as a user would (tests/running_smem.py): the tests import these from here
from running_smem import (AS_NOBODY, SUMMED_USS_LINE, rows, run_smem, run_smem_in,  # noqa: F401
                          run_smem_on_a_terminal, run_smem_process, said_beside)

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
REALPROC = TESTS.parents[1] / "shared" / "realproc"
if not REALPROC.is_dir():
    REALPROC = TESTS.parents[2] / "shared" / "realproc"


def nopss_tree(where):
    """A proc tree of a kernel without PSS (the ARM 2.6 DVR recorded under ../shared/realproc),
    made under ``where`` with the test capture's meminfo, which the DVR's dump lacks; the tree's
    directory (its ``proc`` inside).  Skips the test where ../shared is absent."""
    import shutil
    import tarfile
    old = REALPROC / "hikvision-dvr-arm-2.6-nopss" / "proc"
    if not old.is_dir():
        pytest.skip("../shared/realproc is not available")
    tree = where / "nopss"
    shutil.copytree(old, tree / "proc")
    with tarfile.open(FIXTURES / "captures" / "faithful.tar.gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.rstrip("/").endswith("meminfo"))
        (tree / "proc" / "meminfo").write_bytes(tar.extractfile(member).read())
    return tree


def realproc_files(name):
    """Every recorded file called ``name`` under ../shared/realproc (empty if absent)."""
    if not REALPROC.is_dir():
        return []
    return sorted(p for p in REALPROC.rglob(name) if p.is_file())


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker a CPU this process may run on, and one more where --use takes in
    tests that wait (for a browser, a watch interval, a peer's timeout, a process to be ready):
    with one worker a CPU, a CPU would sit idle meanwhile.  The quick loop leaves those out, and
    a worker more would only collect the suite once more."""
    cpus = len(os.sched_getaffinity(0))
    return cpus + 1 if enabled(config) else cpus


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """The xdist groups first (each runs whole on one worker, seconds of module fixtures and
    copies of /proc), then the single tests, which fill whichever worker is free: the workers
    finish together, not one waiting on a group handed out last.  First, the tests that need a
    resource --use did not name are left out."""
    leave_out(config, items)
    _keep_groups_whole(config, items)
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)


def _keep_groups_whole(config, items):
    """Keep each xdist group on one worker (run last, after xdist's own hook).

    Under ``--dist loadgroup`` a worker names a grouped test ``id@group`` by setting
    ``item._nodeid``; pytest 9.2 keeps the id in ``item._id`` instead, so the name was lost and
    a group's tests (and its module fixtures: chromium, the corpus) spread over both workers,
    each paying for the fixtures (pytest-xdist issue #1386).  The id is set here, where pytest
    reads it; a grouped test whose id still does not name its group stops the run.
    """
    if not getattr(config.option, "loadgroup", False):  # set in a worker where --dist is loadgroup
        return
    for item in items:
        named = item.__dict__.get("_nodeid")
        if isinstance(named, str) and hasattr(item, "_id") and item.nodeid != named:
            item._id = type(item._id).parse(named)
        groups = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
        if groups and not item.nodeid.endswith("@" + "_".join(sorted(groups))):
            raise pytest.UsageError(f"{item.nodeid}: in the xdist group {sorted(groups)}, but its id does not "
                                    "name it, so the group would be spread over the workers")


def settled(pid, seconds=10):
    """Wait until process ``pid`` sleeps with a stat that no longer moves (two reads 50 ms apart
    the same): a process that has said it is ready still runs on into its read (a fault, a
    tick, its pages copied on write), which a loaded machine spreads over the readings a test
    expects the same."""
    import time
    from smem.parsers.stat import parse_stat
    deadline, last = time.monotonic() + seconds, None
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat", "rb") as f:
            now = f.read()
        if now == last and parse_stat(now).state == "S":
            return
        last = now
        time.sleep(0.05)
    pytest.fail(f"process {pid} did not settle in {seconds} s")


def machine_changes():
    """(processes forked since boot, the pids there are now): a process that started or ended
    changes the number of processes mapping each page of the libraries it maps."""
    with open("/proc/stat") as f:
        forks = next(int(line.split()[1]) for line in f if line.startswith("processes "))
    return forks, frozenset(name for name in os.listdir("/proc") if name.isdigit())


@pytest.fixture(scope="module")
def pid_namespace():
    """A PID namespace of the module's own (tests/pid_namespace.py): a capture made in it copies
    the processes the tests start there, not the whole machine."""
    from pid_namespace import PidNamespace
    namespace = PidNamespace()
    yield namespace
    namespace.close()


class FullFilesystem:
    """A tmpfs mounted where the captures run: ``path`` names it to them, ``seen`` to this
    process (through the namespace's /proc/PID/root: the mount is not in ours)."""

    def __init__(self, path, seen):
        self.path, self.seen = path, seen


@pytest.fixture
def full_filesystem(pid_namespace, tmp_path):
    """A 4 KiB tmpfs (one page): far smaller than any capture, even of a namespace."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "tiny"
    mount.mkdir()
    in_namespace = pid_namespace.argv
    if subprocess.run(in_namespace(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", mount]),
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    seen = Path(f"/proc/{pid_namespace.init}/root{mount}") if pid_namespace.isolated else mount
    try:
        yield FullFilesystem(mount, seen)
    finally:
        subprocess.run(in_namespace(["umount", "-l", mount]), check=False)


@pytest.fixture(scope="session")
def pages(tmp_path_factory):
    """smem html's pages of a capture, a comparison and a hostile capture (tests/page_documents.py),
    made once for both modules that read them: test_page.py in a browser, test_page_documents.py
    as documents (both in the page group, so on one worker)."""
    from page_documents import make_pages
    return make_pages(tmp_path_factory.mktemp("pages"))


@pytest.fixture
def realproc():
    if not REALPROC.is_dir():
        pytest.skip("../shared/realproc is not available")
    return REALPROC


def without_rollups(capture, out):
    """A copy of a capture without its smaps_rollup members (what smem 1.5 reads, and kernels < 4.14 give)."""
    import io
    import tarfile
    with tarfile.open(capture) as tin, tarfile.open(out, "w") as tout:
        for m in tin:
            if not m.name.endswith("/smaps_rollup"):
                tout.addfile(m, io.BytesIO(tin.extractfile(m).read()) if m.isreg() else None)
    return out


def extract_capture(capture, into):
    """The regular members of the capture archive ``capture``, written under ``into`` (a /proc-shaped tree)."""
    import tarfile
    with tarfile.open(capture) as tar:
        for m in tar:
            if m.isreg():
                path = into / m.name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(tar.extractfile(m).read())
    return into


# -- processes started with a property that broke smem 1.5 (a name with ")", a non-UTF-8 path, ...)


class Child:
    """A python child running ``body``; it prints READY and lives until we close its stdin."""

    def __init__(self, body, argv0=None, args=()):
        code = textwrap.dedent(body) + "\nprint('READY', flush=True)\nsys.stdin.read()\n"
        cmd = [sys.executable, "-c", "import sys, os\n" + code, *args]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self.proc.stdout.readline()
        assert line.strip() == b"READY", line
        self.pid = self.proc.pid

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def child():
    children = []

    def start(body, **kw):
        c = Child(body, **kw)
        children.append(c)
        return c

    yield start
    for c in children:
        c.stop()



@pytest.fixture
def zram_swap():
    """A 64 MiB zram device added for the test (/sys/class/zram-control), swapped on at the
    highest priority, and removed after; skips where the kernel or we cannot.  A test using it
    is marked ``xdist_group("swap")``: the machine's swap, one test at a time (the device takes
    what any process pages out meanwhile, and its swapoff brings another test's pages back)."""
    control = "/sys/class/zram-control/hot_add"
    if os.geteuid() != 0:
        pytest.skip("zram needs root")
    if not os.path.exists(control):
        subprocess.run(["modprobe", "zram", "num_devices=0"], capture_output=True)
    if not os.path.exists(control) or not shutil.which("mkswap"):
        pytest.skip("no zram in this kernel (modprobe zram failed) or no mkswap")
    with open(control) as f:
        number = f.read().strip()
    device, sysfs = f"/dev/zram{number}", f"/sys/block/zram{number}"
    swapped_on = False
    try:
        with open(f"{sysfs}/disksize", "w") as f:
            f.write(str(64 << 20))
        if subprocess.run(["mkswap", device], capture_output=True).returncode != 0:
            pytest.skip(f"mkswap {device} failed")
        swapped_on = subprocess.run(["swapon", "-p", "32767", device], capture_output=True).returncode == 0
        if not swapped_on:
            pytest.skip(f"swapon {device} failed")
        yield f"zram{number}", sysfs
    finally:
        if swapped_on:
            subprocess.run(["swapoff", device], capture_output=True)
        with contextlib.suppress(OSError):
            with open(f"{sysfs}/reset", "w") as f:
                f.write("1")
        with contextlib.suppress(OSError):
            with open("/sys/class/zram-control/hot_remove", "w") as f:
                f.write(number)
