"""A command line padded with NULs (PostgreSQL's process titles): the padding is not the command.

The process here rewrites its own argv area as PostgreSQL does on Linux (the title, then NULs to
the end of the area), so /proc/PID/cmdline holds the title and a run of NULs.
"""

import csv
import io
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import run_smem

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs /proc smaps")

TITLE = b"postgres: smem-padded checkpointer"

#: overwrite the argv area (stat fields 48 and 49: arg_start, arg_end) with TITLE and NULs
RETITLE = textwrap.dedent(f"""
    import ctypes, sys
    fields = open("/proc/self/stat", "rb").read().rsplit(b")", 1)[1].split()
    start, end = int(fields[45]), int(fields[46])
    title = {TITLE!r}
    ctypes.memmove(start, title + b"\\0" * (end - start - len(title)), end - start)
    print("READY", flush=True)
    sys.stdin.read()
""")


@pytest.fixture(scope="module")
def padded():
    proc = subprocess.Popen([sys.executable, "-c", RETITLE, "x" * 200], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"READY\n"
        with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
            raw = f.read()
        assert raw.startswith(TITLE + b"\0" * 100), raw  # what the kernel gives: the padding too
        yield proc.pid
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_json_and_csv_carry_the_title_without_padding(padded):
    rows = json.loads(run_smem("-F", "json", "--pid", padded, check=True).stdout)["rows"]
    assert [r["command"] for r in rows] == [TITLE.decode()]
    table = list(csv.DictReader(io.StringIO(run_smem("-F", "csv", "--pid", padded, check=True).stdout.decode())))
    assert [r["command"] for r in table] == [TITLE.decode()]


def test_whole_command_lines_end_with_the_title(padded):
    """-a off a terminal shows whole command lines: the column is as wide as the title."""
    wide = run_smem("-a", "-c", "command pid", "--pid", padded, check=True).stdout.decode()
    assert wide.splitlines()[1].startswith(TITLE.decode() + " ") and len(wide.splitlines()[1]) < 60


@pytest.mark.skipif(not os.path.exists("/usr/bin/smem"), reason="smem 1.5 (/usr/bin/smem) not installed")
def test_the_classic_table_is_still_smem15s(padded):
    """smem 1.5 turned the padding into spaces, which its 27-character column pads to anyway."""
    args = ["-c", "pid user command", "-P", "smem-padded"]
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    theirs = subprocess.run(["/usr/bin/smem", *args], capture_output=True, env=env, timeout=120).stdout
    ours = run_smem(*args, check=True).stdout
    row = lambda out: [l for l in out.splitlines() if l.split()[:1] == [str(padded).encode()]]
    assert row(ours) == row(theirs) and len(row(ours)) == 1
