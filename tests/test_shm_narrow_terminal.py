"""smem --shm on a terminal of 80 or 100 columns: every line of the table fits the terminal (its
lines were 118 wide, so the terminal broke each in two and no column stood under its header),
the figures stand under their headers, whole, and the Processes list is cut with its +N (on the
row's line where it has room, else on a line of its own under the row); where even that line is
too wide (a large machine's figures, 8 digits in five columns), the figures as -k shows them.

Real objects: a /dev/shm file and a SysV segment, mapped by six processes; and a capture of a
/dev/shm file one process maps, its figures made a large machine's.  The six processes and the
live reports run in the module's PID namespace (conftest's pid_namespace): --shm reads every
process's mappings, thousands on a busy machine."""

import ctypes
import json
import os
import re
import subprocess
import sys
import uuid

import pytest

from conftest import run_smem, run_smem_in, run_smem_on_a_terminal
from shm_mappers import MAP_FIRST_FILE, READY_THEN_WAIT

#: the parent maps the /dev/shm file and attaches a SysV segment, touching each page of both, and
#: forks five children that keep both mappings ("web content": a name with a space)
MAPPERS = MAP_FIRST_FILE + r"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shmid = int(sys.argv[2])
addr = libc.shmat(shmid, None, 0)
ctypes.memset(addr, 1, 2 << 20)
for _ in range(5):
    if os.fork() == 0:
        libc.prctl(15, b"web content", 0, 0, 0)  # PR_SET_NAME
        sys.stdin.read()
        os._exit(0)
