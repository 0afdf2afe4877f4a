"""smem -w --breakdown: rows that add up to MemTotal, on this machine, captures and recorded kernels.

Live figures move while smem reads (other processes run), so the tests compare what a
known object must move by its size with room for noise, and check the one thing that is
exact whatever happens meanwhile: the rows add up to MemTotal (the ``unexplained`` row
makes it so), each with a source.
"""

import contextlib
import json
import mmap
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, realproc_files, run_smem
from workload import ksm_merged, ksm_running, odd_cmdline_process, swapped_process

from smem.parsers.meminfo import parse_meminfo
from smem.parsers.mm_stat import MM_STAT_FIELDS, parse_mm_stat
from smem.parsers.zoneinfo import per_cpu_free_pages
from smem.views.breakdown import ProcessSums, breakdown_areas

MIB = 1024


def _breakdown(*args):
    result = run_smem("-w", "--breakdown", "-F", "json", *args)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    return {row["area"]: row for row in document["rows"]}, document


def _mem_total():
    with open("/proc/meminfo", "rb") as f:
        return parse_meminfo(f.read()).kib["MemTotal"]


def test_live_rows_add_up_to_mem_total_each_with_its_source():
    rows, document = _breakdown("-c", "area used cache saved source", "--pid", os.getpid())
    assert sum(r["used"] for r in rows.values() if r["used"] is not None) == _mem_total()
    assert all(r["source"] for r in rows.values())
    assert rows["unexplained"]["source"] == "MemTotal - the rows above"
    assert rows["process anon (PSS)"]["used"] > 0 and rows["free"]["used"] > 0
    assert rows["KSM saved (not in sum)"]["used"] is None  # saved memory is not used memory
    assert any(n.startswith("unexplained: ") for n in document["notes"])


def test_with_realmem_the_firmware_and_kernel_rows_come_first_and_the_rows_add_up_to_it():
    rows, _ = _breakdown("-R", "64G", "--pid", os.getpid())
    assert list(rows)[:3] == ["firmware/hardware", "kernel image", "process anon (PSS)"]
    assert sum(r["used"] for r in rows.values() if r["used"] is not None) == 64 << 20


def test_breakdown_is_refused_outside_the_system_view():
    result = run_smem("--breakdown")
    assert result.returncode == 2 and b"use it with -w" in result.stderr


def _shmem_kib():
    with open("/proc/meminfo", "rb") as f:
        return parse_meminfo(f.read()).kib["Shmem"]


#: what other processes may move the machine's Shmem by while the two readings are taken
SHMEM_NOISE_KIB = 4 * MIB


@pytest.mark.uses("cpu")
def test_known_objects_move_their_rows(tmp_path):
    """A process with 64 MiB anonymous and an 8 MiB /dev/shm file mapped, and a 16 MiB /dev/shm
    file no one maps: --pid limits the processes read to the one we know.

    The unmapped row is meminfo Shmem less what the process maps, and Shmem is the machine's:
    another worker's family sharing 8 MiB, or its 48 MiB /dev/shm file, moves it by more than the
    16 MiB file is told apart by.  The two readings are taken again until Shmem, read beside
    them, moved by the file alone (give or take SHMEM_NOISE_KIB)."""
    mapped = f"/dev/shm/smem-breakdown-mapped-{os.getpid()}"
    loose = f"/dev/shm/smem-breakdown-loose-{os.getpid()}"
    try:
        with odd_cmdline_process(["breakdown"], anon_kib=64 * MIB, files=[(mapped, 8 * MIB, False)]) as wl:
            pid = str(wl.pids[0])
            deadline, moved = time.monotonic() + 60, []
            while True:
                first = _shmem_kib()
                before, _ = _breakdown("--pid", pid)
                with open(loose, "wb") as f:
                    f.write(b"\1" * (16 << 20))
                after, _ = _breakdown("--pid", pid)
                moved.append(_shmem_kib() - first)
                os.unlink(loose)
                if abs(moved[-1] - 16 * MIB) <= SHMEM_NOISE_KIB:
                    break
                assert time.monotonic() < deadline, f"Shmem never moved by the file alone in 60 s: {moved} KiB"
    finally:
        for path in (mapped, loose):
            if os.path.exists(path):
                os.unlink(path)
    # the process: its 64 MiB (and the interpreter's few MiB) in anon, its file in shmem
    assert 64 * MIB <= after["process anon (PSS)"]["used"] <= 96 * MIB
    assert 8 * MIB <= after["process shmem (PSS)"]["used"] <= 9 * MIB
    # --pid chose one process: the rest is what that one does not map, and the names say so
    unmapped = "shmem not mapped by those selected (tmpfs/SysV/memfd)"
    assert "anon of processes not read or not selected" in after
    grown = after[unmapped]["used"] - before[unmapped]["used"]
    assert 16 * MIB - SHMEM_NOISE_KIB <= grown <= 16 * MIB + SHMEM_NOISE_KIB


