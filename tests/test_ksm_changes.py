"""Whose ksm_stat a collection asks (smem.ksm_changes): where the system's KSM counters moved,
the processes ksmd may scan, and one it did not scan only once that process ran (its stat moved) or was read.

A /proc and /sys tree of files the test writes stands in for a host running KSM, so the
counters move exactly when the test says; the ksm_stat texts are this kernel's (6.18), and
tests/test_incremental.py's KSM tests run the same code against ksmd itself."""

import os

import pytest

from conftest import FIXTURES
from smem.ksm_changes import KsmChanges
from smem.sources.live import LiveSource

SCANNED = (FIXTURES / "parsers" / "ksm_stat-6.18").read_bytes()  # a region given: ksm_mergeable yes
NEVER_GIVEN = (b"ksm_rmap_items 0\nksm_zero_pages 0\nksm_merging_pages 0\nksm_process_profit 0\n"
               b"ksm_merge_any: no\nksm_mergeable: no\n")  # (/proc/self/ksm_stat of a process that gave none)


class Asked(LiveSource):
    """A tree read as this machine's /proc is, that notes whose ksm_stat is asked."""

    def __init__(self, root):
        super().__init__(str(root), local=False)
        self.asked = []

    def read(self, path):
        if path.endswith("/ksm_stat"):
            self.asked.append(int(path.partition("/")[0]))
        return super().read(path)


@pytest.fixture
def host(tmp_path):
    for pid, text in ((100, NEVER_GIVEN), (200, SCANNED), (2, b"")):  # (2: kthreadd, no address space)
        (tmp_path / "proc" / str(pid)).mkdir(parents=True)
        (tmp_path / "proc" / str(pid) / "ksm_stat").write_bytes(text)
    (tmp_path / "proc" / "sys" / "kernel" / "mm" / "ksm").mkdir(parents=True)  # (a tree keeps /sys as a capture does)
    return tmp_path


def _merge(host, sharing):
    """ksmd merged (or unmerged) pages: the system's counter moves."""
    for name, value in (("pages_shared", 10), ("pages_sharing", sharing), ("ksm_zero_pages", 0)):
        (host / "proc" / "sys" / "kernel" / "mm" / "ksm" / name).write_text(f"{value}\n")


def _asked(changes, source, chosen=frozenset()):
    source.asked.clear()
    changes.moved(source, [2, 100, 200], set(chosen), {}, 4)
    return sorted(source.asked)


def test_a_process_ksmd_does_not_scan_is_asked_again_only_once_read(host):
    source, changes = Asked(host), KsmChanges()
    _merge(host, 1000)
    assert _asked(changes, source) == []  # (the first collection: nothing to compare with)
    _merge(host, 2000)
    assert _asked(changes, source) == [2, 100, 200]  # (the first time the counters move: everyone)
    _merge(host, 3000)
    assert _asked(changes, source) == [200]
    assert _asked(changes, source) == []  # (the counters did not move)
    _merge(host, 4000)
    assert _asked(changes, source, chosen={100}) == [200]  # (read anyway: asked after)
    changes.read({100})
    (host / "proc" / "100" / "ksm_stat").write_bytes(SCANNED)  # it gave ksmd a region while it ran
    _merge(host, 5000)
    assert _asked(changes, source) == [100, 200]
    _merge(host, 6000)
    assert _asked(changes, source) == [100, 200]  # (ksmd scans both now)


def test_a_process_ksmd_does_not_scan_is_asked_again_once_it_ran(host):
    """madvise(MADV_MERGEABLE) faults nothing: a sleeping process that said no, woke, gave ksmd a
    region and slept again was asked no more (nothing read it) while ksmd merged its pages; that it
    ran shows in its stat, which every collection reads."""
    source, changes = Asked(host), KsmChanges()
    for sharing in (1000, 2000, 3000):
        _merge(host, sharing)
        _asked(changes, source)
    (host / "proc" / "100" / "ksm_stat").write_bytes(SCANNED)
    _merge(host, 4000)
    assert _asked(changes, source) == [200]  # (it did not run, as far as a collection saw)
    changes.ran({100})
    _merge(host, 5000)
    assert _asked(changes, source) == [100, 200]


