"""Label values of smem serve and -F openmetrics: whatever a local user names a process, two names
never give one label (a duplicate series, which Prometheus drops in silence, one program's figures
shown for another's), and a name that needs no escaping is written as it is.  Real processes, named
with prctl(PR_SET_NAME), scraped from a real server on 127.0.0.1."""

import os
import subprocess
import sys
import urllib.request
import uuid

import pytest

from conftest import run_smem
from serve_process import serving, stop

parser = pytest.importorskip("prometheus_client.parser", reason="smem[metrics]: prometheus_client not installed")

#: pairs of names that printable() alone wrote alike: a byte that is not UTF-8 and its escape spelt
#: out, a newline and its escape, a C1 control character and the same byte not UTF-8; and a name
#: that looks like an escape but is none (systemd's \x2d), which stays as it is
NAMES = (b"\xff\xfeb", b"\\xff\\xfeb", b"x\ny", b"x\\x0ay", b"c\xc2\x9b", b"c\x9b", b"a\\x2db")


def _named(names):
    """A process per name (prctl), each with a token in its command line: (token, processes)."""
    token = uuid.uuid4().hex[:12]
    children = []
    for name in names:
        code = (f"import ctypes, sys; ctypes.CDLL(None).prctl(15, {name!r}, 0, 0, 0); "
                "print('ready', flush=True); sys.stdin.read()")
        children.append(subprocess.Popen([sys.executable, "-c", code, token], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE))
    for child in children:
        assert child.stdout.readline() == b"ready\n"
    return token, children


def _ended(children):
    for child in children:
        child.stdin.close()
        child.wait(30)


def _series(text, family):
    """[labels] of ``family``'s samples in exposition ``text`` (each once per series it has)."""
    return [s.labels for f in parser.text_string_to_metric_families(text) for s in f.samples if s.name == family]


@pytest.fixture(scope="module")
def named():
    token, children = _named(NAMES)
    try:
        yield token, children
    finally:
        _ended(children)


@pytest.mark.uses("network")
def test_names_that_printable_writes_alike_are_distinct_series(named):
    token, children = named
    proc, base = serving("-P", token, "--top", "100")
    try:
        with urllib.request.urlopen(base + "/metrics", timeout=60) as response:
            text = response.read().decode()
    finally:
        status, err = stop(proc)
    assert status == 0 and "Traceback" not in err, err
    for family in ("smem_program_pss_bytes", "smem_program_cpu_seconds_total"):
        names = [labels["name"] for labels in _series(text, family)]
        assert len(names) == len(NAMES) == len(set(names)), (family, names)
    processes = {labels["pid"]: labels["name"] for labels in _series(text, "smem_process_pss_bytes")}
    assert sorted(processes) == sorted(str(c.pid) for c in children)
    assert len(set(processes.values())) == len(NAMES)
    assert processes[str(children[-1].pid)] == "a\\x2db"  # (needs no escape: as it is)
    assert processes[str(children[0].pid)] == "\\xff\\xfeb"  # (the bytes, as before)
    assert processes[str(children[2].pid)] == "x\\x0ay"  # (the newline, as before)


@pytest.mark.uses("cpu")
def test_openmetrics_format_writes_them_apart_too(named):
    token, _ = named
    text = run_smem("-g", "-P", token, "-F", "openmetrics", check=True).stdout.decode()
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    names = [s.labels["name"] for f in text_string_to_metric_families(text) for s in f.samples
             if s.name == "smem_program_pss_bytes"]
    assert len(names) == len(NAMES) == len(set(names)), names


def _cgroup_mount():
    """Where the hierarchy smem names a process's cgroup from is mounted (parsers.cgroup: v1's
    memory, else v2), or None."""
    with open("/proc/self/cgroup") as f:
        v1 = any("memory" in line.split(":")[1].split(",") for line in f.read().splitlines() if line.count(":") >= 2)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            after = fields[fields.index("-") + 1:]
            if (v1 and after[0] == "cgroup" and "memory" in after[2].split(",")) or (not v1 and after[0] == "cgroup2"):
                return fields[4]
    return None


@pytest.fixture
def containers():
    """Two processes in two cgroups named as podman names containers, their ids alike in the 12 hex
    digits that docker ps shows (a user makes such cgroups in the subtree systemd delegates to them):
    (pids, {pid: its cgroup path}); skipped where cgroups cannot be made (not root, read-only)."""
    from smem.parsers.cgroup import parse_cgroup
    mount = _cgroup_mount()
    if mount is None:
        pytest.skip("no cgroup mount of the hierarchy smem names cgroups from")
    top = os.path.join(mount, "smem-test-" + uuid.uuid4().hex[:8])
    same = "0123456789ab"
    made, children = [], []
    try:
        for path in (top, *(os.path.join(top, f"libpod-{same}{tail}.scope") for tail in ("b" * 52, "c" * 52))):
            try:
                os.mkdir(path)
                made.append(path)
                if path != top:
                    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                                             stdin=subprocess.PIPE)
                    children.append(child)
                    with open(os.path.join(path, "cgroup.procs"), "w") as f:
                        f.write(str(child.pid))
            except OSError as e:
                pytest.skip(f"cannot make a cgroup and move a process in ({e.strerror}): needs root and a "
                            "writable cgroup mount")
        paths = {}
        for child in children:
            with open(f"/proc/{child.pid}/cgroup", "rb") as f:
                paths[child.pid] = parse_cgroup(f.read())
        yield [c.pid for c in children], paths
    finally:
        _ended(children)
        for path in reversed(made):
            os.rmdir(path)


@pytest.mark.uses("network")
def test_two_containers_whose_ids_start_alike_are_two_series(containers):
    """A cgroup's label in the tables cuts a container's 64 hex digits to the 12 docker ps shows; its
    metric label is its whole path: cut, two cgroups gave one label twice (a duplicate series)."""
    pids, paths = containers
    proc, base = serving("--pid", ",".join(map(str, pids)), "--top", "0")
    try:
        with urllib.request.urlopen(base + "/metrics", timeout=60) as response:
            text = response.read().decode()
    finally:
        status, err = stop(proc)
    assert status == 0, err
    for family in ("smem_cgroup_pss_bytes", "smem_cgroup_cpu_seconds_total"):
        assert sorted(labels["cgroup"] for labels in _series(text, family)) == sorted(paths.values()), family
    table = run_smem("--cgroup", "--pid", ",".join(map(str, pids)), "-c", "cgroup", check=True).stdout.decode()
    assert sum(line.strip().endswith("libpod-0123456789ab.scope") for line in table.splitlines()) == 2
