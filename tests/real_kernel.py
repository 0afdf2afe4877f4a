"""A real distribution kernel for the tests: fetched into tests/.cache by tests/fetch_kernel.sh or
given as a .deb in SMEM_TEST_KERNEL_DEB, and its vmlinux extracted the way the kernel's
scripts/extract-vmlinux does, so that what smem finds in it is checked against another reader.
Shared by test_kernel_image.py and test_system_view.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"

# scripts/extract-vmlinux: magic, then the command that decompresses from it.
EXTRACTORS = [
    (b"\x1f\x8b\x08", ["gunzip", "-c"]),
    (b"\xfd7zXZ\x00", ["unxz", "-c"]),
    (b"BZh", ["bunzip2", "-c"]),
    (b"\x5d\x00\x00\x00", ["unlzma", "-c"]),
    (b"\x28\xb5\x2f\xfd", ["zstd", "-d", "-c"]),
    (b"\x02\x21\x4c\x18", ["lz4", "-d", "-c"]),
]


def real_vmlinuz(tmp_path: Path) -> Path | None:
    deb = os.environ.get("SMEM_TEST_KERNEL_DEB")
    if deb:
        subprocess.run(["dpkg-deb", "-x", deb, str(tmp_path / "deb")], check=True)
        found = sorted((tmp_path / "deb" / "boot").glob("vmlinuz-*"))
        return found[0] if found else None
    found = sorted(CACHE.glob("root/boot/vmlinuz-*"))
    return found[0] if found else None


#: the tool of EXTRACTORS -> the Python package smem decompresses its kind with, beyond the
#: standard library (smem's 'compression' extra)
MODULES = {"zstd": "zstandard", "lz4": "lz4"}


def extract_vmlinux(image: bytes, tmp_path: Path) -> Path | None:
    """The kernel's extract-vmlinux approach: try each magic's first offset with the CLI tool.

    A kind smem reads only with an extra's package (zstd, lz4) skips the test where that package
    is missing: smem would rightly say to install it, not read the kernel."""
    for magic, cmd in EXTRACTORS:
        pos = image.find(magic)
        if pos < 0 or shutil.which(cmd[0]) is None:
            continue
        # The tools exit non-zero on the trailing bytes after the stream, but
        # have written the stream's whole output by then.
        out = subprocess.run(cmd, input=image[pos:], capture_output=True).stdout
        if out[:4] == b"\x7fELF":
            if cmd[0] in MODULES:
                pytest.importorskip(MODULES[cmd[0]], reason=f"smem reads {cmd[0]} kernels with smem[compression]")
            path = tmp_path / "vmlinux"
            path.write_bytes(out)
            return path
    return None
