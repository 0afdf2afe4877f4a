"""smem --shm's Processes column, cut to its width in a table, says how many processes it left
out: a /dev/shm file six forks map showed 'python3[101] python3[102]' and nothing more, as if
two mapped it.  The forks and smem run in the module's PID namespace (conftest's pid_namespace):
--shm reads every process's mappings, thousands on a busy machine."""

import json
import os
import re
import subprocess
import sys
import uuid

import pytest

from conftest import run_smem_in
from shm_mappers import MAP_FIRST_FILE

#: the parent maps the first file, touching each page, and forks five children, which keep the
#: mapping and name themselves "web content" (a name with a space, as Firefox's processes have);
#: then maps the second file alone; all wait on stdin
MAPPERS = MAP_FIRST_FILE + r"""
import ctypes
for _ in range(5):
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(15, b"web content", 0, 0, 0)  # PR_SET_NAME
        sys.stdin.read()
        os._exit(0)
with open(sys.argv[2], "r+b") as f:
    alone = mmap.mmap(f.fileno(), 0)
for offset in range(0, len(alone), mmap.PAGESIZE):
    alone[offset] = 1
print("ready", flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def files(pid_namespace):
    """Two /dev/shm files of 64 MiB (among a mount's largest, which alone are listed): the first
    mapped by six processes, the second by one."""
    paths = [f"/dev/shm/smem-cut-{uuid.uuid4().hex[:6]}-{n}" for n in (6, 1)]  # (within Name's 32)
    for path in paths:
        with open(path, "wb") as f:
            f.truncate(64 << 20)
    proc = subprocess.Popen(pid_namespace.argv([sys.executable, "-c", MAPPERS, *paths]), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"ready\n"
        yield paths
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        for path in paths:
            os.unlink(path)


def test_a_cut_list_of_processes_says_how_many_more(files, pid_namespace):
    """+N counts the processes left out, not the words: "web content[102]" is one."""
    six, one = files
    document = json.loads(run_smem_in(pid_namespace, "--shm", "-F", "json", check=True).stdout)
    whole = next(r["processes"] for r in document["rows"] if r["name"] == six)
    assert len(_labels(whole)) == 6 and "web content[" in whole, whole
    table = run_smem_in(pid_namespace, "--shm", "-c", "name processes", check=True).stdout
    cell = _cell(table, six)
    names, more = _labels(cell[:cell.rindex(" ")]), cell.rsplit(" ", 1)[1]
    assert len(cell) <= 30 and more.startswith("+") and len(names) + int(more[1:]) == 6, cell
    assert names == _labels(whole)[:len(names)]
    alone = _cell(table, one)
    assert len(_labels(alone)) == 1 and "+" not in alone, alone  # (a list that fits: no mark)


def _labels(text):
    """The name[pid]s of a Processes cell."""
    return re.findall(r"\S[^\[\]]*\[\d+\](?:\(fd\))?", text)


def _cell(table, path):
    line = next(line for line in table.decode().splitlines() if path in line)
    return line[line.index(path) + len(path):].strip()
