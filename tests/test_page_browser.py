"""The page tests' browser (page_browser.py): a chromium that died or hung is started again for
the next test, so one crash or hang fails one test, not every later page test of the worker."""

import os
import signal
import time

import pytest

pytestmark = pytest.mark.xdist_group("page")


def _children(pid):
    """The pids whose parent is ``pid`` (from /proc: chromedriver's chromium)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat.rpartition(b")")[2].split()[1]) == pid:
                found.append(int(name))
    return found


def _descendants(pid):
    found, parents = [], [pid]
    while parents:
        children = _children(parents.pop())
        found += children
        parents += children
    return found


def test_a_chromium_that_died_is_started_again(_chromium):
    driver = _chromium.live()
    assert driver.execute_script("return 6 * 7") == 42
    browsers = _children(driver.service.process.pid)
    assert browsers, "chromedriver started no chromium"
    for pid in browsers:
        os.kill(pid, signal.SIGKILL)
    for pid in browsers:  # (gone, and reaped by chromedriver)
        for _ in range(200):
            if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat", "rb").read().split(b") ")[1][:1] == b"Z":
                break
            time.sleep(0.05)
    again = _chromium.live()
    assert again is not driver
    assert again.execute_script("return 6 * 7") == 42
    assert _chromium.live() is again  # (alive: kept)


def test_a_chromium_that_hangs_is_killed_and_started_again(_chromium):
    """A browser that stops answering (here: stopped, every process of it) is taken for hung after
    _Chromium.ALIVE seconds, killed whole, and replaced: a CI run once waited two minutes on it
    in each of 31 later tests.  (ALIVE is 2 s here, not 15: a stopped browser never answers, so
    any wait shows it; the live browsers of the other tests keep 15.)"""
    driver = _chromium.live()
    browsers = _descendants(driver.service.process.pid)
    assert browsers, "chromedriver started no chromium"
    for pid in browsers:
        os.kill(pid, signal.SIGSTOP)
    started = time.monotonic()
    _chromium.ALIVE = 2
    try:
        again = _chromium.live()
    finally:
        del _chromium.ALIVE  # (the class's again)
    assert time.monotonic() - started < 2 + 30
    assert again is not driver
    assert again.execute_script("return 6 * 7") == 42
    for pid in browsers + [driver.service.process.pid]:  # (the hung one is gone, not left stopped)
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat", "rb").read().split(b") ")[1][:1] == b"Z"