def test_a_capture_gives_a_breakdown_with_what_it_holds():
    capture = FIXTURES / "captures" / "faithful.tar.gz"
    rows, _ = _breakdown("-S", capture)
    with tarfile.open(capture) as tar:
        mem_total = parse_meminfo(tar.extractfile("meminfo").read()).kib["MemTotal"]
    assert sum(r["used"] for r in rows.values() if r["used"] is not None) == mem_total
    assert rows["free in per-CPU lists"]["used"] is None  # not in this capture: absent, not 0
    assert rows["zram pool"]["used"] is None
    assert rows["process anon (PSS)"]["used"] > 0


def test_the_source_counts_the_processes_in_words_that_agree():
    capture = FIXTURES / "captures" / "faithful.tar.gz"
    one, _ = _breakdown("-S", capture, "--pid", "7811", "-c", "area source")
    every, _ = _breakdown("-S", capture, "-c", "area source")
    assert one["process anon (PSS)"]["source"] == "sum of Pss_Anon, 1 process's smaps_rollup"
    assert every["process anon (PSS)"]["source"] == "sum of Pss_Anon, 24 processes' smaps_rollup"


def _meminfos():
    found = realproc_files("meminfo") + sorted(FIXTURES.rglob("meminfo"))
    return [p for p in found if p.is_file() and "MemTotal" in parse_meminfo(p.read_bytes()).kib]


def test_every_recorded_meminfo_gives_a_breakdown_with_the_rows_its_kernel_allows():
    meminfos = _meminfos()
    if not meminfos:
        pytest.skip("no recorded meminfo")
    sums = ProcessSums(count=3, pss=900, anon=500, file=300, shmem=100)
    for path in meminfos:
        meminfo = parse_meminfo(path.read_bytes())
        if "MemTotal" not in meminfo.kib:
            continue
        for process_sums in (sums, ProcessSums(count=3, pss=900), None):
            rows = {area: (used, source) for area, used, _, source, _ in breakdown_areas(meminfo, process_sums)}
            present = sum(used for used, _ in rows.values() if used is not None)
            assert present == meminfo.kib["MemTotal"], path
            m = meminfo.kib
            # a field the kernel lacks leaves its row absent, never 0
            assert (rows["secondary page tables"][0] is None) == ("SecPageTables" not in m), path
            assert (rows["percpu"][0] is None) == ("Percpu" not in m), path
            assert (rows["zswap pool"][0] is None) == ("Zswap" not in m), path
            # before 4.4 (a VmallocChunk above 0; without one, no Percpu: before 4.2) VmallocUsed is
            # address space, not RAM, and from 4.4 to 5.2 always 0: no row
            old = m["VmallocChunk"] > 0 if "VmallocChunk" in m else "Percpu" not in m
            assert (rows["vmalloc"][0] is None) == (old or not m.get("VmallocUsed")), path
            if "SReclaimable" in m and "SUnreclaim" in m:
                assert rows["slab reclaimable"] == (m["SReclaimable"], "meminfo SReclaimable")
            else:
                assert rows["slab"][0] == m.get("Slab"), path


def test_the_split_merges_when_the_kernel_gives_none():
    meminfo = parse_meminfo(b"MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 10 kB\nCached: 300 kB\n"
                            b"AnonPages: 400 kB\nShmem: 20 kB\n")
    rows = {a: u for a, u, _, _, _ in breakdown_areas(meminfo, ProcessSums(count=2, pss=500))}
    assert rows["process memory (PSS)"] == 500
    assert rows["anon, page cache, shmem not mapped"] == 400 + 10 + 300 - 500
    assert "process anon (PSS)" not in rows
    assert rows["unexplained"] == 1000 - 100 - 500 - 210


#: The machine's swap, one test at a time: the zram swap added here takes what any process pages
#: out meanwhile (test_exact's swapped process: the pool grew between this test's readings), and
#: its swapoff brings another test's swapped pages back in while that test reads them.
SWAP = pytest.mark.xdist_group("swap")


