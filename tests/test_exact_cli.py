"""--exact, --shared-with, --cgroup and capture --exact through the command line, on process
families this test starts (sharing known to the page)."""

import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("numpy", reason="--exact needs smem[exact]")

from conftest import AS_NOBODY, TESTS, run_smem, run_smem_process
from workload import PAGE_KIB, family_named, forked_workers

SHARED_KIB, PRIVATE_KIB, WORKERS = 4096, 1024, 3


def _kpagecount_readable():
    try:
        with open("/proc/kpagecount", "rb") as f:
            return len(f.read(8)) == 8
    except OSError:
        return False


needs_root = pytest.mark.skipif(os.geteuid() != 0 or not _kpagecount_readable(),
                                reason="exact accounting needs root and /proc/kpagecount")


@pytest.fixture(scope="module")
def family():
    with family_named("xcli", SHARED_KIB, PRIVATE_KIB, WORKERS) as named:
        yield named


def _json(*args):
    proc = run_smem("-F", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _rollup_pss(comm):
    return {r["pid"]: r["pss"] for r in _json("-P", f"^{comm}", "-c", "pid pss")["rows"]}


@pytest.mark.uses("cpu")
@needs_root
def test_group_uss_holds_what_per_process_uss_misses(family):
    wl, comm = family
    # Recomputed PSS is compared with the kernel's own (smaps_rollup, read by the fast path).  The
    # interpreter's libraries are shared with every Python on the machine: another worker's
    # processes starting or ending between the readings move their PSS by more than the 2% allowed
    # for the moment between (and smem's own fork), so the exact reading counts where the rollups
    # read before and after it agree to the page (taken again until they do).
    deadline = time.monotonic() + 60
    while True:
        before = _rollup_pss(comm)
        doc = _json("--exact", "-P", f"^{comm}", "-c", "pid uss guss gpss grss pss", "-t")
        rollup = _rollup_pss(comm)
        if all(abs(before.get(pid, 0) - rollup.get(pid, 0)) <= PAGE_KIB for pid in wl.pids):
            break
        assert time.monotonic() < deadline, "the family's PSS never held still for 60 s"
    rows = {r["pid"]: r for r in doc["rows"]}
    assert set(rows) == set(wl.pids)
    per_process_uss = sum(r["uss"] for r in rows.values())
    total = doc["totals"]
    # the family's shared region is mapped by no one else: the group owns it, no process does alone
    assert total["guss"] - per_process_uss >= SHARED_KIB - PAGE_KIB
    assert total["uss"] == total["guss"]  # -t under --exact: the group's, not a sum
    assert abs(total["gpss"] - sum(r["gpss"] for r in rows.values())) <= len(rows)  # PSS adds up
    assert total["grss"] < sum(r["grss"] for r in rows.values())  # distinct frames, not a sum
    for pid, r in rows.items():
        assert abs(r["gpss"] - rollup[pid]) <= max(2 * PAGE_KIB, rollup[pid] // 50), (pid, r, rollup[pid])
        assert r["guss"] >= PRIVATE_KIB


@pytest.mark.uses("cpu")
@needs_root
def test_program_view_gains_guss(family):
    wl, comm = family
    doc = _json("--exact", "-g", "-P", f"^{comm}")
    assert [c["key"] for c in doc["columns"]] == ["name", "count", "swap", "uss", "guss", "pss", "rss"]
    assert sum(r["count"] for r in doc["rows"]) == len(wl.pids)


@pytest.mark.uses("cpu")
@needs_root
def test_shared_with_names_the_siblings(family):
    wl, comm = family
    leader = wl.pids[0]
    proc = run_smem("--exact", "--shared-with", "-P", f"^{comm}$", "-c", "pid name shared")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode(errors="surrogateescape").splitlines()  # (a sibling's name may not be UTF-8)
    shares = {int(l.split()[0]): int(l.split()[-1]) for l in lines[1:-1]}
    for pid in wl.pids[1:]:
        assert shares[pid] >= SHARED_KIB - PAGE_KIB, (pid, shares.get(pid))
    assert leader not in shares
    assert lines[-1].startswith("1 selected process shares ")
    # smem itself maps the same interpreter and libraries: it is never an answer
    # (a separate process: here smem's own process is the one to leave out)
    named = json.loads(run_smem_process("--exact", "--shared-with", "-P", f"^{comm}$", "-c", "pid command shared",
                                        "-F", "json").stdout)
    # (only this run's own command line counts: another worker's smem may be running, and it
    # shares the interpreter's pages like any Python)
    assert named["rows"] and not [r for r in named["rows"]
                                  if "--shared-with" in r["command"] and f"^{comm}$" in r["command"]]


def _smem_in(namespace, *args):
    """``python -m smem ARGS`` of this checkout in ``namespace``: its /proc shows the processes
    started there and a handful besides, not the whole machine (tests/pid_namespace.py)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run(namespace.argv([sys.executable, "-m", "smem", *map(str, args)], cwd=TESTS.parent),
                          cwd=TESTS.parent, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=300)


@needs_root
def test_exact_capture_gives_the_live_figures_offline(pid_namespace, tmp_path):
    """A capture --exact holds every process's page frames: made and compared in the module's PID
    namespace, with a family of its own there, it copies a handful of processes, not the machine."""
    comm = f"xcap{os.getpid() % 10000}"
    with forked_workers(SHARED_KIB, PRIVATE_KIB, WORKERS, comm=comm, launch=pid_namespace.argv) as wl:
        capture = tmp_path / "exact.tgz"
        done = _smem_in(pid_namespace, "capture", "--exact", "-o", capture)
        assert done.returncode == 0, done.stderr
        args = ["--exact", "-M", "smem|/dev/zero", "-P", f"^{comm}", "-c", "pid guss gpss grss", "-t"]
        live, offline = _smem_in(pid_namespace, *args), run_smem("-S", capture, *args)
    assert live.returncode == 0, live.stderr
    assert offline.returncode == 0, offline.stderr
    assert offline.stdout == live.stdout
    # asking for an exact column is asking for --exact
    implied = run_smem("-S", capture, "-c", "pid guss", "-P", f"^{comm}")
    assert implied.stdout == run_smem("-S", capture, "--exact", "-c", "pid guss", "-P", f"^{comm}").stdout
    assert b" - " not in implied.stdout and len(implied.stdout.splitlines()) == len(wl.pids) + 1


@pytest.mark.uses("cpu")
@pytest.mark.process
def test_without_root_a_clear_message_and_the_smaps_report(family):
    wl, comm = family
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    code = AS_NOBODY + "smem.cli.main(['--exact', '-u'])"
    if os.geteuid() != 0:
        code = "import smem.cli; smem.cli.main(['--exact', '-u'])"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env,
                          cwd=os.path.dirname(os.path.dirname(__file__)))
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.decode()
    assert "kpagecount" in err and "root" in err and "showing the smaps figures" in err
    assert proc.stdout.startswith(b"User     Count")
    shared = subprocess.run([sys.executable, "-c", code.replace("['--exact', '-u']", "['--shared-with', '-P', 'x']")],
                            capture_output=True, env=env, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert shared.returncode == 1 and shared.stderr.decode().count("\n") == 1


@pytest.mark.uses("cpu")
def test_cgroup_view_groups_by_memory_cgroup(family):
    wl, comm = family
    doc = _json("--cgroup", "-c", "cgroup count pss", "-P", f"^{comm}")
    cgroups = {}
    for pid in wl.pids:
        text = open(f"/proc/{pid}/cgroup").read().splitlines()
        memory = [l.split(":", 2)[2] for l in text if "memory" in l.split(":")[1].split(",")]
        cgroups.setdefault((memory or [l.split(":", 2)[2] for l in text if l.startswith("0::")])[0], 0)
        cgroups[(memory or [l.split(":", 2)[2] for l in text if l.startswith("0::")])[0]] += 1
    assert {r["cgroup"]: r["count"] for r in doc["rows"]} == cgroups


@pytest.mark.uses("cpu")
def test_exact_views_and_openmetrics_for_every_view():
    assert run_smem("--exact", "-m", "-t").returncode == 2  # not a view of processes: refused, no traceback
    assert b"--exact" in run_smem("--exact", "-w").stderr
    parser = pytest.importorskip("prometheus_client.openmetrics.parser",
                                 reason="smem[metrics]: prometheus_client not installed")
    for args in (["--cgroup"], ["-g"], ["-m"], ["-u"], ["-w"]):
        proc = run_smem("-F", "openmetrics", *args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert list(parser.text_string_to_metric_families(proc.stdout.decode())), args


@pytest.mark.uses("cpu")
@pytest.mark.process
@needs_root
def test_shared_with_never_selects_smem_itself(family):
    wl, comm = family
    # a process of its own, whose command line the pattern matches (sys.executable -m smem ...);
    # the family's name in it keeps another worker's smem, running at the same time, out
    proc = run_smem_process("--exact", "--shared-with", "-P", f"smem --exact --shared-with -P {comm}-self")
    assert proc.returncode == 1 and b"no process matches" in proc.stderr
    om = run_smem("--exact", "--shared-with", "-P", f"^{comm}$", "-F", "openmetrics")
    assert b"smem_sharing_shared_bytes{pid=" in om.stdout


@pytest.mark.uses("cpu")
@needs_root
def test_shared_with_honours_numeric_and_refuses_other_views(family):
    wl, comm = family
    proc = run_smem("-n", "--shared-with", "-P", f"^{comm}$", "-c", "pid user shared")
    users = {l.split()[1] for l in proc.stdout.decode().splitlines()[1:-1]}
    assert users and all(u.isdigit() for u in users)
    assert run_smem("-u", "--shared-with", "-P", comm).returncode == 2


@pytest.mark.uses("cpu")
def test_exact_totals_say_they_are_one_group():
    pytest.importorskip("numpy", reason="--exact needs smem[exact]")
    proc = run_smem("--exact", "-u", "-t")
    if b"showing the smaps figures" in proc.stderr:
        pytest.skip("exact accounting is not available here (root and /proc/kpagecount)")
    lines = proc.stdout.decode().splitlines()
    assert proc.returncode == 0 and lines[-1].startswith("totals: the processes of all rows as one group")
    plain = run_smem("-u", "-t").stdout.decode().splitlines()
    assert not plain[-1].startswith("totals:")
