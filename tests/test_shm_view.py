"""smem --shm on real kernel objects: a /dev/shm file nobody maps, one a child maps, a SysV
segment a child attaches and a memfd a child holds and partly maps, each of a known size,
found to the page with who maps it; a capture gives the same rows; an old capture says
what it lacks.  The child, smem's reports and captures run in the module's PID namespace
(conftest's pid_namespace): --shm reads every process's mappings, thousands on a busy machine."""

import ctypes
import dataclasses
import json
import os
import signal
import subprocess
import sys
import uuid

import pytest

from conftest import FIXTURES, TESTS, run_smem
from smem.app import plan, read_snapshot
from smem.options import Query, ReportRequest, SystemOptions, TableOptions

#: one worker builds the objects and the live report once for the module
pytestmark = pytest.mark.xdist_group("shm_view")

MIB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")

IPC_PRIVATE, IPC_CREAT, IPC_RMID = 0, 0o1000, 0

#: the child: attaches the segment and touches part of it, maps a tmpfs file, and makes a
#: memfd it writes whole and maps the start of, and maps a file privately and writes it (the
#: copies are the child's, the file's pages mapped by nobody); then waits for its stdin to close
CHILD = r"""
import ctypes, mmap, os, sys
shmid, touched, path, memfd_size, memfd_mapped, name, private = sys.argv[1:]
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
address = libc.shmat(int(shmid), None, 0)
assert address not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
ctypes.memset(address, 1, int(touched))
with open(path, "r+b") as f:
    shared = mmap.mmap(f.fileno(), 0)
for offset in range(0, len(shared), mmap.PAGESIZE):
    shared[offset] = 2
fd = os.memfd_create(name)
os.write(fd, b"m" * int(memfd_size))
part = mmap.mmap(fd, int(memfd_mapped))
for offset in range(0, len(part), mmap.PAGESIZE):
    part[offset] = 3
with open(private, "r+b") as f:  # mapped privately, each page written: copies of its own
    copied = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE)
for offset in range(0, len(copied), mmap.PAGESIZE):
    copied[offset] = 4
print(os.fstat(fd).st_ino, flush=True)
sys.stdin.read()
"""


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    libc.shmctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    return libc


@pytest.fixture(scope="module")
def objects(pid_namespace):
    """The objects, and the child (pid: as the namespace names it) that maps them; all removed
    afterwards."""
    if not os.path.isdir("/dev/shm") or not os.path.exists("/proc/sysvipc/shm"):
        pytest.skip("no /dev/shm or no SysV IPC")
    tag = f"smem-shm-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    unmapped, mapped, private = (f"/dev/shm/{tag}-{kind}" for kind in ("unmapped", "mapped", "private"))
    libc = _libc()
    shmid = libc.shmget(IPC_PRIVATE, 4 * MIB, IPC_CREAT | 0o600)
    if shmid < 0:
        pytest.skip(f"shmget failed: {os.strerror(ctypes.get_errno())}")
    child = inside = None
    try:
        with open(unmapped, "wb") as f:
            f.write(b"u" * (8 * MIB))
        with open(mapped, "wb") as f:
            f.write(b"v" * (2 * MIB))
        with open(private, "wb") as f:
            f.write(b"p" * MIB)
        child = subprocess.Popen(pid_namespace.argv([sys.executable, "-c", CHILD, str(shmid), str(3 * MIB), mapped,
                                                     str(6 * MIB), str(2 * MIB), tag, private]),
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        inside = pid_namespace.command_pid(child)
        memfd_inode = int(child.stdout.readline())
        yield dict(tag=tag, unmapped=unmapped, mapped=mapped, private=private, shmid=shmid, memfd_inode=memfd_inode,
                   pid=pid_namespace.pid_in(inside), namespace=pid_namespace)
    finally:
        if inside is not None and inside != child.pid:
            os.kill(inside, signal.SIGKILL)  # (nsenter waits for it)
        if child is not None:
            child.kill()
            child.wait()
        libc.shmctl(shmid, IPC_RMID, None)
        for path in (unmapped, mapped, private):
            if os.path.exists(path):
                os.unlink(path)


def _smem(namespace, *args):
    """``python -m smem ARGS`` of this checkout, in ``namespace``."""
    return subprocess.run(namespace.argv([sys.executable, "-m", "smem", *args], cwd=TESTS.parent),
                          env=dict(os.environ, PYTHONPATH=str(TESTS.parent)), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=120)


def _report(namespace, *args):
    res = _smem(namespace, "--shm", "-t", "-F", "json", "-c", "all", *args)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout), res.stderr.decode()


