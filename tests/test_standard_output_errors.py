"""Help and version written to a standard output that cannot take them (a full disk) are one line
on stderr and exit status 1, as the report's are: `smem --help > /dev/full` printed Python's
traceback."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _smem(args, stdout):
    return subprocess.run([sys.executable, "-m", "smem", *args], stdout=stdout, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, cwd=ROOT)


def _to_full_disk(args):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "wb") as full:
        return _smem(args, full)


@pytest.mark.process
@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"], ["diff", "--help"], ["capture", "--help"]])
def test_help_and_version_to_a_full_disk_are_one_line(args):
    proc = _to_full_disk(args)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and err == "smem: cannot write to standard output: No space left on device\n", err
