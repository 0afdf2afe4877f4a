"""OS errors become smem's in one place (smem.errors.translated, psutil's wrap_exceptions): a
process that vanished is ProcessGone and one not ours to read is ProcessUnreadable, through every
source, and an optional read of either is None."""

import os
import pathlib
import subprocess
import sys
import tempfile

import pytest

from conftest import AS_NOBODY, FIXTURES, extract_capture
from smem.errors import ProcessGone, ProcessUnreadable
from smem.loading.process import read_identity
from smem.selection import Selection
from smem.sources import LiveSource, open_source
from smem.sources.base import Source

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class FilesOfATree(Source):
    """A source in four methods, as a new one is written: files of a tree; every other member is
    Source's default or derived from these."""

    def __init__(self, root):
        self.root = root

    def pids(self):
        return sorted(int(e) for e in os.listdir(self.root) if e.isdigit())

    def read(self, path):
        with open(os.path.join(self.root, path), "rb") as f:
            return f.read()

    def owner(self, pid):
        return None

    def facts(self):
        return {"pagesize": "4096"}


def _extract(into):
    return extract_capture(CAPTURE, into)


def _exited_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.uses("cpu")
def test_a_vanished_process_is_gone_through_every_source(tmp_path):
    tree = _extract(tmp_path / "cap")
    pid = open_source(str(tree)).pids()[0]
    for name in os.listdir(tree / str(pid)):
        os.unlink(tree / str(pid) / name)
    os.rmdir(tree / str(pid))  # the process exited before the capture was read
    missing = max(open_source(str(CAPTURE)).pids()) + 1
    sources = {"live": (LiveSource(), _exited_pid()),
               "directory": (open_source(str(tree)), pid),
               "tree": (LiveSource(str(tmp_path), local=False, proc=str(tree)), pid),
               "archive": (open_source(str(CAPTURE)), missing),
               "four methods": (FilesOfATree(str(tree)), pid)}
    for kind, (source, gone) in sources.items():
        with pytest.raises(ProcessGone):
            source.read_process(gone, "smaps")
        assert source.read_optional(f"{gone}/smaps") is None, kind
    stream = open_source(str(CAPTURE), streamed=True)
    files = next(iter(stream.each_process()))[1]
    with pytest.raises(ProcessGone):
        files.read_process(missing, "smaps")


@pytest.mark.uses("cpu")
def test_a_vanished_process_is_skipped_not_shown_as_unknown(tmp_path):
    """On the live system a missing cmdline means the process exited: it is skipped; in a capture
    it is only a file the capture lacks: the process is kept, its command unknown."""
    with pytest.raises(ProcessGone):
        read_identity(LiveSource(), _exited_pid(), Selection(), set(), {})
    tree = _extract(tmp_path / "cap")
    source = open_source(str(tree))
    pid = next(p for p in source.pids() if source.read_optional(f"{p}/cmdline"))
    os.unlink(tree / str(pid) / "cmdline")
    process = read_identity(source, pid, Selection(), set(), {})
    assert process.cmdline == "?" and process.pid == pid


#: as nobody: pid 1's smaps (live), and a tree's file of mode 000, through every source that reads files
_UNREADABLE = """
from smem.errors import ProcessUnreadable
from smem.sources import LiveSource, open_source
from test_os_errors import FilesOfATree
tree, pid = {tree!r}, {pid}
for kind, source, target in (("live", LiveSource(), 1), ("directory", open_source(tree), pid),
                             ("four methods", FilesOfATree(tree), pid)):
    try:
        source.read_process(target, "smaps")
        sys.exit(kind + ": read")
    except ProcessUnreadable as e:
        assert "ermission" in e.reason, (kind, e.reason)
    assert source.read_optional(f"{{target}}/smaps") is None, kind
print("ok")
"""


@pytest.mark.uses("cpu")
def test_an_unreadable_process_is_unreadable_through_every_source():
    if os.geteuid() != 0:
        pytest.skip("needs root to become a second user")
    with tempfile.TemporaryDirectory() as top:  # (pytest's tmp_path is under a directory of mode 700)
        os.chmod(top, 0o755)
        _unreadable_as_nobody(_extract(pathlib.Path(top) / "cap"))


def _unreadable_as_nobody(tree):
    pid = open_source(str(tree)).pids()[0]
    os.chmod(tree / str(pid) / "smaps", 0)
    imported = f"import sys; sys.path.insert(0, {os.path.join(ROOT, 'tests')!r}); import test_os_errors; "
    code = imported + AS_NOBODY + _UNREADABLE.format(tree=str(tree), pid=pid)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "ok", out.stderr


class SysRefusing(FilesOfATree):
    """A tree whose every /sys attribute refuses its read as a driver's may: with EIO, here that
    of /proc/self/mem at offset 0 (no page mapped there)."""

    def read_sys(self, path):
        with open("/proc/self/mem", "rb") as f:
            return f.read(16)


def test_a_sys_attribute_refused_with_any_error_is_absent(tmp_path):
    """/sys reads have one rule (sources/derived.read_sys_optional), not a try in each reader:
    any OSError, EIO included, is the attribute's absence; the system view goes on without it."""
    from smem.kernel_pools import read_kernel_pools
    from smem.ksm_changes import KsmChanges
    source = SysRefusing(_extract(tmp_path / "cap"))
    with pytest.raises(OSError):
        source.read_sys("kernel/mm/ksm/pages_sharing")
    assert source.read_sys_optional("kernel/mm/ksm/pages_sharing") is None
    assert read_kernel_pools(source).ksm == {}
    assert KsmChanges().moved(source, source.pids(), set(), {}, 4) == set()