""" + READY_THEN_WAIT

IPC_PRIVATE, IPC_CREAT, IPC_RMID = 0, 0o1000, 0


@pytest.fixture(scope="module")
def objects(pid_namespace):
    """(the /dev/shm file's path, the SysV segment's shmid), each mapped by six processes of
    ``pid_namespace``."""
    libc = ctypes.CDLL(None, use_errno=True)
    shmid = libc.shmget(IPC_PRIVATE, 2 << 20, IPC_CREAT | 0o600)
    if shmid < 0:
        pytest.skip("no SysV shared memory here")
    path = f"/dev/shm/smem-narrow-{uuid.uuid4().hex[:6]}"
    with open(path, "wb") as f:
        f.truncate(8 << 20)
    proc = subprocess.Popen(pid_namespace.argv([sys.executable, "-c", MAPPERS, path, str(shmid)]),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
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
def test_the_table_fits_the_terminal_and_keeps_its_figures(objects, pid_namespace, columns):
    path, shmid = objects
    document = json.loads(run_smem_in(pid_namespace, "--shm", "-F", "json", check=True).stdout)
    lines = run_smem_on_a_terminal(["--shm", "-t"], columns, pid_namespace)
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
def test_the_notes_under_the_table_wrap_at_words(objects, pid_namespace, columns):
    """The notes under the table (how files count, meminfo's Shmem beside the rows) were lines of
    140 characters, which the terminal broke in the middle of words."""
    lines = run_smem_on_a_terminal(["--shm", "-t"], columns, pid_namespace)
    notes = lines[next(i for i, line in enumerate(lines) if line.startswith("---")) + 2:]
    assert any(line.startswith("files are part of their mount") for line in notes), notes
    too_wide = [line for line in notes if len(line) >= columns]
    assert not too_wide, "\n".join(too_wide)
    said = " ".join(line.strip() for line in notes)
    assert "files are part of their mount: totals count the mount, not the file again" in said, said


#: a process that maps the file named by its first argument, touching each page, and waits
MAPPER = MAP_FIRST_FILE + READY_THEN_WAIT

GIB = 1 << 30
#: the file's figures in the capture (bytes): a 40 GiB file, 30 in RAM, 10 in swap, 20 of it mapped
SIZE, RAM, SWAP, MAPPED = 40 * GIB, 30 * GIB, 10 * GIB, 20 * GIB


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """A capture of this machine's shared memory and one process that maps a /dev/shm file, with
    the file's figures (and its mount's) made those of a large machine, 8 digits in KiB in each
    of the five figure columns: (the capture, the file's path)."""
    import io
    import tarfile
    from smem.capture_writer import write_capture
    from smem.sources import LiveSource
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    path = f"/dev/shm/smem-wide-{uuid.uuid4().hex[:12]}"
    with open(path, "wb") as f:
        f.write(b"f" * (1 << 20))
    mapper = subprocess.Popen([sys.executable, "-c", MAPPER, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    class TheMapper(LiveSource):
        def pids(self):
            return [mapper.pid]

    made = tmp_path_factory.mktemp("large") / "made.tar"
    try:
        assert mapper.stdout.readline() == b"ready\n"
        with open(made, "wb") as f:
            write_capture(TheMapper(), f, compression=None)
    finally:
        mapper.stdin.close()
        mapper.wait(timeout=30)
        os.unlink(path)
    out = made.with_name("large.tar")
    with tarfile.open(made) as tin, tarfile.open(out, "w") as tout:
        for m in tin:
            data = tin.extractfile(m).read() if m.isreg() else None
            if m.name == "smem/shmem":
                data = _large_inventory(data.decode(), path).encode()
            elif m.name == f"{mapper.pid}/smaps":
                data = _large_mapping(data.decode(), path).encode()
            if data is not None:
                m.size = len(data)
            tout.addfile(m, io.BytesIO(data) if data is not None else None)
    return out, path


def _large_inventory(text, path):
    """smem/shmem with the file at SIZE, RAM and SWAP, and its mount as large."""
    lines = text.splitlines()
    (file,) = [line.split(" ", 6) for line in lines if line.startswith("file ") and line.endswith(" " + path)]
    device = file[1]
    out = []
    for line in lines:
        fields = line.split(" ", 7)
        if line.startswith("file ") and line.endswith(" " + path):
            line = " ".join(fields[:3] + [str(SIZE), str(RAM + SWAP), str(RAM), path])
        elif line.startswith("mount ") and fields[1] == device and fields[3] != "-":
            line = " ".join(fields[:3] + [str(2 * SIZE), str(RAM + SWAP), "1", str(RAM), fields[7]])
        out.append(line)
    return "\n".join(out) + "\n"


def _large_mapping(smaps, path):
    """smaps with the mapping of ``path`` at MAPPED resident, all of it its PSS."""
    head = smaps.index(" " + path + "\n")
    start, end = smaps.index("\n", head) + 1, smaps.find("VmFlags", head)
    block = smaps[start:end]
    for key, kib in (("Size", SIZE), ("Rss", MAPPED), ("Pss", MAPPED), ("Shared_Clean", 0),
                     ("Private_Clean", MAPPED)):
        block = re.sub(rf"^{key}:\s+\d+ kB$", f"{key}: {kib // 1024:>14} kB", block, flags=re.M)
    return smaps[:start] + block + smaps[end:]


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("columns", [60, 80, 100])
def test_eight_digit_figures_fit_the_terminal(large, columns):
    """Five figure columns of 8 digits, the Name column full (32), the list on its own line: on 80
    columns the lines were 86 wide.  Where whole figures do not fit, they are shown as -k shows them
    (K, M, G), each under its header (on 60, the names cut shorter too); on 100 columns they fit
    whole, and the list beside them."""
    from smem.units import human
    capture, path = large
    document = json.loads(run_smem("-S", capture, "--shm", "-F", "json", check=True).stdout)
    row = next(r for r in document["rows"] if r["kind"] == "file" and r["name"] == path)
    assert len(str(row["mapped"])) == len(str(row["unmapped"])) == 8, row
    lines = run_smem_on_a_terminal(["-S", capture, "--shm", "-t"], columns)
    header = lines[0]
    table = lines[:next(i for i, line in enumerate(lines) if line.startswith("---")) + 2]
    too_wide = [line for line in table if len(line) >= columns]
    assert not too_wide, "\n".join(too_wide)
    name_width = header.index("Size") - header.index("Name") - 2  # (its start, as much as its column holds)
    n = next(i for i, line in enumerate(lines) if line.startswith("file") and path[:name_width] in line)
    line = lines[n]
    assert name_width >= (32 if columns >= 80 else 10), header
    for header_word in AMOUNTS:
        end = header.index(header_word) + len(header_word)
        kib = row[header_word.lower()]
        figure = str(kib) if columns == 100 else human(kib)
        assert line[end - len(figure):end] == figure and line[end - len(figure) - 1] == " ", (header_word, line)
    cell = line[header.index("Unmapped") + len("Unmapped"):].strip() or lines[n + 1].strip()
    assert _labels(cell) == _labels(row["processes"]), cell  # (its mapper: on its line, or the next)
