"""What -w's sizing leaves in doubt, said on stderr (smem/sizing_warnings.py): what an embedded
developer meets sizing a board from its capture.  An -R below MemTotal (a size to try, or one
without its unit), a -K image of another kernel than the capture ran or no image at all, and a
capture that gives neither installed RAM nor the kernel image (C smemcap's, made here in a PID
namespace), whose 0s the table shows as smem 1.5 did.
"""

import os
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, run_smem
from elf_files import KERNEL_LIKE_SECTIONS, hand_elf

#: a capture of the development VM (capture-info kernel=6.18.44-fc-v1045, MemTotal 23.5 GiB)
CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


@pytest.mark.uses("cpu")
def test_realmem_below_memtotal_says_what_r_was_read_as_and_what_answers_would_it_fit():
    """An embedded developer asks whether a 256 MiB part would do with -R 256M: -R is the RAM the
    machine measured has, so the warning points to --recommend; and -R 256 (no unit) is 256 bytes,
    which the warning says, since it reads as 256 MiB to whoever typed it."""
    tree = CAPTURE
    err = run_smem("-S", tree, "-w", "-R", "256M").stderr.decode()
    # -R as given (256M, in smem's human unit), and in the table's unit beside MemTotal's
    assert "-R 256.0M (262144 KiB) is less than the memory the kernel manages" in err, err
    assert "not a size to try" in err and "--recommend" in err, err
    human = run_smem("-S", tree, "-w", "-R", "256M", "-k").stderr.decode()
    assert "-R 256.0M is less than" in human, human
    bare = run_smem("-S", tree, "-w", "-R", "256").stderr.decode()
    assert "-R 256 bytes (a size without a unit is bytes: 256M is 256 MiB) is less than" in bare, bare
    asked = run_smem("-S", tree, "-w", "-R", "256M", "--recommend").stderr.decode()
    assert "-R 256.0M (262144 KiB) is less than" in asked and "--recommend" not in asked, asked  # already asked
    assert err.count("\n") == 1  # one line still


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("given, read", [("1K", "-R 1.0K (1 KiB)"), ("1KiB", "-R 1.0K (1 KiB)"),
                                         ("512B", "-R 512 bytes"), ("0.5M", "-R 512.0K (512 KiB)"),
                                         ("1.5K", "-R 1536 bytes"), ("2000B", "-R 2000 bytes")])
def test_realmem_with_a_unit_is_not_said_to_be_without_one(given, read):
    """-R 1K said "a size without a unit is bytes: 1024M is 1024 MiB" of a size written with its
    unit: that hint is for a bare number only; a small size with a unit is shown as read."""
    err = run_smem("-S", CAPTURE, "-w", "-R", given).stderr.decode()
    assert f"smem: warning: {read} is less than the memory the kernel manages" in err, err
    assert "without a unit" not in err, err


def test_a_kernel_image_of_another_release_than_the_capture_ran_is_warned_about(tmp_path):
    """A board's developer has several build trees: -K with the wrong one's vmlinux sized it
    silently.  Its banner's release (``Linux version R``) against the capture's kernel: a warning
    naming both where they differ, nothing where they agree."""
    capture = CAPTURE
    elf = hand_elf(64, "little", KERNEL_LIKE_SECTIONS)
    other, same = tmp_path / "vmlinux-5.10", tmp_path / "vmlinux"
    other.write_bytes(elf + b"Linux version 5.10.0-board (dev@build) (gcc 10) #1 SMP PREEMPT\n\0")
    same.write_bytes(elf + b"Linux version 6.18.44-fc-v1045 (dev@build) (gcc 14) #1 SMP\n\0")
    proc = run_smem("-S", capture, "-w", "-K", other)
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stderr.decode().splitlines()
    assert line == (f"smem: warning: -K {other} is Linux 5.10.0-board, but capture {capture} ran "
                    "6.18.44-fc-v1045: sized anyway; give the image of the kernel that ran"), line
    assert run_smem("-S", capture, "-w", "-K", same).stderr == b""


def test_k_given_a_directory_for_a_capture_names_the_build_trees_vmlinux_not_this_boxs(tmp_path):
    """-K a directory said "e.g. /boot/vmlinuz-$(uname -r)": for a capture of a board that is the
    development box's kernel, not the board's."""
    capture = CAPTURE
    line = run_smem("-S", capture, "-w", "-K", tmp_path).stderr.decode()
    assert line.endswith(f"give the image file, e.g. the build tree's vmlinux of the kernel capture {capture} "
                         "ran, 6.18.44-fc-v1045\n"), line
    live = run_smem("-w", "-K", tmp_path).stderr.decode()
    assert live.endswith("e.g. /boot/vmlinuz-$(uname -r)\n"), live


@pytest.mark.skipif(not Path("/usr/bin/smemcap").exists(), reason="Debian's C smemcap is not installed")
def test_a_capture_that_says_neither_ram_nor_kernel_size_says_why_they_are_0(tmp_path, pid_namespace):
    """C smemcap captures meminfo and the processes only: -w showed firmware/hardware and kernel
    image as 0 with nothing said (smem 1.5's table, which stays).  A warning names what the capture
    lacks and the options that give it; with -R and -K given, nothing is said."""
    capture = tmp_path / "c.tar"
    with open(capture, "wb") as out:
        subprocess.run(pid_namespace.argv(["/usr/bin/smemcap"]), stdout=out, check=True, timeout=120)
    proc = run_smem("-S", capture, "-w")
    assert proc.returncode == 0, proc.stderr
    rows = {l[:24].strip(): l[24:].split() for l in proc.stdout.decode().splitlines()[1:]}
    assert rows["firmware/hardware"][0] == "0" and rows["kernel image"][0] == "0"  # (smem 1.5's table)
    (line,) = proc.stderr.decode().splitlines()
    assert line == (f"smem: warning: capture {capture} says neither the installed RAM nor the kernel image's "
                    "size (it has no iomem, firmware memmap or boot log: C smemcap's, or not taken as root): "
                    "firmware/hardware and kernel image show 0; give -R SIZE and -K vmlinux"), line
    kernel = tmp_path / "vmlinux"
    kernel.write_bytes(hand_elf(64, "little", KERNEL_LIKE_SECTIONS) + f"Linux version {os.uname().release} \n".encode())
    assert run_smem("-S", capture, "-w", "-R", "32G", "-K", kernel).stderr == b""
    only_ram = run_smem("-S", capture, "-w", "-R", "32G").stderr.decode()
    assert "says no kernel image size" in only_ram and "give -K vmlinux" in only_ram, only_ram