def _ours(document, o):
    rows = document["rows"]
    found = {
        "unmapped": [r for r in rows if r["kind"] == "file" and r["name"] == o["unmapped"]],
        "mapped": [r for r in rows if r["kind"] == "file" and r["name"] == o["mapped"]],
        "private": [r for r in rows if r["kind"] == "file" and r["name"] == o["private"]],
        "sysv": [r for r in rows if r["kind"] == "sysv" and r["inode"] == o["shmid"]],
        "memfd": [r for r in rows if r["kind"] == "memfd" and r["inode"] == o["memfd_inode"]],
    }
    assert all(len(v) == 1 for v in found.values()), found
    return {k: v[0] for k, v in found.items()}


@pytest.fixture(scope="module")
def live(objects):
    return _report(objects["namespace"])


def _kib(n):
    return n // 1024


def test_each_object_is_found_to_the_page_with_who_maps_it(live, objects):
    document, _ = live
    ours = _ours(document, objects)
    child = f"[{objects['pid']}]"

    unmapped = ours["unmapped"]  # written, closed: in RAM, nobody maps it
    assert (unmapped["size"], unmapped["used"], unmapped["mapped"], unmapped["pids"]) == (_kib(8 * MIB),) * 2 + (0, 0)
    assert unmapped["processes"] == ""
    if unmapped["rss"] is not None:  # cachestat (Linux 6.5+), or no swap in use
        assert unmapped["rss"] + unmapped["swap"] == _kib(8 * MIB)
        assert unmapped["unmapped"] == unmapped["rss"]

    mapped = ours["mapped"]
    assert (mapped["size"], mapped["mapped"], mapped["pids"]) == (_kib(2 * MIB), _kib(2 * MIB), 1)
    assert child in mapped["processes"]

    sysv = ours["sysv"]  # 4 MiB asked for, 3 MiB touched by the one process attached
    assert (sysv["size"], sysv["mapped"], sysv["attached"]) == (_kib(4 * MIB), _kib(3 * MIB), 1)
    assert sysv["rss"] == _kib(3 * MIB) and sysv["unmapped"] == 0
    assert child in sysv["processes"]

    memfd = ours["memfd"]  # 6 MiB written through the descriptor, its first 2 MiB mapped
    assert (memfd["size"], memfd["used"], memfd["mapped"]) == (_kib(6 * MIB), _kib(6 * MIB), _kib(2 * MIB))
    assert memfd["name"] == objects["tag"] and child in memfd["processes"]
    if memfd["rss"] is not None:
        assert memfd["rss"] + memfd["swap"] == _kib(6 * MIB)
        assert memfd["unmapped"] == memfd["rss"] - _kib(2 * MIB)


def test_copies_of_a_private_mapping_are_not_the_file_mapped(live, objects):
    """A file mapped privately and written: the copies are the process's anonymous memory; the
    file's own pages in RAM are mapped by nobody."""
    private = _ours(live[0], objects)["private"]
    assert private["rss"] == _kib(MIB)
    assert (private["mapped"], private["unmapped"]) == (0, _kib(MIB))


def test_the_rows_are_compared_with_meminfo_shmem_even_with_unknown_ones(live, objects):
    document = live[0]
    note = [n for n in document["notes"] if n.startswith("meminfo Shmem ")]
    assert len(note) == 1
    unknown = sum(1 for r in document["rows"] if r["kind"] != "file" and r["rss"] is None)
    assert ("whose RAM is unknown" in note[0]) == (unknown > 0), (note, unknown)


