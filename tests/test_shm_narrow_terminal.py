"""smem --shm on a terminal of 80 or 100 columns: every line of the table fits the terminal (its
lines were 118 wide, so the terminal broke each in two and no column stood under its header),
the figures stand under their headers, whole, and the Processes list is cut with its +N (on the
row's line where it has room, else on a line of its own under the row).

Real objects: a /dev/shm file and a SysV segment, mapped by six processes.
"""

import ctypes
import json
import os
import re
import subprocess
import sys
import uuid

import pytest

from conftest import run_smem, run_smem_on_a_terminal

#: the parent creates and attaches a SysV segment, maps the /dev/shm file, touching each page of
#: both, and forks five children that keep both mappings ("web content": a name with a space)
MAPPERS = r"""
import ctypes, mmap, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = int(sys.argv[2])
addr = libc.shmat(shmid, None, 0)
ctypes.memset(addr, 1, 2 << 20)
with open(sys.argv[1], "r+b") as f:
    shared = mmap.mmap(f.fileno(), 0)
for offset in range(0, len(shared), mmap.PAGESIZE):
    shared[offset] = 1
for _ in range(5):
    if os.fork() == 0:
        libc.prctl(15, b"web content", 0, 0, 0)  # PR_SET_NAME
        sys.stdin.read()
        os._exit(0)
print("ready", flush=True)
sys.stdin.read()
"""

IPC_PRIVATE, IPC_CREAT, IPC_RMID = 0, 0o1000, 0


@pytest.fixture(scope="module")
def objects():
    """(the /dev/shm file's path, the SysV segment's shmid), each mapped by six processes."""
    libc = ctypes.CDLL(None, use_errno=True)
    shmid = libc.shmget(IPC_PRIVATE, 2 << 20, IPC_CREAT | 0o600)
    if shmid < 0:
        pytest.skip("no SysV shared memory here")
    path = f"/dev/shm/smem-narrow-{uuid.uuid4().hex[:6]}"
    with open(path, "wb") as f:
        f.truncate(8 << 20)
    proc = subprocess.Popen([sys.executable, "-c", MAPPERS, path, str(shmid)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"ready\n"
        yield path, shmid
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        os.unlink(path)
        libc.shmctl(shmid, IPC_RMID, None)


AMOUNTS = ("Size", "RSS", "Swap", "Mapped", "Unmapped")


@pytest.mark.parametrize("columns", [80, 100])
def test_the_table_fits_the_terminal_and_keeps_its_figures(objects, columns):
    path, shmid = objects
    document = json.loads(run_smem("--shm", "-F", "json", check=True).stdout)
    lines = run_smem_on_a_terminal(["--shm", "-t"], columns)
    header = lines[0]
    assert header.split()[:2] == ["Kind", "Name"], lines
    table = lines[:next(i for i, line in enumerate(lines) if line.startswith("---")) + 2]
    too_wide = [line for line in table if len(line) >= columns]
    assert not too_wide, "\n".join(too_wide)
    for name, kind in ((path, "file"), (f"id {shmid}", "sysv")):
        row = next(r for r in document["rows"] if r["kind"] == kind and name in r["name"])
        n = next(i for i, line in enumerate(lines) if line.startswith(kind) and name in line)
        line = lines[n]
        assert row["name"] in line  # the name whole
        for header_word in AMOUNTS:  # each figure whole, under its header (right-aligned)
            end = header.index(header_word) + len(header_word)
            figure = str(row[header_word.lower()])
            assert line[end - len(figure):end] == figure and line[end - len(figure) - 1] == " ", (header_word, line)
        cell = line[header.index("Unmapped") + len("Unmapped"):].strip() or lines[n + 1].strip()
        whole = row["processes"]
        names, more = _labels(cell[:cell.rindex(" ")]), cell.rsplit(" ", 1)[1]
        assert more.startswith("+") and len(names) >= 1 and len(names) + int(more[1:]) == 6, cell
        assert names == _labels(whole)[:len(names)]


def _labels(text):
    """The name[pid]s of a Processes cell."""
    return re.findall(r"\S[^\[\]]*\[\d+\](?:\(fd\))?", text)


@pytest.mark.parametrize("columns", [80, 100])
def test_the_notes_under_the_table_wrap_at_words(objects, columns):
    """The notes under the table (how files count, meminfo's Shmem beside the rows) were lines of
    140 characters, which the terminal broke in the middle of words."""
    lines = run_smem_on_a_terminal(["--shm", "-t"], columns)
    notes = lines[next(i for i, line in enumerate(lines) if line.startswith("---")) + 2:]
    assert any(line.startswith("files are part of their mount") for line in notes), notes
    too_wide = [line for line in notes if len(line) >= columns]
    assert not too_wide, "\n".join(too_wide)
    said = " ".join(line.strip() for line in notes)
    assert "files are part of their mount: totals count the mount, not the file again" in said, said
