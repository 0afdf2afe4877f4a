"""--recommend scales the page map (a struct page per physical page) to the size it recommends.

The firmware/hardware row (installed RAM - MemTotal) holds the measured machine's page map, which
a machine of the recommended size has at its own size: on recorded captures, this machine and a
32-bit board's capture.
"""

import json
import os
import platform
import shutil
import tarfile

import pytest

from conftest import FIXTURES, run_smem
from smem.recommendation import standard_ram_size
from smem.sources.machine import Machine

CAPTURES = FIXTURES / "captures"
FAITHFUL = CAPTURES / "faithful.tar.gz"  # x86_64, 4 KiB pages, 24 GiB installed (memmap)
MiB = 1024


def _recommend(*args):
    proc = run_smem(*args, "--recommend", "-F", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _line(*args):
    return run_smem(*args, "--recommend").stdout.decode().splitlines()[-1]


def _smallest_holding(fixed, entry_bytes, page_size, headroom=0):
    """The smallest usual size R whose need, ``fixed`` plus R's page map, fits with the headroom."""
    size = 16 * MiB
    while True:
        needs = fixed + -(-size * entry_bytes // page_size)
        if needs + needs * headroom // 100 <= size:
            return size
        size = standard_ram_size(size + 1)


def _board(tmp_path, facts=None):
    """The armv7 board's capture (MemTotal, no installed RAM) as a directory, with ``facts``."""
    tree = tmp_path / "board"
    with tarfile.open(CAPTURES / "armv7-noswap.tar.gz") as tar:
        tar.extractall(tree, filter="data")
    if facts:
        (tree / "capture-info").write_text("".join(f"{k}={v}\n" for k, v in facts.items()))
    return tree


@pytest.mark.parametrize("view", [["-w"], ["-w", "--breakdown"]])
def test_a_64_bit_capture_needs_the_page_map_of_the_size_it_recommends(view):
    """24 GiB installed: 384 MiB of page map in the firmware row (1/64 of RAM), which made ~370 MiB
    of need 768M; a machine of the answer's size has 1/64 of that size."""
    document = _recommend("-S", FAITHFUL, *view)
    figures = document["recommend"]
    rows = [r for r in document["rows"] if r.get("noncache") is not None]
    # (-w's rows add up to installed RAM: memmap's System RAM, 24 GiB less the 385 KiB below 1 MiB)
    installed = sum(r["used"] for r in json.loads(run_smem("-S", FAITHFUL, "-w", "-F", "json").stdout)["rows"])
    assert installed == (24 << 20) - 385
    assert figures["measured_page_map_kib"] == -(-installed // 64) == 393210
    fixed = sum(r["noncache"] for r in rows) - (figures["free_not_counted_kib"] or 0) - 393210
    assert figures["page_map_kib"] == figures["fits_in_kib"] // 64
    assert figures["needs_kib"] == fixed + figures["page_map_kib"]
    assert figures["fits_in_kib"] == _smallest_holding(fixed, 64, 4096) <= 512 * MiB  # (768M before)
    assert figures["fits_in_kib"] == standard_ram_size(figures["with_headroom_kib"])
    assert figures["page_map_not_scaled"] is None
    assert figures["not_counted"] == []  # (memmap and iomem give both)
    fits = figures["fits_in_kib"] // MiB
    assert document["notes"][-1].endswith(f"; fits in {fits}.0M; page map scaled to the size: "
                                          f"{fits / 64:.1f}M at {fits}.0M, not the measured 384.0M")
    metrics = run_smem("-S", FAITHFUL, *view, "--recommend", "-F", "openmetrics").stdout.decode().splitlines()
    assert f"smem_recommended_page_map_bytes {figures['page_map_kib'] * 1024}" in metrics
    assert f"smem_non_reclaimable_bytes {figures['needs_kib'] * 1024}" in metrics


def test_the_headroom_is_on_the_page_map_too():
    proc = run_smem("-S", FAITHFUL, "-w", "--breakdown", "--recommend", "20", "-F", "json")
    figures = json.loads(proc.stdout)["recommend"]
    fixed = figures["needs_kib"] - figures["page_map_kib"]
    assert figures["with_headroom_kib"] == figures["needs_kib"] + figures["needs_kib"] * 20 // 100
    assert figures["fits_in_kib"] == _smallest_holding(fixed, 64, 4096, 20)
    assert figures["fits_in_kib"] == standard_ram_size(figures["with_headroom_kib"])


def test_the_page_map_taken_out_is_at_most_the_firmware_row():
    """-R a little above MemTotal + the kernel image: the row holds 10 MiB, not a page map of 1/64
    of -R; only what it holds comes out of the need."""
    rows = {r["area"]: r for r in _recommend("-S", FAITHFUL, "-w")["rows"]}
    ram = sum(r["used"] for r in rows.values()) - rows["firmware/hardware"]["used"] + 10 * MiB
    figures = _recommend("-S", FAITHFUL, "-w", "-R", f"{ram}K")["recommend"]
    assert figures["measured_page_map_kib"] == 10 * MiB < ram // 64


def test_this_machine_needs_the_page_map_of_the_size_it_recommends():
    """Live: the measured page map is installed RAM x struct page / page size, and the answer holds
    only its own size's (on this 24 GiB machine ~200 MiB of use fitted in 768M: 384 MiB of page map)."""
    word = Machine(arch=platform.machine()).word_bytes
    if word is None:
        pytest.skip(f"struct page size of {platform.machine()} not known")
    document = _recommend("-w")
    figures = document["recommend"]
    if figures["page_map_kib"] is None:
        pytest.skip("installed RAM not known here (no /sys/firmware/memmap nor /proc/iomem)")
    installed = sum(r["used"] for r in document["rows"])  # (the rows add up to installed RAM)
    entry, page = {8: 64, 4: 32}[word], os.sysconf("SC_PAGESIZE")
    firmware = next(r["noncache"] for r in document["rows"] if r["area"] == "firmware/hardware")
    assert figures["measured_page_map_kib"] == min(-(-installed * entry // page), firmware)
    fixed = figures["needs_kib"] - figures["page_map_kib"]
    assert fixed == (sum(r["noncache"] for r in document["rows"]) - (figures["free_not_counted_kib"] or 0)
                     - figures["measured_page_map_kib"])
    assert figures["fits_in_kib"] == _smallest_holding(fixed, entry, page)
    if installed >= 16 << 20 and fixed <= 400 * MiB:  # (a quiet machine of 16 GiB or more)
        assert figures["fits_in_kib"] <= 512 * MiB, figures
    line = next(n for n in document["notes"] if n.startswith("needs "))  # (pressure's comes after)
    assert "; page map scaled to the size: " in line, line


def test_a_32_bit_capture_has_32_byte_entries(tmp_path):
    """armv7l, 4 KiB pages, -R 1G: 8 MiB of page map (1/128 of RAM), and 1/128 of the answer."""
    tree = _board(tmp_path, {"machine": "armv7l", "pagesize": 4096})
    figures = _recommend("-S", tree, "-w", "-R", "1G")["recommend"]
    assert figures["measured_page_map_kib"] == 8 * MiB
    assert figures["page_map_kib"] == figures["fits_in_kib"] // 128
    fixed = figures["needs_kib"] - figures["page_map_kib"]
    assert figures["fits_in_kib"] == _smallest_holding(fixed, 32, 4096)
    line = _line("-S", tree, "-w", "-R", "1G")
    assert line.endswith(f"page map scaled to the size: {figures['page_map_kib'] / 1024:.1f}M at "
                         f"{figures['fits_in_kib'] // MiB}.0M, not the measured 8.0M; kernel image unknown, "
                         "not counted: give -K vmlinux"), line


def test_a_capture_without_installed_ram_keeps_its_answer(tmp_path):
    """The armv7 board's capture has no memmap nor iomem: installed RAM is MemTotal, the firmware
    row 0, no page map in it to scale; the answer and line are as they were, arch known or not."""
    recorded = _recommend("-S", CAPTURES / "armv7-noswap.tar.gz", "-w")
    figures = recorded["recommend"]
    assert figures["needs_kib"] == sum(r["noncache"] for r in recorded["rows"])
    assert figures["fits_in_kib"] == standard_ram_size(figures["needs_kib"]) == 512 * MiB
    assert (figures["page_map_kib"], figures["measured_page_map_kib"], figures["page_map_not_scaled"]) == \
        (None, None, None)
    # the line itself says what the need leaves out (it said "fits in 512.0M" alone, the areas
    # unknown only in a warning apart), and JSON and OpenMetrics carry it
    line = recorded["notes"][-1]
    assert line == (f"needs {figures['needs_kib'] / 1024:.1f}M non-reclaimable; fits in 512.0M; firmware/hardware "
                    "(its page map) and kernel image unknown, not counted: give -R SIZE, -K vmlinux"), line
    assert figures["not_counted"] == ["firmware/hardware", "kernel image"]
    metrics = run_smem("-S", CAPTURES / "armv7-noswap.tar.gz", "-w", "--recommend", "-F", "openmetrics").stdout
    assert {'smem_recommended_not_counted{area="firmware/hardware"} 1',
            'smem_recommended_not_counted{area="kernel image"} 1'} <= set(metrics.decode().splitlines())
    board = _board(tmp_path, {"machine": "armv7l", "pagesize": 4096})
    assert _recommend("-S", board, "-w")["recommend"] == figures


@pytest.mark.parametrize("view", [["-w"], ["-w", "--breakdown"]])
def test_the_line_says_which_unknown_size_was_not_counted(view):
    """-R given, the kernel image still unknown (the board's capture has no iomem nor boot log)."""
    document = _recommend("-S", CAPTURES / "armv7-noswap.tar.gz", *view, "-R", "1G")
    assert document["recommend"]["not_counted"] == ["kernel image"]
    assert document["notes"][-1].endswith("; kernel image unknown, not counted: give -K vmlinux"), document["notes"]
    metrics = run_smem("-S", CAPTURES / "armv7-noswap.tar.gz", *view, "-R", "1G", "--recommend",
                       "-F", "openmetrics").stdout.decode().splitlines()
    assert 'smem_recommended_not_counted{area="firmware/hardware"} 0' in metrics
    assert 'smem_recommended_not_counted{area="kernel image"} 1' in metrics


def test_an_unknown_arch_keeps_the_measured_page_map_and_says_so(tmp_path):
    tree = _board(tmp_path, {"machine": "sparc64", "pagesize": 8192})
    document = _recommend("-S", tree, "-w", "-R", "1G")
    figures = document["recommend"]
    assert figures["needs_kib"] == sum(r["noncache"] for r in document["rows"])
    assert figures["fits_in_kib"] == standard_ram_size(figures["needs_kib"])
    assert (figures["page_map_kib"], figures["page_map_not_scaled"]) == (None, "the word size of sparc64 unknown")
    assert document["notes"][-1].endswith("; page map not scaled to the size (the word size of sparc64 unknown); "
                                          "kernel image unknown, not counted: give -K vmlinux")
    shutil.rmtree(tree)
    unnamed = _board(tmp_path, {"pagesize": 4096})
    assert _recommend("-S", unnamed, "-w", "-R", "1G")["recommend"]["page_map_not_scaled"] == "the arch unknown"


@pytest.mark.parametrize("arch, word", [
    ("x86_64", 8), ("aarch64", 8), ("riscv64", 8), ("ppc64le", 8), ("ppc64", 8), ("s390x", 8), ("mips64", 8),
    ("mips64el", 8), ("loongarch64", 8), ("armv7l", 4), ("armv6l", 4), ("i686", 4), ("i386", 4), ("mips", 4),
    ("mipsel", 4), ("sparc64", None), ("", None), (None, None)])
def test_the_word_size_of_an_arch(arch, word):
    assert Machine(arch=arch).word_bytes == word


def test_a_need_just_under_the_size_is_told_from_it():
    """A board's need of 1.98G (2,077,809 KiB) fits in 2G: the line said "needs 2.0G non-reclaimable;
    fits in 2.0G", which reads as a need that fills the RAM.  Its figure takes the decimals that tell
    the two apart; one well under keeps smem's one decimal."""
    from smem.recommendation import recommend
    assert str(recommend(2077809, 0)) == "needs 1.98G non-reclaimable; fits in 2.0G"
    assert str(recommend(1900000, 10)) == "needs 1.8G non-reclaimable (+10% headroom: 1.99G); fits in 2.0G"
    assert str(recommend(1500000, 0)) == "needs 1.4G non-reclaimable; fits in 1.5G"