def test_a_process_that_says_nothing_of_its_scan_is_asked_every_time(host):
    """ksm_stat before Linux 6.1 (ksm_merging_pages alone) says nothing of ksmd's scan: asked."""
    for pid in (100, 200):
        os.unlink(host / "proc" / str(pid) / "ksm_stat")
        (host / "proc" / str(pid) / "ksm_merging_pages").write_text("0\n")
    source, changes = Asked(host), KsmChanges()
    for sharing in (1000, 2000):
        _merge(host, sharing)
        _asked(changes, source)
    for sharing in (3000, 4000, 5000):
        _merge(host, sharing)
        assert source.read_optional("100/ksm_stat") is None
        assert _asked(changes, source) == [100, 200]


def test_a_process_that_shows_merged_pages_is_scanned_whatever_else_it_says(host):
    """Merged pages are ksmd's doing, whatever the other lines say."""
    (host / "proc" / "100" / "ksm_stat").write_bytes(NEVER_GIVEN.replace(b"merging_pages 0", b"merging_pages 3"))
    source, changes = Asked(host), KsmChanges()
    for sharing in (1000, 2000, 3000):
        _merge(host, sharing)
        asked = _asked(changes, source)
    assert asked == [100, 200]


#: /proc/PID/ksm_stat from Linux 6.1 to (at least) 6.13, of a process whose region ksmd has not reached yet
#: (its rmap items are made as ksmd scans it, up to a whole pass after madvise): no
#: ksm_mergeable or ksm_merge_any (kernels of 2025 on) to tell it from one that gave ksmd nothing
NOT_REACHED_YET = b"ksm_rmap_items 0\nksm_zero_pages 0\nksm_merging_pages 0\nksm_process_profit 0\n"


def test_a_process_ksmd_has_not_reached_is_asked_until_it_is_merged(host):
    """Without ksm_mergeable, no rmap item is no answer: a process that gave ksmd a region and slept (asked
    while ksmd had not reached it) was left out of every later collection until it was read by
    age, while ksmd merged its pages."""
    (host / "proc" / "100" / "ksm_stat").write_bytes(NOT_REACHED_YET)
    source, changes = Asked(host), KsmChanges()
    for sharing in (1000, 2000, 3000):
        _merge(host, sharing)
        asked = _asked(changes, source)
    assert asked == [100, 200]
    (host / "proc" / "100" / "ksm_stat").write_bytes(NOT_REACHED_YET.replace(b"merging_pages 0", b"merging_pages 7"))
    _merge(host, 4000)
    assert 100 in changes.moved(source, [100, 200], set(), {}, 4)  # (ksmd merged its pages: read again)


def _scans(host, passes):
    """ksmd finished another full pass over the processes it scans."""
    (host / "proc" / "sys" / "kernel" / "mm" / "ksm" / "full_scans").write_text(f"{passes}\n")


def test_a_process_ksmd_passed_twice_without_an_rmap_item_is_asked_no_more(host):
    """Without ksm_mergeable, two of ksmd's full scans after a process was first asked without an
    rmap item tell: a pass makes an rmap item of each page of a region given, so it gave none.
    It is asked again once it is read (it ran: it may give one), two scans on from then."""
    (host / "proc" / "100" / "ksm_stat").write_bytes(NOT_REACHED_YET)
    source, changes = Asked(host), KsmChanges()
    _scans(host, 10)
    _merge(host, 1000)
    _asked(changes, source)
    asked = []
    for passes, sharing in ((10, 2000), (11, 3000), (12, 4000), (12, 5000), (13, 6000)):
        _scans(host, passes)
        _merge(host, sharing)
        asked.append(_asked(changes, source))
    assert asked == [[2, 100, 200], [100, 200], [100, 200], [200], [200]]
    changes.read({100})
    for passes, sharing in ((13, 7000), (14, 8000), (15, 9000), (15, 10000)):
        _scans(host, passes)
        _merge(host, sharing)
        asked.append(_asked(changes, source))
    assert asked[5:] == [[100, 200], [100, 200], [100, 200], [200]]