@SWAP
def test_zram_pool_row_and_the_swap_its_processes_cost(zram_swap):
    name, sysfs = zram_swap
    with swapped_process(16 * MIB) as wl:
        if not wl.info["swapped"]:
            pytest.skip("the kernel paged nothing out (MADV_PAGEOUT)")
        pid = str(wl.pids[0])
        rows, _ = _breakdown("--pid", pid)
        table = run_smem("--pid", pid, "-c", "pid swappss zram", "-F", "json", "-H")
        with open(f"{sysfs}/mm_stat", "rb") as f:
            stat = parse_mm_stat(f.read())
    assert stat["orig_data_size"] > 0 and stat["mem_used_total"] > 0
    assert name in rows["zram pool"]["source"]
    assert rows["zram pool"]["used"] >= stat["mem_used_total"] // 1024  # every zram device: ours and others'
    process = json.loads(table.stdout)["rows"][0]
    # one byte written per page: it compresses to little, so the RAM it costs is far below its swap
    assert process["swappss"] >= 8 * MIB
    assert 0 < process["zram"] < process["swappss"]


def test_mm_stat_as_the_kernel_prints_it():
    recorded = (FIXTURES / "zram" / "mm_stat").read_bytes()
    stat = parse_mm_stat(recorded)
    assert list(stat) == list(MM_STAT_FIELDS[:len(recorded.split())])
    assert stat["compr_data_size"] <= stat["mem_used_total"] <= stat["mem_used_max"]
    assert parse_mm_stat(b"  4096  40  8192\n") == {"orig_data_size": 4096, "compr_data_size": 40,
                                                   "mem_used_total": 8192}  # Linux 4.1's first fields
    with pytest.raises(ValueError):
        parse_mm_stat(b"not numbers\n")


# -- KSM: pages of our own merged, read back per process and as the system's saving ------------

