"""parse_boot_memory_line() on real kernel logs from Linux 2.4 to 6.18."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from smem.parsers.boot_memory_line import parse_boot_memory_line

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "boot_memory_line"

# Expected values are the numbers printed in each recorded line
# (tests/fixtures/boot_memory_line/README.md says where each comes from).
CASES = {
    "linux-2.4.21-alpha.log": {
        "available": 252720, "total": 261240, "kernel code": 2094, "reserved": 6472,
        "data": 451, "init": 320},
    "linux-2.6.16-i386.log": {
        "available": 110260, "total": 122368, "kernel code": 2095, "reserved": 11496,
        "data": 591, "init": 332, "highmem": 0},
    "linux-2.6-arm-fh8833.kmsg": {
        "available": 26544, "total": 26544, "reserved": 4176, "highmem": 0},
    "linux-3.18-i386.log": {
        "available": 263664, "total": 327160, "kernel code": 14140, "rwdata": 2787,
        "rodata": 5824, "init": 884, "bss": 11136, "reserved": 63496, "highmem": 0},
    "linux-4.4-x86_64-syslog.log": {
        "available": 15375492, "total": 15728196, "kernel code": 8272, "rwdata": 1304,
        "rodata": 4004, "init": 1496, "bss": 1316, "reserved": 352704, "cma-reserved": 0},
    "linux-4.14-armv7-zynq.log": {
        "available": 1023252, "total": 1048576, "kernel code": 8192, "rwdata": 684,
        "rodata": 2472, "init": 1024, "bss": 593, "reserved": 25324, "cma-reserved": 0,
        "highmem": 262144},
    "linux-4.19-arm64-rockchip.log": {
        "available": 1999424, "total": 2078720, "kernel code": 14590, "rwdata": 2022,
        "rodata": 5220, "init": 1600, "bss": 558, "reserved": 62912, "cma-reserved": 16384},
    "vm-6.18-x86_64.dmesg": {
        "available": 3217664, "total": 25165432, "kernel code": 18906, "rwdata": 2544,
        "rodata": 10284, "init": 3752, "bss": 1220, "reserved": 497048, "cma-reserved": 0},
}
CASES["vm-6.18-x86_64.kmsg"] = CASES["vm-6.18-x86_64.dmesg"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_recorded_logs(name):
    assert parse_boot_memory_line((FIXTURES / name).read_bytes()) == CASES[name]


def test_every_fixture_has_a_case():
    assert sorted(p.name for p in FIXTURES.iterdir() if p.name != "README.md") == sorted(CASES)


def test_available_never_exceeds_total():
    for name in CASES:
        f = parse_boot_memory_line((FIXTURES / name).read_bytes())
        assert f["available"] <= f["total"], name


def test_no_line_is_none():
    assert parse_boot_memory_line(b"") is None
    assert parse_boot_memory_line(b"[    0.000000] Memory: 30MB = 30MB total\n") is None
    assert parse_boot_memory_line(b"Freeing unused kernel image (initmem) memory: 3752K\n") is None


def test_only_the_first_line_counts():
    log = (FIXTURES / "vm-6.18-x86_64.dmesg").read_bytes() + (FIXTURES / "linux-3.18-i386.log").read_bytes()
    assert parse_boot_memory_line(log) == CASES["vm-6.18-x86_64.dmesg"]


def test_live_dmesg():
    try:
        proc = subprocess.run(["dmesg"], capture_output=True)
    except OSError:
        pytest.skip("dmesg not installed")
    if proc.returncode != 0:
        pytest.skip("dmesg not readable here")
    fields = parse_boot_memory_line(proc.stdout)
    if fields is None:
        pytest.skip("the boot line has left the kernel log buffer")
    assert 0 < fields["available"] <= fields["total"]
    assert fields["kernel code"] > 0
