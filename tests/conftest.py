"""Shared test helpers: where the recorded data lives, and running smem as a user would."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
REALPROC = TESTS.parents[1] / "shared" / "realproc"
if not REALPROC.is_dir():
    REALPROC = TESTS.parents[2] / "shared" / "realproc"


def realproc_files(name):
    """Every recorded file called ``name`` under ../shared/realproc (empty if absent)."""
    if not REALPROC.is_dir():
        return []
    return sorted(p for p in REALPROC.rglob(name) if p.is_file())


@pytest.fixture
def realproc():
    if not REALPROC.is_dir():
        pytest.skip("../shared/realproc is not available")
    return REALPROC


def run_smem(*args, input=None, env=None, check=False):
    """Run ``python -m smem ARGS`` in a clean environment (no COLUMNS/LINES), as a user would."""
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    environment.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "smem", *map(str, args)],
                          input=input, capture_output=True, env=environment,
                          stdin=None if input is not None else subprocess.DEVNULL,
                          cwd=TESTS.parent, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"smem {args} failed ({proc.returncode}): {proc.stderr.decode()}")
    return proc


#: Python code that imports what smem may import lazily, then becomes nobody (uid 65534).
#: The interpreter may live under /root, unreadable once we are nobody, so everything smem
#: could need is imported first; then the code that follows runs as an unprivileged user.
AS_NOBODY = ("import os, sys, difflib, socket, time, json, csv, io, tarfile, gzip, bz2, lzma, pwd, grp, "
             "concurrent.futures.thread, numpy, smem.cli, smem.formats, smem.exact, smem.sizing, "
             "smem.sources.archive; os.setgroups([]); os.setgid(65534); os.setuid(65534); ")


def without_rollups(capture, out):
    """A copy of a capture without its smaps_rollup members (what smem 1.5 reads, and kernels < 4.14 give)."""
    import io
    import tarfile
    with tarfile.open(capture) as tin, tarfile.open(out, "w") as tout:
        for m in tin:
            if not m.name.endswith("/smaps_rollup"):
                tout.addfile(m, io.BytesIO(tin.extractfile(m).read()) if m.isreg() else None)
    return out