@pytest.fixture
def merged_pages():
    """4 MiB of identical pages of this process, merged by KSM (workload.ksm_running); skips
    where the kernel has no KSM or ksmd merges nothing within 20 s."""
    region = mmap.mmap(-1, 4 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        region.write(b"smem" * (len(region) // 4))
        region.madvise(mmap.MADV_MERGEABLE)
        with ksm_running():
            yield ksm_merged("self", len(region) // mmap.PAGESIZE) * mmap.PAGESIZE // 1024
    finally:
        region.close()


@pytest.mark.xdist_group("ksm")  # (ksmd started and stopped: one test at a time, workload.ksm_running)
def test_ksm_column_and_the_saving_row(merged_pages):
    table = run_smem("--pid", os.getpid(), "-c", "pid ksm", "-F", "json")
    assert json.loads(table.stdout)["rows"][0]["ksm"] >= merged_pages  # smaps KSM: (6.6+) or the fallback
    rows, _ = _breakdown("--pid", os.getpid())
    # one KSM page stands for at most max_page_sharing (256 by default) merged ones
    assert rows["KSM saved (not in sum)"]["saved"] >= merged_pages * 9 // 10
    assert rows["KSM saved (not in sum)"]["used"] is None


def test_ksm_column_falls_back_to_ksm_merging_pages(tmp_path):
    """A kernel 5.19-6.5 has ksm_merging_pages but no KSM: line: our own files, the line taken out."""
    proc = tmp_path / "proc"
    own = proc / "4242"
    own.mkdir(parents=True)
    for name in ("stat", "cmdline", "status"):
        (own / name).write_bytes(open(f"/proc/self/{name}", "rb").read())
    rollup = open("/proc/self/smaps_rollup", "rb").read()
    (own / "smaps_rollup").write_bytes(b"".join(l for l in rollup.splitlines(True) if not l.startswith(b"KSM:")))
    (own / "smaps").write_bytes(b"")
    (own / "ksm_merging_pages").write_bytes(b"3\n")
    (proc / "meminfo").write_bytes(open("/proc/meminfo", "rb").read())
    (proc / "capture-info").write_bytes(b"pagesize=4096\n")
    rows = json.loads(run_smem("-S", tmp_path, "-c", "pid ksm", "-F", "json").stdout)["rows"]
    assert rows == [{"pid": 4242, "ksm": 12}]
    (own / "ksm_merging_pages").unlink()  # before 5.19: absent, not 0
    rows = json.loads(run_smem("-S", tmp_path, "-c", "pid ksm", "-F", "json").stdout)["rows"]
    assert rows == [{"pid": 4242, "ksm": None}]


def test_a_capture_with_zram_ksm_and_zoneinfo_members(tmp_path):
    """The members a capture holds them under: sys/block/zramN/mm_stat, sys/kernel/mm/ksm/*, zoneinfo."""
    (tmp_path / "meminfo").write_bytes(open("/proc/meminfo", "rb").read())
    (tmp_path / "capture-info").write_bytes(b"pagesize=4096\nmachine=x86_64\n")
    zram = tmp_path / "sys" / "block" / "zram0"
    zram.mkdir(parents=True)
    (zram / "mm_stat").write_bytes((FIXTURES / "zram" / "mm_stat").read_bytes())
    ksm = tmp_path / "sys" / "kernel" / "mm" / "ksm"
    ksm.mkdir(parents=True)
    (ksm / "pages_sharing").write_bytes(b"1020\n")
    (tmp_path / "zoneinfo").write_bytes(open("/proc/zoneinfo", "rb").read())
    rows, _ = _breakdown("-S", tmp_path)
    stat = parse_mm_stat((FIXTURES / "zram" / "mm_stat").read_bytes())
    assert rows["zram pool"]["used"] == stat["mem_used_total"] // 1024
    assert rows["KSM saved (not in sum)"]["saved"] == 1020 * 4
    assert rows["free in per-CPU lists"]["used"] == 4 * per_cpu_free_pages((tmp_path / "zoneinfo").read_bytes())


def test_per_cpu_free_pages_of_recorded_zoneinfo():
    recorded = realproc_files("zoneinfo") + [Path("/proc/zoneinfo")]
    for path in recorded:
        data = path.read_bytes()
        counts = [int(line.split()[1]) for line in data.decode().splitlines() if line.strip().startswith("count:")]
        assert per_cpu_free_pages(data) == (sum(counts) if counts else None), path


def test_smem_diff_compares_breakdowns():
    capture = FIXTURES / "captures" / "faithful.tar.gz"
    result = run_smem("diff", capture, capture, "-w", "--breakdown", "-F", "json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert {r["area"] for r in rows} >= {"process anon (PSS)", "page cache not mapped", "unexplained"}
    assert all(r["dused"] in (0, None) for r in rows)


def test_damaged_pool_files_leave_their_rows_absent(tmp_path):
    (tmp_path / "meminfo").write_bytes(open("/proc/meminfo", "rb").read())
    (tmp_path / "capture-info").write_bytes(b"pagesize=4096\n")
    zram = tmp_path / "sys" / "block" / "zram0"
    zram.mkdir(parents=True)
    (zram / "mm_stat").write_bytes(b"lots of memory\n")
    ksm = tmp_path / "sys" / "kernel" / "mm" / "ksm"
    ksm.mkdir(parents=True)
    (ksm / "pages_sharing").write_bytes(b"99999999999999999999\n")  # more bytes than 2**64
    (tmp_path / "zoneinfo").write_bytes(b"Node 0, zone   Normal\n  pagesets\n    cpu: 0\n      count: many\n")
    rows, _ = _breakdown("-S", tmp_path)
    for area in ("zram pool", "free in per-CPU lists"):
        assert rows[area]["used"] is None
    assert rows["KSM saved (not in sum)"]["saved"] is None


def test_a_row_below_zero_is_explained(tmp_path):
    """meminfo read before processes that then grew: a remainder below zero says why."""
    with tarfile.open(FIXTURES / "captures" / "faithful.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    meminfo = tmp_path / "meminfo"
    lines = [b"AnonPages:             0 kB" if line.startswith(b"AnonPages:") else line
             for line in meminfo.read_bytes().split(b"\n")]
    meminfo.write_bytes(b"\n".join(lines))
    rows, document = _breakdown("-S", tmp_path)
    assert rows["anon of processes not read"]["used"] < 0
    assert any(n.startswith("below zero: anon of processes not read: ") for n in document["notes"])
    assert sum(r["used"] for r in rows.values() if r["used"] is not None) == parse_meminfo(
        meminfo.read_bytes()).kib["MemTotal"]


@pytest.mark.uses("cpu")
def test_a_selection_of_no_process_keeps_the_process_rows_at_0():
    """-P matching nothing switched the table to the rows of a capture without processes ('anon',
    'page cache', 'shmem'), with no word of the selection: the process rows are there, 0 of
    0 processes, and the rest says it is of the processes not selected, as with a match."""
    capture = FIXTURES / "captures" / "faithful.tar.gz"
    chosen, _ = _breakdown("-S", capture, "-P", "matches-no-process-at-all")
    matched, _ = _breakdown("-S", capture, "-P", ".")
    assert list(chosen) == list(matched)
    assert [chosen[a]["used"] for a in ("process anon (PSS)", "process file (PSS)", "process shmem (PSS)")] == [0, 0, 0]
    assert "0 processes'" in chosen["process anon (PSS)"]["source"]
    assert chosen["anon of processes not read or not selected"]["used"] == (
        matched["anon of processes not read or not selected"]["used"] + matched["process anon (PSS)"]["used"])
