"""GPU memory per process from DRM fdinfo (smem/device_memory.py): a client counted once per
process whatever fds reach it, split 1/k between the k processes holding it; absent is '-'.
dma-buf PSS: a buffer (its inode) split between the processes holding it by fd or mapping;
the breakdown's rows for buffers held and buffers the kernel lists that nobody holds.

tests/fixtures/gpu_proc/tree (made by its make.py from the drm-fdinfo-zoo samples): 100 and
101 hold amdgpu client 30 (100 through two fds), 102 an i915 client, 103 an amdgpu client with
only the old drm-memory- keys, 104 an fd that is neither a client nor a dma-buf; 100 and 101
hold dma-buf 180 (16 KiB) by fd, 105 maps it; /sys/kernel/dmabuf/buffers lists it and buffer
4242 (1 MiB) nobody holds.  bufinfo_tree: the same with the recorded debugfs bufinfo instead.
"""

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from conftest import FIXTURES, run_smem
from smem.capture_writer import write_capture
from smem.sources.directory import DirectorySource

TREE = FIXTURES / "gpu_proc" / "tree"
BUFINFO_TREE = FIXTURES / "gpu_proc" / "bufinfo_tree"
COLUMNS = "pid gpu gpushared gpuvram gpugtt gpusys"

#: amdgpu client 30: vram resident 544428 KiB of which 13584 shared, gtt 22 MiB, cpu 0
AMDGPU_OWN_VRAM = 544428 - 13584
AMDGPU_OWN = AMDGPU_OWN_VRAM + 22 * 1024


