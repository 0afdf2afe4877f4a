"""A kernel without /proc/PID/smaps (CONFIG_PROC_PAGE_MONITOR off, or no MMU: small boards).

Each process was skipped as if it had exited: the report was an empty table with totals of 0,
exit 0 and not a word.  It says once that the kernel gives no smaps, and its totals are absent
('-'), not 0; a capture or tree where a few processes lack smaps says nothing of the kind."""

import json
import shutil
import subprocess
import tarfile

import pytest

from conftest import FIXTURES, REALPROC, run_smem

TREE = FIXTURES / "nosmaps"
SAID = ("the kernel gives no /proc/PID/smaps (built without CONFIG_PROC_PAGE_MONITOR, or without an MMU): "
        "no process's memory can be measured; smem -w shows the system's")


def _warnings(proc):
    return [line for line in proc.stderr.decode().splitlines() if line.startswith("smem: warning: ")]


def _said_once(proc, description):
    assert proc.returncode == 0, proc.stderr
    assert _warnings(proc) == [f"smem: warning: {description}: {SAID}"], proc.stderr


def _archive(tree, path):
    """A capture of ``tree`` as C smemcap writes one (a tar of the proc files, no capture-info)."""
    with tarfile.open(path, "w:gz") as tar:
        for entry in sorted(tree.iterdir()):
            if entry.name != "README.md":
                tar.add(entry, arcname=entry.name)
    return path


@pytest.mark.parametrize("archived", [False, True], ids=["tree", "capture"])
def test_a_kernel_without_smaps_is_said_and_its_totals_are_absent(tmp_path, archived):
    source = _archive(TREE, tmp_path / "board.tgz") if archived else TREE
    proc = run_smem("-S", source, "-t")
    _said_once(proc, f"capture {source}")
    lines = proc.stdout.decode().splitlines()
    assert lines[0].split() == ["PID", "User", "Command", "Swap", "USS", "PSS", "RSS"]
    # no process row; the totals row says nothing was measured rather than 0 KiB
    assert len(lines) == 3 and set(lines[1]) == {"-"}, lines
    assert lines[-1].split() == ["0", "0", "-", "-", "-", "-"], lines  # (0 processes of 0 users)
    document = json.loads(run_smem("-S", source, "-t", "-F", "json").stdout)
    assert document["rows"] == []
    assert set(document["totals"].values()) <= {None, 0}
    assert document["totals"]["pss"] is None


def test_the_user_view_says_so_too_and_the_system_view_does_not():
    _said_once(run_smem("-S", TREE, "-u"), f"capture {TREE}")
    proc = run_smem("-S", TREE, "-w")
    assert proc.returncode == 0, proc.stderr
    assert SAID not in proc.stderr.decode()


def test_a_tree_where_some_processes_lack_smaps_says_nothing_of_the_kernel(tmp_path):
    """Processes that exited between the listing and their smaps: the kernel has smaps."""
    tree = tmp_path / "proc"
    shutil.copytree(TREE, tree)
    (tree / "1" / "smaps").write_bytes(b"00400000-00401000 r-xp 00000000 08:01 1 /sbin/init\n"
                                       b"Size: 4 kB\nRss: 4 kB\nPss: 4 kB\n")
    proc = run_smem("-S", tree, "-t")
    assert proc.returncode == 0, proc.stderr
    assert SAID not in proc.stderr.decode()
    assert proc.stdout.decode().splitlines()[-1].split()[-1] == "4"



@pytest.mark.parametrize("options", [("--pid", "1"), ("-P", "^init"), ("-U", "root", "--pid", "1")])
def test_one_process_without_smaps_picked_out_is_not_the_kernel_without_them(tmp_path, options):
    """--pid (or a filter) of a process whose smaps is not in a capture, where others' are (one
    that exited as the capture was taken), said the kernel gives no smaps: it judged from the
    processes picked out alone."""
    tree = tmp_path / "proc"
    shutil.copytree(TREE, tree)
    for pid in (entry.name for entry in tree.iterdir() if entry.name.isdigit() and entry.name != "1"):
        (tree / pid / "smaps").write_bytes(b"00400000-00401000 r-xp 00000000 08:01 1 /bin/sh\n"
                                           b"Size: 4 kB\nRss: 4 kB\nPss: 4 kB\n")
    tarred = tmp_path / "tarred.tgz"  # (by tar(1), as smemcap.sh writes one: read in one pass, streamed)
    subprocess.run(["tar", "czf", tarred, "-C", tree, *sorted(p.name for p in tree.iterdir())], check=True)
    for source, given in ((tree, None), (_archive(tree, tmp_path / "board.tgz"), None), (tarred, None),
                          ("-", tarred.read_bytes())):
        proc = run_smem("-S", source, *options, input=given)
        assert SAID.split(";")[0] not in proc.stderr.decode(), proc.stderr
        if "--pid" in options:
            assert proc.returncode == 1 and proc.stdout == b"", proc
            assert proc.stderr.decode().startswith("smem: --pid 1: not found"), proc.stderr
        else:
            assert proc.returncode == 0, proc.stderr

