"""The newer memory columns: hand-computed from a recorded smaps with a distinct value per counter,
absent where a kernel lacks the counter, and equal to the kernel's own rollup for live processes."""

import json
import os
import re
import shutil

import pytest

from conftest import FIXTURES, REALPROC, run_smem
from workload import forked_workers

NEW = "swappss pss_anon pss_file pss_shmem pss_dirty dirty anon referenced locked thp hugetlb"


def _tree(tmp_path, smaps, pid=4242, comm="distinct"):
    proc = tmp_path / "proc"
    (proc / str(pid)).mkdir(parents=True)
    shutil.copy(FIXTURES / "parsers" / "meminfo-6.18", proc / "meminfo")
    shutil.copy(smaps, proc / str(pid) / "smaps")
    (proc / str(pid) / "cmdline").write_bytes(comm.encode() + b"\0")
    (proc / str(pid) / "stat").write_bytes(f"{pid} ({comm}) S 1 {pid} {pid} 0 -1 4194560 0 0 0 0 0 0 0 0 "
                                           f"20 0 3 0 1 8192 2 18446744073709551615".encode())
    return tmp_path


def _sums(path):
    """Per-key sums over all mappings, by a second, independent reading of the file."""
    sums = {}
    for key, value in re.findall(r"^(\w+):\s+(\d+) kB$", path.read_text(), re.M):
        sums[key] = sums.get(key, 0) + int(value)
    return sums


def test_hand_computed_from_distinct_counters(tmp_path):
    smaps = FIXTURES / "parsers" / "distinct.smaps"
    tree = _tree(tmp_path, smaps)
    s = _sums(smaps)
    doc = json.loads(run_smem("-S", tree, "-F", "json", "-c", "pid " + NEW + " threads ppid state").stdout)
    (row,) = doc["rows"]
    # the first mapping's counters are 1..22 in kernel order; the heap and the deleted file add theirs
    assert row["swappss"] == s["SwapPss"] == 21
    assert row["pss_dirty"] == s["Pss_Dirty"] == 6 + 1720 + 8
    assert row["dirty"] == s["Shared_Dirty"] + s["Private_Dirty"] == 8 + 10 + 1720 + 8
    assert row["anon"] == s["Anonymous"] == 12 + 1720
    assert row["referenced"] == s["Referenced"] == 11 + 1720 + 8
    assert row["locked"] == 22
    assert row["thp"] == 15 + 16 + 17
    assert row["hugetlb"] == 18 + 19
    # estimated split (no smaps_rollup in this tree): per mapping, the Anonymous share of Rss is anon;
    # python3's text: 5 * 12 // 4 = 15 anon, 5 - 15 = -10 file (the distinct values are not a real
    # mapping's); the heap: all 1720 anon; the deleted /tmp file (not shmem): 8 file
    assert row["pss_anon"] == 15 + 1720 and row["pss_file"] == -10 + 8 and row["pss_shmem"] == 0
    assert (row["threads"], row["ppid"], row["state"]) == (3, 1, "S")


def test_absent_counters_are_dashes_and_nulls(tmp_path):
    old = REALPROC / "hikvision-dvr-arm-2.6-nopss" / "proc" / "1" / "smaps"
    if not old.exists():
        pytest.skip("../shared/realproc is not available")
    tree = _tree(tmp_path, old, pid=1, comm="init")
    proc = run_smem("-S", tree, "-c", "pid rss pss swap swappss pss_dirty anon uss")
    lines = proc.stdout.decode().splitlines()
    pid, rss, pss, swap, swappss, pss_dirty, anon, uss = lines[1].split()
    assert int(rss) == _sums(old)["Rss"] and int(uss) > 0
    assert pss == swap == swappss == pss_dirty == anon == "-"  # a 2.6.2x kernel prints none of these
    assert "PSS" in proc.stderr.decode()  # and says the kernel does not report PSS
    doc = json.loads(run_smem("-S", tree, "-F", "json", "-c", "pid pss swap").stdout)
    assert doc["rows"][0]["pss"] is None and doc["rows"][0]["swap"] is None


@pytest.mark.uses("cpu")
def test_live_columns_are_the_kernels_rollup_and_status(tmp_path):
    path = f"/dev/shm/smem-columns-{os.getpid()}"
    compared = {"Pss_Anon", "Pss_Shmem", "Anonymous", "SwapPss", "RssAnon", "RssShmem"}

    def kernel(pid):
        return tuple({k: v for k, v in re.findall(r"^(\w+):\s+(\d+) kB$", open(f"/proc/{pid}/{name}").read(), re.M)
                      if k in compared} for name in ("smaps_rollup", "status"))

    with forked_workers(4096, 2048, 2, shared_path=path) as wl:
        # The workers share copy-on-write pages with this process, which runs on meanwhile: a
        # page it writes is copied, and their figures move.  Compared where they held still
        # while smem read them, the reading taken again until they do.
        for attempt in range(5):
            before = {pid: kernel(pid) for pid in wl.pids}
            doc = json.loads(run_smem("-F", "json", "-c", "pid pss swappss pss_anon pss_file pss_shmem "
                                      "anon rss_anon rss_file rss_shmem threads").stdout)
            after = {pid: kernel(pid) for pid in wl.pids}
            if before == after:
                break
        assert before == after, "the workers' memory never held still for one reading"
        rows = {r["pid"]: r for r in doc["rows"] if r["pid"] in wl.pids}
        assert len(rows) == len(wl.pids)
        for pid, row in rows.items():
            rollup, status = after[pid]
            # (Pss_File moves as other pythons map and unmap the same libraries: not compared)
            for key, field in (("pss_anon", "Pss_Anon"), ("pss_shmem", "Pss_Shmem"),
                               ("anon", "Anonymous"), ("swappss", "SwapPss")):
                if field in rollup:
                    assert row[key] == int(rollup[field]), (pid, key)
            if "Pss_Anon" in rollup:  # the kernel's split adds up to its Pss
                assert abs(row["pss_anon"] + row["pss_file"] + row["pss_shmem"] - row["pss"]) <= 2
            for key, field in (("rss_anon", "RssAnon"), ("rss_shmem", "RssShmem")):
                assert row[key] == int(status[field]), (pid, key)
            # the workers' 4 MiB region lives in /dev/shm: shmem, a third of it each
            assert row["pss_shmem"] >= 4096 // 3 - 4
            assert row["rss_shmem"] >= 4096
    if os.path.exists(path):
        os.unlink(path)


def test_all_columns_start_with_the_defaults_in_their_order():
    CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"
    header = run_smem("-S", CAPTURE, "-c", "all").stdout.decode().splitlines()[0].split()
    defaults = run_smem("-S", CAPTURE).stdout.decode().splitlines()[0].split()
    assert header[:len(defaults)] == defaults and header.index("PSS") < header.index("RSS")
    assert len(header) > len(defaults) + 10


def test_every_view_charts_and_sorts_by_columns_it_has():
    """A view's chart measure, its measure without PSS, its default sort and default columns are
    its own columns (the sharing view, which has no PSS, once charted a PSS it lacks: KeyError)."""
    from smem.views import VIEWS
    for name, view in VIEWS.items():
        named = {view.charting.measure, view.charting.measure_without_pss, view.default_sort,
                 *view.default_columns}
        assert named <= set(view.columns), (name, named - set(view.columns))