def _rows(source, *args, columns=COLUMNS):
    res = run_smem("-S", str(source), *args, "-c", columns, "-F", "json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _by_pid(document):
    return {row["pid"]: row for row in document["rows"]}


def test_a_client_held_by_two_processes_is_split_and_its_fds_count_once():
    rows = _by_pid(_rows(TREE))
    # 100 reaches client 30 through fds 5 and 9: once; 101 holds it too: half each
    assert rows[100]["gpu"] == rows[101]["gpu"] == AMDGPU_OWN // 2
    assert rows[100]["gpuvram"] == AMDGPU_OWN_VRAM // 2 and rows[100]["gpugtt"] == 22 * 1024 // 2
    assert rows[100]["gpushared"] == rows[101]["gpushared"] == 13584  # shared: in full
    assert rows[100]["gpusys"] == 0  # amdgpu's cpu region: 0, printed


def test_regions_a_driver_does_not_name_and_keys_it_does_not_print_are_null():
    rows = _by_pid(_rows(TREE))
    assert rows[102]["gpu"] == rows[102]["gpusys"] == (125 - 16) << 10  # i915 system: resident less shared
    assert rows[102]["gpuvram"] is None and rows[102]["gpushared"] == 16 << 10
    assert rows[103]["gpu"] == 2068 + 8192 and rows[103]["gpushared"] is None  # old keys: no shared figure
    assert rows[104]["gpu"] is None and rows[104]["gpushared"] is None  # no client: absent, not 0


def test_totals_count_the_shared_client_once():
    document = _rows(TREE, "-t")
    assert document["totals"]["gpu"] == AMDGPU_OWN // 2 * 2 + (109 << 10) + 2068 + 8192


def test_groups_add_their_processes_shares():
    rows = _rows(TREE, "-g", columns="name gpu gpushared")["rows"]
    by_name = {r["name"]: r for r in rows}
    assert by_name["game"]["gpu"] == AMDGPU_OWN // 2 and by_name["idle"]["gpu"] is None
    users = _rows(TREE, "-u", columns="user gpu")["rows"]
    assert sum(r["gpu"] for r in users if r["gpu"] is not None) == AMDGPU_OWN // 2 * 2 + (109 << 10) + 10260


def _one_program(tmp_path):
    """The tree with 101 (game, holding amdgpu client 30 beside 100) renamed compositor: one
    program of two processes holding one client."""
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    for name in ("stat", "status", "cmdline", "smaps"):
        path = tree / "101" / name
        path.write_bytes(path.read_bytes().replace(b"game", b"compositor"))
    return tree


def test_a_group_counts_a_shared_client_once_and_adds_the_split_parts(tmp_path):
    """100 and 101 hold amdgpu client 30, whose 13584 KiB shared with other clients each shows in
    full: a group holding it through both counted it twice (the user's GPUShared 43552, so too
    its OpenMetrics gauge).  Its split parts (gpu, the regions, dma-buf 180 split in three) add up
    unrounded: the user of all three holders has all 16 KiB of the buffer, not 3 x 5."""
    once = 13584 + (16 << 10)  # client 30 and i915 client 18 (102)
    for args, columns in ((("-u",), "user"), (("--cgroup",), "cgroup")):
        (row,) = _rows(TREE, *args, columns=columns + " gpu gpushared gpuvram dmabuf")["rows"]
        assert row["gpushared"] == once, args
        assert row["gpu"] == AMDGPU_OWN + (109 << 10) + 10260 and row["gpuvram"] == AMDGPU_OWN_VRAM + 2068
        assert row["dmabuf"] == 16
    programs = {r["name"]: r for r in _rows(_one_program(tmp_path), "-g", columns="name count gpu gpushared")["rows"]}
    assert programs["compositor"] == {"name": "compositor", "count": 2, "gpu": AMDGPU_OWN, "gpushared": 13584}
    res = run_smem("-S", str(TREE), "-u", "-c", "user gpushared", "-F", "openmetrics")
    (sample,) = [l for l in res.stdout.decode().splitlines() if l.startswith("smem_user_gpushared_bytes{")]
    assert sample.endswith(f" {once * 1024}"), sample


def test_a_total_is_the_group_views_total():
    """dma-buf 180 (16 KiB), held by three processes, is 5.33 KiB of each: the process view's -t
    summed the rows as shown (3 x 5 = 15) where -u's and --cgroup's rows and totals have all 16,
    and the page showed the two totals in two tables.  Each device column's total adds the
    unrounded parts, as a group does."""
    columns = "gpu gpushared gpuvram gpusys dmabuf"
    processes = _rows(TREE, "-t", columns="pid " + columns)["totals"]
    assert processes["dmabuf"] == 16
    for args, key in ((("-u",), "user"), (("--cgroup",), "cgroup"), (("-g",), "name")):
        grouped = _rows(TREE, "-t", *args, columns=f"{key} {columns}")["totals"]
        assert {k: grouped[k] for k in columns.split()} == {k: processes[k] for k in columns.split()}, args


def test_a_total_counts_a_shared_client_once():
    """-t of gpushared summed the rows as shown, so client 30, which 100 and 101 hold, was in it
    twice (2 x 13584 + 16384); the total now counts each client once, as a group's row does, in
    the process view, a group view and smem diff (where OLD's and NEW's are taken so too)."""
    once = 13584 + (16 << 10)
    assert _rows(TREE, "-t", columns="pid gpushared")["totals"]["gpushared"] == once
    assert _rows(TREE, "-t", "-g", columns="name gpushared")["totals"]["gpushared"] == once
    compared = json.loads(run_smem("diff", str(TREE), str(TREE), "-t", "-c", "pid old_gpushared gpushared dgpushared",
                                   "-F", "json", check=True).stdout)
    totals = compared["totals"]
    assert (totals["old_gpushared"], totals["gpushared"], totals["dgpushared"]) == (once, once, 0), totals
    help_text = run_smem("-c", "help").stdout.decode()
    (line,) = [l for l in help_text.splitlines() if l.split()[:1] == ["gpushared"]]
    assert "once" in line and "-t" in line, line


def test_the_table_shows_a_dash_and_openmetrics_leaves_absent_out():
    res = run_smem("-S", str(TREE), "-c", "pid gpu gpushared", "-s", "pid")
    lines = res.stdout.decode().splitlines()
    assert lines[-2].split() == ["104", "-", "-"]
    assert lines[-3].split() == ["103", "10260", "-"]
    res = run_smem("-S", str(TREE), "-c", "pid gpu", "-F", "openmetrics")
    samples = [l for l in res.stdout.decode().splitlines() if l.startswith("smem_process_gpu_bytes{")]
    assert len(samples) == 4 and not any('pid="104"' in s or 'pid="105"' in s for s in samples)
    assert any('pid="102"' in s and s.endswith(f" {(109 << 10) * 1024}") for s in samples)
    # the HELP says what the exposition does: a series absent, not a table's "-"
    helps = [l for l in run_smem("-S", str(TREE), "-c", "pid gpu dmabuf zram", "-F", "openmetrics").stdout.decode()
             .splitlines() if l.startswith("# HELP smem_process_")]
    assert len(helps) == 3 and not any("- without" in h for h in helps), helps
    assert all("absent without" in h for h in helps), helps


def _capture_of_tree():
    out = io.BytesIO()
    source = DirectorySource(str(TREE))
    try:
        write_capture(source, out, compression=None)
    finally:
        source.close()
    return out.getvalue()


@pytest.mark.parametrize("order", ["as written", "members apart"])
def test_a_capture_carries_the_device_fdinfo(tmp_path, order):
    """Read streamed (each process as its members come) and, with a process's members apart,
    held whole: the same figures as the tree."""
    with tarfile.open(fileobj=io.BytesIO(_capture_of_tree())) as tar:
        members = [(m, tar.extractfile(m).read() if m.isreg() else None) for m in tar.getmembers()]
    names = {m.name for m, _ in members}
    assert {"100/fdinfo/5", "100/fdinfo/9", "100/fdinfo/12", "101/fdinfo/7", "104/fdinfo/100"} <= names
    if order == "members apart":
        members.sort(key=lambda m: m[0].name == "100/fdinfo/9")
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for member, data in members:
            tar.addfile(member, io.BytesIO(data) if data is not None else None)
    path = tmp_path / "gpu.tar"
    path.write_bytes(out.getvalue())
    assert _by_pid(_rows(path, columns=COLUMNS + " dmabuf")) == _by_pid(_rows(TREE, columns=COLUMNS + " dmabuf"))
    assert _breakdown(path)[0] == _breakdown(TREE)[0]


def test_live_processes_without_a_gpu_client_show_a_dash():
    res = run_smem("-c", "pid gpu gpushared", "-F", "json")
    rows = json.loads(res.stdout)["rows"]
    assert rows and all(r["gpu"] is None and r["gpushared"] is None for r in rows)


def test_a_dma_buf_is_split_between_its_holders_by_fd_or_mapping():
    rows = _by_pid(_rows(TREE, columns="pid dmabuf"))
    # 16 KiB held by 100 and 101 (fd) and 105 (mapping): a third each
    assert rows[100]["dmabuf"] == rows[101]["dmabuf"] == rows[105]["dmabuf"] == 5
    assert rows[102]["dmabuf"] is None and rows[104]["dmabuf"] is None
    programs = {r["name"]: r for r in _rows(TREE, "-g", columns="name dmabuf")["rows"]}
    assert programs["viewer"]["dmabuf"] == 5 and programs["idle"]["dmabuf"] is None


def _breakdown(tree):
    document = _rows(tree, "-w", "--breakdown", columns="area used source")
    return {row["area"]: row for row in document["rows"]}, document


@pytest.mark.parametrize("tree, unheld", [(TREE, 1024), (BUFINFO_TREE, (2 * 1064960 + 2 * 23068672 + 23805952) // 1024)])
def test_the_breakdown_has_dma_buf_rows_and_still_adds_up(tree, unheld):
    rows, document = _breakdown(tree)
    assert rows["dma-buf held by processes"]["used"] == 16
    assert rows["dma-buf held by no process"]["used"] == unheld
    mem_total = 8048000
    assert sum(r["used"] for r in document["rows"] if r["used"] is not None) == mem_total
    # the fixture's meminfo gives MemFree and no AnonPages: PSS (6 x 200 KiB), free, the dma-bufs
    assert rows["unexplained"]["used"] == mem_total - 1200 - 2512000 - 16 - unheld


@pytest.mark.uses("cpu")
def test_processes_read_holding_no_dma_buf_hold_0_and_a_capture_without_fds_is_unknown(tmp_path):
    """This machine's processes, every fd read as root, hold what they hold (no dma-buf here: 0);
    the breakdown said '-', unknown, beside 'the 0 dma-bufs processes hold'.  A capture keeps the
    fdinfo of device fds only, so one without any cannot tell none held from none read: '-',
    saying so."""
    if os.geteuid() != 0:
        pytest.skip("another user's fds are read as root")
    rows, _ = _breakdown_of()
    assert rows["dma-buf held by processes"]["used"] is not None
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    shutil.rmtree(tree / "sys" / "kernel" / "dmabuf")  # (no list of the kernel's either)
    for fdinfo in tree.glob("*/fdinfo"):
        shutil.rmtree(fdinfo)
    for maps in list(tree.glob("*/maps")) + list(tree.glob("*/smaps")):
        maps.write_bytes(b"".join(l for l in maps.read_bytes().splitlines(True) if b"/dmabuf:" not in l))
    row = _breakdown(tree)[0]["dma-buf held by processes"]
    assert row["used"] is None and "fds read" in row["source"] and "0 dma-bufs" not in row["source"], row


def _breakdown_of(*args):
    document = json.loads(run_smem(*args, "-w", "--breakdown", "-F", "json", "-c", "area used source", check=True).stdout)
    return {row["area"]: row for row in document["rows"]}, document


def test_a_kernel_that_lists_no_dma_buf_is_not_said_to_be_unreadable(tmp_path):
    """Without /sys/kernel/dmabuf (CONFIG_DMABUF_SYSFS_STATS off) and debugfs, root was told the
    list was "(not readable)", as if a permission were missing."""
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    shutil.rmtree(tree / "sys" / "kernel" / "dmabuf")
    rows, _ = _breakdown(tree)
    row = rows["dma-buf held by no process"]
    assert row["used"] is None and "not readable" not in row["source"], row
    assert "CONFIG_DMABUF_SYSFS_STATS" in row["source"] and "debugfs" in row["source"], row


#: In a new mount and pid namespace: a /dev of its own (the real null, zero, full, random and
#: urandom bound into a tmpfs) with a dri/renderD128 to open, so a process holds an fd whose
#: link names a DRM device; its /proc shows the namespace's processes alone.
_OWN_DEV = r"""
set -e
dev=$(mktemp -d)
mount -t tmpfs smem-test-dev "$dev"
for n in null zero full random urandom; do : > "$dev/$n"; mount --bind "/dev/$n" "$dev/$n"; done
ln -s /proc/self/fd "$dev/fd"
mkdir "$dev/shm" "$dev/dri"
: > "$dev/dri/renderD128"
mount --bind "$dev" /dev
exec "$@"
"""

#: A process whose first thread has exited (ps: Zl) and whose other holds a DRM fd (37): its
#: /proc/PID/fd is empty (the leader let go of the table), its thread's fd/ and fdinfo/ have it.
_LEADER_EXITS = r"""
import ctypes, os, threading
def hold():
    fd = os.open("/dev/dri/renderD128", os.O_RDONLY)
    os.dup2(fd, 37)
    os.close(fd)
    print("ready", flush=True)
    os.read(0, 1)
    os._exit(0)
threading.Thread(target=hold).start()
ctypes.CDLL(None).pthread_exit(None)
"""

#: The holder: a DRM fd (37) and an ordinary one (38) open, and a Zl process holding a DRM fd
#: (37), then both capture writers run (smemcap.sh also where there is no ls, and with GNU ls
#: asked by QUOTING_STYLE to quote every name).
_HOLDER = r"""
import io, json, os, shutil, subprocess, sys, tarfile, tempfile, time
for path, at in (("/dev/dri/renderD128", 37), ("/proc/version", 38)):
    fd = os.open(path, os.O_RDONLY)
    os.dup2(fd, at)
    os.close(fd)
zl = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
assert zl.stdout.readline() == b"ready\n"
while open(f"/proc/{zl.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
    time.sleep(0.01)
assert os.listdir(f"/proc/{zl.pid}/fd") == []
(thread,) = [t for t in os.listdir(f"/proc/{zl.pid}/task") if t != str(zl.pid)]
expected = {os.getpid(): open("/proc/self/fdinfo/37", "rb").read().decode(),
            zl.pid: open(f"/proc/{zl.pid}/task/{thread}/fdinfo/37", "rb").read().decode()}
smem = subprocess.run([sys.executable, "-m", "smem", "capture", "--compression", "none"], capture_output=True)
script = subprocess.run(["dash", "scripts/smemcap.sh"], capture_output=True)
quoted = subprocess.run(["dash", "scripts/smemcap.sh"], env=dict(os.environ, QUOTING_STYLE="c"), capture_output=True)
# and where there is no ls: a readlink a descriptor
no_ls = tempfile.mkdtemp()
for tool in ("cat", "tar", "gzip", "mkdir", "rm", "chown", "date", "uname", "readlink", "stat", "mktemp", "grep"):
    os.symlink(shutil.which(tool), os.path.join(no_ls, tool))
by_readlink = subprocess.run([shutil.which("dash"), "scripts/smemcap.sh"], env=dict(os.environ, PATH=no_ls),
                             capture_output=True)
zl.stdin.close()
zl.wait()
found = {}
for name, run in (("smem capture", smem), ("smemcap.sh", script), ("smemcap.sh with QUOTING_STYLE=c", quoted),
                  ("smemcap.sh without ls", by_readlink)):
    assert run.returncode == 0, run.stderr
    with tarfile.open(fileobj=io.BytesIO(run.stdout)) as tar:
        found[name] = {pid: {m.name.rpartition("/")[2]: tar.extractfile(m).read().decode()
                             for m in tar.getmembers() if m.isfile() and m.name.startswith(f"{pid}/fdinfo/")}
                       for pid in expected}
print(json.dumps({"expected": {pid: {"37": text} for pid, text in expected.items()}, "found": found}))
"""


@pytest.mark.uses("shells")
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("dash"),
                    reason="a /dev of its own needs root, unshare and dash")
def test_both_capture_writers_carry_the_fdinfo_of_a_live_processs_drm_fds_and_no_other():
    """This machine has no GPU: a /dev of its own (in a mount namespace) gives a process an fd
    whose link is /dev/dri/renderD128, as a GPU client's is; smem capture and smemcap.sh (its
    links read by ls, whatever QUOTING_STYLE says, or by readlink where there is no ls) pick the
    fds by that link and carry their fdinfo as N/fdinfo/FD, laid out as in /proc; a Zl
    process's through the thread that holds them."""
    res = subprocess.run(["unshare", "--mount", "--pid", "--fork", "--mount-proc", "sh", "-c", _OWN_DEV, "sh",
                          sys.executable, "-c", _HOLDER, _LEADER_EXITS], capture_output=True,
                         cwd=FIXTURES.parents[1], timeout=300)
    assert res.returncode == 0, res.stderr.decode()
    result = json.loads(res.stdout)
    for writer in ("smem capture", "smemcap.sh", "smemcap.sh with QUOTING_STYLE=c", "smemcap.sh without ls"):
        assert result["found"][writer] == result["expected"], writer
