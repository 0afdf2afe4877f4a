"""parse_memmap() on this machine's /sys/firmware/memmap and a recorded copy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from smem.parsers.boot_memory_line import parse_boot_memory_line
from smem.parsers.iomem import parse_iomem, system_ram_bytes
from smem.parsers.memmap import MemmapEntry, parse_memmap, parse_memmap_entries

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def read_memmap(root: Path) -> list[tuple[bytes, bytes, bytes]]:
    entries = sorted((p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    return [((e / "start").read_bytes(), (e / "end").read_bytes(), (e / "type").read_bytes()) for e in entries]


def memtotal_bytes(text: str) -> int:
    return int(re.search(r"^MemTotal:\s+(\d+) kB", text, re.M).group(1)) * 1024


RECORDED = FIXTURES / "memmap" / "vm-6.18-x86_64"


def test_recorded_entries():
    raw = read_memmap(RECORDED)
    entries = parse_memmap_entries(raw)
    assert len(entries) == len(raw)
    for (start, end, type_), e in zip(raw, entries):
        assert e == MemmapEntry(int(start, 0), int(end, 0), type_.decode().rstrip("\n"))
        assert e.start <= e.end


def test_recorded_ram_covers_memtotal_and_boot_total():
    ram = parse_memmap(read_memmap(RECORDED))
    meminfo = (FIXTURES / "iomem" / "vm-6.18-x86_64.meminfo").read_text()
    line = parse_boot_memory_line((FIXTURES / "boot_memory_line" / "vm-6.18-x86_64.dmesg").read_bytes())
    assert ram >= memtotal_bytes(meminfo)
    assert ram >= line["total"] * 1024
    # The firmware's map is what the kernel started from: its RAM is at least
    # what the kernel kept as System RAM (here it reserved page 0).
    iomem_ram = system_ram_bytes(parse_iomem((FIXTURES / "iomem" / "vm-6.18-x86_64.root").read_bytes()))
    assert iomem_ram <= ram


def test_no_system_ram_is_none():
    assert parse_memmap([]) is None
    assert parse_memmap([(b"0x9fc00\n", b"0xfffff\n", b"Reserved\n")]) is None


def test_bad_number_raises_valueerror():
    with pytest.raises(ValueError):
        parse_memmap([(b"zz\n", b"0x1\n", b"System RAM\n")])


def test_live_memmap():
    root = Path("/sys/firmware/memmap")
    if not root.is_dir() or not any(root.iterdir()):
        pytest.skip("no /sys/firmware/memmap on this machine")
    ram = parse_memmap(read_memmap(root))
    assert ram is not None
    assert ram >= memtotal_bytes(Path("/proc/meminfo").read_text())