@pytest.mark.uses("cpu")
def test_the_recorded_rhel6_tree_without_smaps(tmp_path):
    """PCP's recording of a 2.6.32 machine's 206 processes, none with smaps (a meminfo added)."""
    recorded = REALPROC / "pcp-rhel6-2.6.32-nosmaps" / "proc"
    if not recorded.is_dir():
        pytest.skip("../shared/realproc is not available")
    tree = tmp_path / "proc"
    shutil.copytree(recorded, tree)
    shutil.copy(TREE / "meminfo", tree / "meminfo")
    _said_once(run_smem("-S", tree, "-t"), f"capture {tree}")
    _said_once(run_smem("-S", tree, "-P", "auditd"), f"capture {tree}")
    # a selection that names no process reads no smaps: nothing is said of the kernel
    proc = run_smem("-S", tree, "-P", "no-such-program")
    assert proc.returncode == 0 and SAID not in proc.stderr.decode(), proc.stderr


def test_a_capture_of_a_kernel_without_smaps_keeps_its_processes_and_says_why(tmp_path):
    """smem capture left every process out as unreadable ('run as root to capture them', which
    root would not change) and wrote unreadable_processes=N, so its reader said the writer could
    not read them: a capture of no processes.  Each is written with its cmdline, stat and status,
    and the capture's reader says the kernel gave no smaps."""
    from smem.capture_command import left_out
    from smem.capture_writer import write_capture
    from smem.sources.directory import DirectorySource
    path = tmp_path / "board.tar"
    source = DirectorySource(str(TREE))
    try:
        with open(path, "wb") as out:
            written = write_capture(source, out, compression=None)
    finally:
        source.close()
    assert (written.skipped, written.no_smaps) == ([], True)
    with tarfile.open(path) as tar:
        names = set(tar.getnames())
        info = tar.extractfile("capture-info").read().decode()
    assert {"1/cmdline", "1/stat", "1/status", "1915/cmdline", "3247/stat"} <= names
    assert not any(n.endswith("smaps") or n.endswith("smaps_rollup") for n in names)
    assert "unreadable_processes" not in info
    assert left_out(written.skipped, None, False, no_smaps=written.no_smaps) == [
        "the kernel gives no /proc/PID/smaps (built without CONFIG_PROC_PAGE_MONITOR, or without an MMU): no "
        "process's memory can be measured, and the processes are captured without it; smem -w reads the system's"]
    _said_once(run_smem("-S", path, "-t"), f"capture {path}")


def test_a_capture_of_a_kernel_with_smaps_says_nothing_of_it(tmp_path):
    from smem.capture_writer import write_capture
    from smem.sources.directory import DirectorySource
    tree = tmp_path / "proc"
    shutil.copytree(TREE, tree)
    (tree / "3247" / "smaps").write_bytes(b"00400000-00401000 r-xp 00000000 08:01 1 /usr/libexec/gvfsd\n"
                                          b"Size: 4 kB\nRss: 4 kB\nPss: 4 kB\n")
    source = DirectorySource(str(tree))
    try:
        with open(tmp_path / "c.tar", "wb") as out:
            written = write_capture(source, out, compression=None)
    finally:
        source.close()
    assert (written.processes, written.no_smaps) == (1, False)
    assert 1915 in [pid for pid, _ in written.skipped]  # (as before: unreadable, left out)


def test_pid_of_a_process_of_a_kernel_without_smaps_is_an_error_saying_why():
    """It said '--pid 1915: not found, or a kernel thread or zombie': the process is there."""
    proc = run_smem("-S", TREE, "--pid", "1915")
    assert proc.returncode == 1 and proc.stdout == b"", proc
    assert proc.stderr.decode() == f"smem: --pid 1915: {SAID.split(';')[0]}\n"


def test_watch_and_serve_say_so_at_every_collection():
    """The collections after a first (smem.incremental: watch mode, smem serve, smem record) built
    their reading without the flag, and a first collection there reads through them too: watch
    mode never said it, and its totals were 0.  The tree read as this machine's /proc is (its
    own process has no smaps either, as on such a kernel)."""
    from smem.incremental import Refresher
    from smem.sources.live import LiveSource
    from smem.views import VIEWS, needs_of
    view = VIEWS["process"]
    needs = needs_of(view, [view.columns[k] for k in view.default_columns])
    refresher = Refresher(60)
    board = LiveSource("/nonexistent", proc=str(TREE), local=True)
    readings = [refresher.load(board, needs=needs) for _ in range(3)]
    assert [(len(r.processes), r.no_smaps) for r in readings] == [(0, True)] * 3
    assert not Refresher(60).load(LiveSource(), needs=needs).no_smaps  # (this machine has smaps)
