"""The note on stderr under a table of groups: a group's USS sums its processes' USS, which leaves
out the memory they share only with each other (a forked server's pages, which quitting the whole
program frees); --exact's GUSS has it.  Said where a row of several processes shows USS, to
people: never beside JSON, CSV, tsv or OpenMetrics, never on stdout (smem 1.5's goldens stay
byte for byte), never under --exact."""

import csv
import io
import json
import os

import pytest

from conftest import FIXTURES, run_smem
from workload import PAGE_KIB, family_named

SHARED_KIB, PRIVATE_KIB, WORKERS = 4096, 1024, 3
NOTE = b"share only with each other; --exact (root) adds GUSS"
CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"
QUIRKS = FIXTURES / "captures" / "quirks.tar.gz"


@pytest.fixture(scope="module")
def family():
    """A leader (comm COMM) and three forked workers (COMM-w) sharing 4 MiB among themselves only."""
    with family_named("sun", SHARED_KIB, PRIVATE_KIB, WORKERS) as named:
        yield named


def _said(*args):
    proc = run_smem(*args)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr.count(NOTE)


@pytest.mark.uses("cpu")
def test_group_views_of_several_processes_say_it_once(family):
    _, comm = family
    for view in ("-g", "-u", "--cgroup"):
        assert _said(view, "-P", f"^{comm}") == 1, view
        assert _said(view, "-P", f"^{comm}", "-F", "github") == 1, view  # tabulate's tables are for people too


@pytest.mark.uses("cpu")
def test_quiet_where_it_does_not_apply(family):
    """One process per group (the leader alone), no USS shown, or the process view: nothing to say."""
    _, comm = family
    assert _said("-g", "-P", f"^{comm}") == 1
    assert _said("-g", "-P", f"^{comm}$") == 0
    assert _said("-g", "-P", f"^{comm}", "-c", "name count pss") == 0
    assert _said("-P", f"^{comm}") == 0
    assert _said("-g", "-P", f"^{comm}", "-c", "name uss", "-s", "uss") == 1


@pytest.mark.uses("cpu")
def test_formats_for_programs_stay_clean(family):
    """JSON, CSV, tsv and OpenMetrics: the document on stdout as before, nothing on stderr about it."""
    _, comm = family
    assert _said("-g", "-P", f"^{comm}") == 1
    for fmt in ("json", "csv", "tsv", "openmetrics"):
        proc = run_smem("-g", "-P", f"^{comm}", "-F", fmt)
        assert proc.returncode == 0 and NOTE not in proc.stderr and NOTE not in proc.stdout, fmt
    rows = json.loads(run_smem("-g", "-P", f"^{comm}", "-F", "json").stdout)["rows"]
    assert sorted(r["count"] for r in rows) == [1, WORKERS]
    assert list(csv.reader(io.StringIO(run_smem("-g", "-P", f"^{comm}", "-F", "csv").stdout.decode())))[0][0] == "name"


def _kpagecount_readable():
    try:
        with open("/proc/kpagecount", "rb") as f:
            return len(f.read(8)) == 8
    except OSError:
        return False


@pytest.mark.uses("cpu")
@pytest.mark.skipif(os.geteuid() != 0 or not _kpagecount_readable(),
                    reason="exact accounting needs root and /proc/kpagecount")
def test_what_the_note_points_to_holds_the_shared_pages(family):
    """The family as one group (its user's row of exactly its processes): the USS leaves the 4 MiB
    they share out, --exact's GUSS has it; under --exact the note is not said."""
    pytest.importorskip("numpy", reason="--exact needs smem[exact] (numpy)")
    wl, _ = family
    pids = ",".join(map(str, wl.pids))
    assert _said("-u", "--pid", pids) == 1
    proc = run_smem("--exact", "-u", "--pid", pids, "-F", "json")
    assert proc.returncode == 0, proc.stderr
    (group,) = json.loads(proc.stdout)["rows"]
    assert group["count"] == WORKERS + 1
    assert group["guss"] - group["uss"] >= SHARED_KIB - PAGE_KIB
    assert _said("--exact", "-u", "--pid", pids) == 0


def test_recorded_captures():
    """On a capture as live, on stderr only; a comparison says nothing
    (its changes are no USS of now, and --exact compares no frames)."""
    assert _said("-S", CAPTURE, "-g") == 1
    plain = run_smem("-S", CAPTURE, "-u")  # (byte for byte smem 1.5's: test_goldens)
    assert NOTE in plain.stderr and NOTE not in plain.stdout
    assert _said("-S", CAPTURE, "-g", "-P", "^smem-fwf$") == 0  # one process
    assert _said("diff", CAPTURE, QUIRKS, "-g") == 0



def test_on_a_capture_without_frames_the_note_says_which_capture_has_them(tmp_path):
    """A board's capture (smemcap.sh's, C smemcap's) has no page frames: the note's "--exact adds
    GUSS" led to an error that said only "capture it with exact data".  Both name the command that
    records them, smem capture --exact."""
    proc = run_smem("-S", CAPTURE, "-g")
    (note,) = [l for l in proc.stderr.decode().splitlines() if "adds GUSS" in l]
    assert "smem capture --exact" in note, note
    pytest.importorskip("numpy", reason="--exact needs smem[exact] (numpy)")  # (without it, --exact says to install numpy first)
    exact = run_smem("-S", CAPTURE, "-g", "--exact")
    assert exact.returncode == 1 and "smem capture --exact" in exact.stderr.decode(), exact.stderr
    assert exact.stderr.decode().count("\n") == 1