def test_totals_count_a_file_once_in_its_mount(live, objects):
    document, _ = live
    rows = document["rows"]
    mount = [r for r in rows if r["kind"] == "tmpfs" and r["name"] == "/dev/shm" and r["used"] is not None]
    assert len(mount) == 1
    # the mount holds both files (and whatever else others put in /dev/shm meanwhile)
    assert mount[0]["used"] >= _kib(10 * MIB)
    assert mount[0]["mapped"] >= _kib(2 * MIB)
    counted = [r["mapped"] for r in rows if r["kind"] != "file" and r["mapped"] is not None]
    assert document["totals"]["mapped"] == sum(counted)
    assert sum(r["mapped"] for r in rows if r["mapped"] is not None) > sum(counted)  # files left out


def test_the_objects_are_values_built_once(objects, tmp_path):
    """The table, a chart's rest of a mount and a diff all read the same rows: none may change one.
    (Read here, from a capture of the namespace: this process's /proc is the machine's.)"""
    capture = tmp_path / "c.tgz"
    res = _smem(objects["namespace"], "capture", "-o", capture)
    assert res.returncode == 0, res.stderr
    request = ReportRequest(Query(view="shm", source=str(capture)), TableOptions(), None, SystemOptions())
    found = read_snapshot(request, plan(request))[0].shared_memory
    (memfd,) = [o for o in found.objects if o.kind == "memfd" and o.inode == objects["memfd_inode"]]
    (file,) = [o for o in found.objects if o.kind == "file" and o.name == objects["mapped"]]
    (mount,) = [o for o in found.objects if o.fstype is not None and o.name == file.parent and o.device == file.device]
    mapper = memfd.mappers[objects["pid"]]
    assert isinstance(found.objects, tuple) and mapper.via == "map"
    for value, name in ((found, "objects"), (memfd, "rss_kib"), (mapper, "pss_kib")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, None)
    with pytest.raises(TypeError):
        memfd.mappers[0] = mapper
    before = dict(mount.mappers), mount.mappings, mount.rss_kib
    rest, _ = mount.rest([file])
    assert (dict(mount.mappers), mount.mappings, mount.rss_kib) == before
    assert objects["pid"] not in rest.mappers or rest.mappers[objects["pid"]] != mount.mappers[objects["pid"]]


def test_a_capture_gives_the_same_rows(live, objects, tmp_path):
    capture, namespace = tmp_path / "c.tgz", objects["namespace"]
    before = _report(namespace)[0]
    res = _smem(namespace, "capture", "-o", capture)
    assert res.returncode == 0, res.stderr
    after = _report(namespace)[0]  # read beside the capture, not when the module began: a busy machine moves pages
    captured, warnings = _report(namespace, "-S", capture)
    assert "has no" not in warnings
    keys = ("kind", "name", "size", "used", "rss", "swap", "mapped", "unmapped", "pids", "attached", "processes")

    def rows(document):
        return {k: {c: r[c] for c in keys} for k, r in _ours(document, objects).items()}
    assert rows(captured) in (rows(before), rows(after))


@pytest.mark.uses("cpu")
def test_an_old_capture_shows_what_it_can_and_says_what_is_missing():
    res = run_smem("-S", FIXTURES / "captures" / "faithful.tar.gz", "--shm", "-F", "json")
    assert res.returncode == 0
    json.loads(res.stdout)
    lines = [l for l in res.stderr.decode().splitlines() if "has no" in l]
    assert len(lines) == 1 and "sysvipc/shm" in lines[0] and "smem/shmem" in lines[0]


@pytest.mark.uses("cpu")
def test_selection_options_are_refused():
    res = run_smem("--shm", "-P", "x")
    assert res.returncode == 2 and b"-P" in res.stderr and len(res.stderr.splitlines()) == 1
