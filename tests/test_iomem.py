"""parse_iomem() and its helpers, on this machine's /proc/iomem and recorded copies."""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path

import pytest

from smem.parsers.boot_memory_line import parse_boot_memory_line
from smem.parsers.iomem import (IomemResource, addresses_hidden, kernel_image_bytes,
                                kernel_image_parts, parse_iomem, system_ram_bytes)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REALPROC = Path(__file__).resolve().parents[2] / "shared" / "realproc"


def meminfo_total_bytes(text: str) -> int:
    return int(re.search(r"^MemTotal:\s+(\d+) kB", text, re.M).group(1)) * 1024


def hex_ranges(text: str, name: str, top_level_only: bool) -> list[tuple[int, int]]:
    """The ranges of *name* lines, read with a regex independent of the parser."""
    indent = "" if top_level_only else " *"
    return [(int(a, 16), int(b, 16)) for a, b in
            re.findall(r"^%s([0-9a-f]+)-([0-9a-f]+) : %s$" % (indent, re.escape(name)), text, re.M)]


# --- recorded on the development VM (tests/fixtures/iomem/README.md) -------

ROOT = (FIXTURES / "iomem" / "vm-6.18-x86_64.root").read_bytes()
NONROOT = (FIXTURES / "iomem" / "vm-6.18-x86_64.nonroot").read_bytes()
MEMINFO = (FIXTURES / "iomem" / "vm-6.18-x86_64.meminfo").read_text()


def test_every_line_parsed_with_depth():
    lines = ROOT.decode().splitlines()
    res = parse_iomem(ROOT)
    assert len(res) == len(lines)
    for line, r in zip(lines, res):
        assert r.depth == (len(line) - len(line.lstrip(" "))) // 2
        assert line.strip() == "%0*x-%0*x : %s" % (len(line.split("-")[0].strip()), r.start,
                                                   len(line.split("-")[1].split()[0]), r.end, r.name)
        assert r.size == r.end - r.start + 1


def test_system_ram_is_top_level_ranges_and_covers_memtotal():
    ram = system_ram_bytes(parse_iomem(ROOT))
    expected = sum(b - a + 1 for a, b in hex_ranges(ROOT.decode(), "System RAM", True))
    assert ram == expected
    assert ram >= meminfo_total_bytes(MEMINFO)


def test_kernel_image_parts_match_the_boot_line():
    """Same boot: the iomem kernel ranges are the sections the boot line sizes (x86: _text.._etext etc.)."""
    parts = kernel_image_parts(parse_iomem(ROOT))
    line = parse_boot_memory_line((FIXTURES / "boot_memory_line" / "vm-6.18-x86_64.dmesg").read_bytes())
    assert parts["Kernel code"] >> 10 == line["kernel code"]
    assert parts["Kernel rodata"] >> 10 == line["rodata"]
    assert parts["Kernel data"] >> 10 == line["rwdata"]
    assert parts["Kernel bss"] >> 10 == line["bss"]
    assert kernel_image_bytes(parse_iomem(ROOT)) == sum(parts.values())
    # The kernel image sits inside System RAM, and is far smaller than it.
    assert kernel_image_bytes(parse_iomem(ROOT)) < system_ram_bytes(parse_iomem(ROOT))


def test_boot_line_total_fits_in_system_ram():
    line = parse_boot_memory_line((FIXTURES / "boot_memory_line" / "vm-6.18-x86_64.dmesg").read_bytes())
    assert line["total"] * 1024 <= system_ram_bytes(parse_iomem(ROOT))


def test_unprivileged_copy_gives_none_not_zero():
    res = parse_iomem(NONROOT)
    assert [r.name for r in res] == [r.name for r in parse_iomem(ROOT)]
    assert addresses_hidden(res)
    assert system_ram_bytes(res) is None
    assert kernel_image_bytes(res) is None
    assert kernel_image_parts(res) is None


def test_absent_kernel_resources_are_none():
    # iomem without "Kernel ..." lines (e.g. inside a container that hides them).
    text = b"".join(line + b"\n" for line in ROOT.splitlines() if b"Kernel" not in line)
    res = parse_iomem(text)
    assert kernel_image_bytes(res) is None
    assert system_ram_bytes(res) == system_ram_bytes(parse_iomem(ROOT))


def test_empty_and_junk():
    assert parse_iomem(b"") == []
    assert system_ram_bytes([]) is None
    assert kernel_image_bytes([]) is None
    assert parse_iomem(b"garbage\n\n00000000-00000fff : Reserved\n") == [IomemResource(0, 0xFFF, "Reserved", 0)]


def test_old_kernel_without_rodata_or_bss():
    # Old kernels registered only "Kernel code" and "Kernel data"; a missing
    # part is absent from the dict, not 0.  System RAM is split around ACPI.
    text = (FIXTURES / "iomem" / "linux-2.4-i386-bugreport.iomem").read_text()
    res = parse_iomem(text.encode())
    code = hex_ranges(text, "Kernel code", False)
    data = hex_ranges(text, "Kernel data", False)
    assert kernel_image_parts(res) == {"Kernel code": code[0][1] - code[0][0] + 1,
                                       "Kernel data": data[0][1] - data[0][0] + 1}
    ram = hex_ranges(text, "System RAM", True)
    assert len(ram) == 3
    assert system_ram_bytes(res) == sum(b - a + 1 for a, b in ram)
    assert not addresses_hidden(res)


def test_no_iomem_in_realproc():
    """Any iomem in shared/realproc (none yet) parses, every line into one resource."""
    if not REALPROC.is_dir():
        pytest.skip("shared/realproc not present")
    found = list(REALPROC.glob("*/proc/iomem"))
    if not found:
        pytest.skip("no recorded iomem in shared/realproc")
    for path in found:
        lines = [l for l in path.read_bytes().splitlines() if l.strip()]
        assert len(parse_iomem(path.read_bytes())) == len(lines), path


# --- this machine, live ----------------------------------------------------

def test_live_iomem():
    try:
        data = Path("/proc/iomem").read_bytes()
    except OSError:
        pytest.skip("/proc/iomem not readable")
    res = parse_iomem(data)
    assert res, "no resources parsed from /proc/iomem"
    if addresses_hidden(res):   # read without CAP_SYS_ADMIN
        assert system_ram_bytes(res) is None
        return
    ram = system_ram_bytes(res)
    assert ram is not None and ram >= meminfo_total_bytes(Path("/proc/meminfo").read_text())


def test_live_iomem_hidden_from_unprivileged_reader():
    if os.geteuid() != 0:
        pytest.skip("needs root to drop privileges")
    try:
        out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              "cat", "/proc/iomem"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("setpriv unavailable")
    res = parse_iomem(out)
    if not addresses_hidden(res):
        pytest.skip("this kernel shows /proc/iomem addresses to everyone (< 4.15)")
    assert system_ram_bytes(res) is None


def test_live_kernel_parts_match_live_boot_line():
    if platform.machine() != "x86_64" or os.geteuid() != 0:
        pytest.skip("x86_64 as root only (other arches register different ranges)")
    res = parse_iomem(Path("/proc/iomem").read_bytes())
    try:
        log = subprocess.run(["dmesg"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("dmesg unavailable")
    line = parse_boot_memory_line(log)
    parts = kernel_image_parts(res)
    if line is None or parts is None or "rodata" not in line:
        pytest.skip("boot line no longer in the log, or no kernel ranges")
    assert parts["Kernel code"] >> 10 == line["kernel code"]
    assert parts["Kernel data"] >> 10 == line["rwdata"]
    assert line["total"] * 1024 <= system_ram_bytes(res)
