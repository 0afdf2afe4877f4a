"""smem -w --breakdown on the recorded /proc trees of real machines (../shared/realproc): what each
kernel's meminfo can and cannot say, and the rows' words where a filter or a partial tree leaves
processes or mappings out."""

import json
import shutil

from conftest import FIXTURES, run_smem

from smem.parsers.meminfo import parse_meminfo
from smem.views.breakdown import breakdown_areas


def _breakdown(*args):
    result = run_smem("-w", "--breakdown", "-F", "json", *args)
    assert result.returncode == 0, result.stderr
    return {row["area"]: row for row in json.loads(result.stdout)["rows"]}, None


def test_vmalloc_used_of_linux_4_4_to_5_2_is_absent_not_0(realproc):
    """Those kernels print VmallocUsed as 0 whatever vmalloc holds (sysstat's Fedora, ~5.1)."""
    rows, _ = _breakdown("-S", realproc / "sysstat-root1-fedora")
    assert rows["vmalloc"]["used"] is None
    assert rows["vmalloc"]["source"] == "meminfo VmallocUsed: 0 from Linux 4.4 to 5.2, not counted"
    meminfo = parse_meminfo(b"MemTotal: 1000 kB\nVmallocUsed: 0 kB\nKernelStack: 10 kB\nPercpu: 5 kB\n")
    for kernel, used in (("4.19.0", None), ("5.2.9", None), ("5.3.0", 0), (None, None)):
        rows = {a: u for a, u, _, _, _ in breakdown_areas(meminfo, None, kernel=kernel)}
        assert rows["vmalloc"] == used, kernel


def test_vmalloc_chunk_of_a_kernel_before_4_4_says_vmalloc_used_is_address_space(realproc):
    """prometheus' meminfo has Percpu (4.2+) and a VmallocChunk of 32 TiB: 4.2 or 4.3, whose
    VmallocUsed counts address space; it was taken for RAM (VmallocUsed - KernelStack)."""
    rows, _ = _breakdown("-S", realproc / "prometheus-procfs-fixtures")
    assert rows["vmalloc"]["used"] is None
    assert rows["vmalloc"]["source"] == "meminfo VmallocUsed: address space before Linux 4.4, not RAM"


def test_a_vmalloc_chunk_of_0_says_4_4_or_later_whatever_else_lacks(realproc):
    """pixel3's meminfo (Android, 4.9, no version file) lacks Percpu, which alone read as before
    4.2, and says VmallocChunk 0, as 4.4+ do: its VmallocUsed (73,336 KiB, counted pages, as
    Android's kernels backport) is RAM, not the address space it was taken for."""
    rows, _ = _breakdown("-S", realproc / "android-pixel3-4.9-systemui")
    assert rows["vmalloc"]["used"] == 73336 - 33328  # (less the stacks, vmalloc'd on 64-bit)
    assert rows["vmalloc"]["source"].startswith("meminfo VmallocUsed - KernelStack")


def test_a_mapping_filter_says_the_rest_is_of_what_it_left_out(realproc):
    """-M sums only the matching mappings' PSS: the rest is not of processes "not read" (pixel3's one
    process was read)."""
    rows, _ = _breakdown("-S", realproc / "android-pixel3-4.9-systemui", "-M", "libc")
    assert "anon of processes not read or not selected" in rows
    assert "page cache not mapped by those selected" in rows
    assert "anon of processes not read" not in rows


def test_a_mapping_filter_splits_only_the_mappings_it_chose():
    """With -M a process's PSS is its matching mappings'; its split was the whole process's
    smaps_rollup (5.9+): PSS 41 beside PSS_Anon 5429, and a breakdown that left nothing out."""
    capture = FIXTURES / "captures" / "faithful.tar.gz"
    table = run_smem("-S", capture, "-M", "libc", "-c", "pss pss_anon pss_file pss_shmem", "-H")
    assert table.returncode == 0, table.stderr
    rows = [[int(v) for v in line.split()] for line in table.stdout.decode().splitlines()]
    assert rows and all(pss == anon + file + shmem for pss, anon, file, shmem in rows)
    selected, _ = _breakdown("-S", capture, "-M", "libc")
    parts = ("process anon (PSS)", "process file (PSS)", "process shmem (PSS)")
    assert sum(selected[p]["used"] for p in parts) == sum(row[0] for row in rows)


def test_a_rollup_without_the_split_or_smaps_still_counts_its_process(realproc, tmp_path):
    """Oracle's 4.14 smaps_rollup (ps_mem issue 64) alone, no smaps: the split cannot be estimated,
    but the process's PSS is known; it vanished from -w --breakdown and from -c pss_anon."""
    tree = tmp_path / "tree"
    shutil.copytree(realproc / "issue-snippets-rollups" / "psmem-64-oracle-uek-hugetlb" / "proc", tree / "proc")
    shutil.copy(realproc / "android-pixel3-4.9-systemui" / "proc" / "meminfo", tree / "proc" / "meminfo")
    rows, _ = _breakdown("-S", tree)
    assert rows["process memory (PSS)"]["used"] == 4446
    table = run_smem("-S", tree, "-c", "pid pss pss_anon", "-H")
    assert table.stdout.split() == [b"16299", b"4446", b"-"]


def test_diff_totals_of_changes_are_new_total_minus_old_across_kernels(realproc):
    """2.6.29 has no KernelStack, Pixel 3's 4.9 has: the row's change is '-' (absent is not zero),
    but the total of changes must still be NEW's total minus OLD's (it was 33328 KiB short)."""
    old = realproc / "meminfo-zoo" / "chromeos-arc-2.6.29"
    new = realproc / "android-pixel3-4.9-systemui"
    result = run_smem("diff", old, new, "-w", "--breakdown", "-t", "-F", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    rows = {row["area"]: row for row in document["rows"]}
    assert rows["kernel stacks"]["dused"] is None
    totals = document["totals"]
    assert totals["dused"] == totals["used"] - totals["old_used"] == 3665332 - 516144
