"""The source contract: one place for process errors, typed facts of the data's machine, and one
class for the live /proc and a tree copied from elsewhere (issue 11)."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import FIXTURES, extract_capture
from smem.errors import ProcessGone, ProcessUnreadable
from smem.sources import LiveSource, open_source
from smem.sources.base import OWN_PID, PAGEMAP, VANISHING
from smem.sources.machine import Machine

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


def _extract(tmp_path, into):
    return extract_capture(CAPTURE, into)


@pytest.mark.uses("cpu")
def test_process_errors_become_smem_exceptions_in_one_place():
    live = LiveSource()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    with pytest.raises(ProcessGone):
        live.read_process(child.pid, "smaps")
    if os.geteuid() != 0:
        pytest.skip("needs root to become a second user")
    pid = os.fork()
    if pid == 0:  # as uid 65534, pid 1's smaps is not ours to read
        code = 3
        try:
            os.setgroups([])
            os.setuid(65534)
            LiveSource().read_process(1, "smaps")
            code = 2
        except ProcessUnreadable as e:
            code = 0 if "ermission" in e.reason else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_the_machine_is_the_datas_not_ours(tmp_path):
    info = b"pagesize=16384\nkernel=6.1.0-rpi\nmachine=aarch64\nhostname=box\nepoch=1700000000\n"
    root = _extract(tmp_path, tmp_path / "cap")
    (root / "capture-info").write_bytes(info)
    machine = open_source(str(root)).machine()
    assert machine == Machine(page_size=16384, kernel="6.1.0-rpi", arch="aarch64", hostname="box",
                              epoch=1700000000)
    live = LiveSource().machine()
    assert live.page_size == os.sysconf("SC_PAGE_SIZE") and live.kernel == os.uname().release


@pytest.mark.uses("cpu")
def test_pagemap_arithmetic_takes_the_datas_page_size(tmp_path):
    pytest.importorskip("numpy", reason="--exact needs smem[exact]")
    from smem.errors import CaptureError
    from smem.exact import PagemapReader
    root = _extract(tmp_path, tmp_path / "cap")
    (root / "capture-info").write_bytes(b"pagesize=16384\nkernel=6.1.0-rpi\n")
    assert PagemapReader(open_source(str(root))).page_size == 16384
    # a capture that does not say is not given this machine's page size
    (root / "capture-info").write_bytes(b"kernel=6.1.0\n")
    with pytest.raises(CaptureError, match="page size"):
        PagemapReader(open_source(str(root)))


def test_bad_facts_are_unknown_not_wrong():
    assert Machine.from_facts({"pagesize": "abc", "epoch": "-5", "kernel": "x"}) == Machine(kernel="x")
    assert Machine(page_size=4096, hostname="h").as_facts() == {"pagesize": 4096, "hostname": "h"}


@pytest.mark.uses("cpu")
def test_a_copied_tree_is_the_live_class_not_local(tmp_path):
    root = tmp_path / "box"
    _extract(tmp_path, root / "proc")
    memmap = root / "sys" / "firmware" / "memmap" / "0"
    memmap.mkdir(parents=True)
    for name, data in (("start", b"0x0\n"), ("end", b"0x3fffffff\n"), ("type", b"System RAM\n")):
        (memmap / name).write_bytes(data)
    tree = LiveSource(str(root), local=False)
    live = LiveSource()
    assert type(tree) is type(live)
    assert not tree.local and not (tree.capabilities & {PAGEMAP, OWN_PID, VANISHING})
    assert live.local and live.capabilities >= {PAGEMAP, OWN_PID, VANISHING}
    assert tree.pids() == open_source(str(root / "proc")).pids()
    assert tree.firmware_memmap() == [(b"0x0\n", b"0x3fffffff\n", b"System RAM\n")]  # root/sys, not /sys
    assert tree.boot_log() is None  # root/dev/kmsg is not a log to read
    # a tree from elsewhere is read without following links out of it
    pid = tree.pids()[0]
    os.unlink(root / "proc" / str(pid) / "cmdline")
    os.symlink("/etc/hostname", root / "proc" / str(pid) / "cmdline")
    assert tree.read_optional(f"{pid}/cmdline") is None
    with pytest.raises(ProcessUnreadable):
        tree.read_process(pid, "cmdline")
    shutil.rmtree(root)


def test_a_stream_is_declared_and_held_apart():
    """A capture read in one pass is a StreamedSource; where one pass cannot do, its held form is
    another source, read whole, and the stream stays what it was."""
    from smem.sources.base import StreamedSource
    from smem.sources.captured import CaptureFacts
    stream = open_source(str(CAPTURE), streamed=True)
    held = open_source(str(CAPTURE))
    try:
        assert isinstance(stream, StreamedSource) and not isinstance(held, StreamedSource)
        whole = stream.held()
        assert not isinstance(whole, StreamedSource) and isinstance(stream, StreamedSource)
        assert whole.pids() == held.pids() and whole.read("meminfo") == held.read("meminfo")
        assert stream.replayable and [pid for pid, _ in stream.each_process()] == held.pids()
    finally:
        stream.close()
        held.close()

    class Incomplete(CaptureFacts):  # a capture that does not say where its files are
        pass
    with pytest.raises(TypeError, match="_paths"):
        Incomplete()
