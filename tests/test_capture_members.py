"""Members no reader asks for are read past, never held (smem/sources/capture_members.py).

A gzip of a megabyte can inflate to hundreds of MiB of members named as nothing smem reads;
holding them made ``smem -S``, ``capture --listen`` and ``record --listen`` cost what the peer sent.
Each reading form is tried (the fast walk and tarfile's, held and streamed) on such a bomb, in a
child whose peak is measured; and every member a real capture holds is one a reader asks for.
"""

import functools
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("zstandard", reason="hostile_inputs makes zstd archives: smem[compression]")
import hostile_inputs as hc  # noqa: E402
from hostile_bounds import max_rss_growth  # noqa: E402
from smem.capture_writer import write_capture  # noqa: E402
from smem.errors import CaptureError  # noqa: E402
from smem.sources import open_source  # noqa: E402
from smem.sources.archive import ArchiveSource  # noqa: E402
from smem.sources.archive_stream import ArchiveStream  # noqa: E402
from smem.sources.base import NeedHeld  # noqa: E402
from smem.sources.capture_members import is_read_member, member_path  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "captures"
#: the members no reader asks for, in all: twice CEILING, so that a reader holding them passes it
JUNK = 192 << 20
#: the peak growth allowed for reading the bomb, MiB: the real capture in it is a few KiB
CEILING = 96


@functools.lru_cache(maxsize=None)
def _bomb(head="fast", unit=48 << 20):
    """gzip of a small capture then JUNK bytes of zero-filled members named ``junkN``, ``N/environ``
    and ``sys/x``: under a MiB.  ``head``: the capture's tar, one every reading form takes ("fast")
    or one only tarfile reads ("tarfile").  Made once for the module (each costs a fraction of a
    second of compression)."""
    data = hc.compress("gzip", hc.without_end(_pax_head() if head == "tarfile" else hc.capture_tar()))
    names = ["junk", "1234/environ", "sys/kernel/x", "proc/anything"]
    for i in range(JUNK // unit):
        data += hc.zeros_stream("gzip", unit, prefix=hc.header(f"{names[i % 4]}{i}".encode(), unit))
    return data + hc.compress("gzip", bytes(1024))


def _pax_head():
    """A capture that only tarfile reads (a pax global header): the other reading form."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT, pax_headers={"comment": "x"}) as tar:
        for name, data, *extra in hc.capture_members():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
            else:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def _streamed(data):
    """The pids as the loader reads a streamed archive: one only tarfile reads is then read held."""
    stream = ArchiveStream(data, "bomb")
    try:
        return [pid for pid, _ in stream.each_process()]
    except NeedHeld:
        return stream.held().pids()


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("head", ["fast", "tarfile"])
@pytest.mark.parametrize("form", ["held", "streamed"])
def test_a_bomb_of_unread_members_costs_what_the_capture_costs(head, form):
    data = _bomb(head)

    def read():
        if form == "streamed":
            assert _streamed(data) == [1234]
        else:
            held = ArchiveSource(data, "bomb")
            assert held.pids() == [1234] and held.read("1234/smaps") == hc.SMAPS
            assert held.read_optional("junk0") is None and held.read_optional("sys/kernel/x2") is None
    code, peak = max_rss_growth(read)
    assert code == 0 and peak < CEILING, (code, peak)


@pytest.mark.uses("cpu")
def test_smem_reading_a_bomb_file_peaks_as_for_its_capture(tmp_path):
    """The command line as a user runs it: its own process, its peak from wait4."""
    path = tmp_path / "bomb.tgz"
    path.write_bytes(_bomb())
    (tmp_path / "small.tar").write_bytes(hc.capture_tar())
    peaks = {}
    for name in ("bomb.tgz", "small.tar"):
        with open(tmp_path / "out", "w+b") as out, open(tmp_path / "err", "w+b") as err:
            child = subprocess.Popen([sys.executable, "-m", "smem", "-S", str(tmp_path / name)],
                                     stdout=out, stderr=err)
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0), err.seek(0)
            assert child.returncode == 0, err.read()
            assert b"dbus-daemon" in out.read()
        peaks[name] = usage.ru_maxrss >> 10
    assert peaks["bomb.tgz"] < peaks["small.tar"] + CEILING, peaks


def test_an_unread_member_past_the_member_limit_is_still_refused(tmp_path):
    path = tmp_path / "c.tgz"
    path.write_bytes(hc.zeros_stream("gzip", 8 << 20, prefix=hc.without_end(hc.capture_tar())
                                     + hc.header(b"junk", 3 << 30)))
    with pytest.raises(CaptureError, match=r"member \d+ \(junk\) inflates past the limit of 256 MiB"):
        open_source(str(path))


@pytest.mark.parametrize("head", ["fast", "tarfile"])
def test_an_unread_member_cut_short_is_still_a_cut(head):
    tar = hc.without_end(_pax_head() if head == "tarfile" else hc.capture_tar())
    with pytest.raises(CaptureError, match="truncated"):
        ArchiveSource(hc.compress("gzip", tar + hc.header(b"junk", 100000) + bytes(4096)), "cut")


def _names(data):
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return [(m.name, member_path(m.name)) for m in tar if m.isreg()]


@pytest.mark.uses("cpu")
def test_every_member_of_a_real_capture_is_one_a_reader_asks_for():
    """A capture of this machine, the fixtures (C smemcap's, ours, the old script's) and an exact
    capture: nothing in them is skipped, so they read as before."""
    out = io.BytesIO()
    source = open_source(None)
    try:
        write_capture(source, out)
    finally:
        source.close()
    captures = {"this machine": out.getvalue(), "exact": hc.exact_capture([5, 6])}
    captures.update((p.name, p.read_bytes()) for p in FIXTURES.glob("*.tar.gz"))
    for label, data in captures.items():
        unread = [name for name, path in _names(data) if path is not None and not is_read_member(path)]
        assert not unread, (label, unread)


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("head", ["fast", "tarfile"])
def test_unread_members_count_towards_the_whole_capture_limit(head, monkeypatch):
    """(The limit, 4 GiB, made 64 MiB here: the bomb holds 192 MiB of members no reader asks for.)"""
    import smem.sources.decompressed as decompressed
    monkeypatch.setattr(decompressed, "MAX_CAPTURE_BYTES", 64 << 20)
    with pytest.raises(CaptureError, match="capture decompresses to more than"):
        ArchiveSource(_bomb(head), "bomb")
