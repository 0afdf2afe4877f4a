"""smem html of a kernel without PSS (before 2.6.25: old embedded boards), in a real browser: the
picture is drawn by RSS, as smem sorts and charts such a reading, and PSS cannot be chosen; it
drew an empty box, "processes · 0 KiB", and "Nothing to draw: no PSS".
"""

import shutil
import tarfile

import pytest

from conftest import REALPROC
from page_browser import _no_requests_and_no_errors, _open_file, browser  # noqa: F401 (fixture)
from page_documents import CAPTURE, write_page

pytest.importorskip("plotly")
pytestmark = pytest.mark.xdist_group("page")


def test_a_reading_without_pss_is_drawn_by_rss(browser, tmp_path):
    from selenium.webdriver.common.by import By
    old = REALPROC / "hikvision-dvr-arm-2.6-nopss" / "proc"
    if not old.is_dir():
        pytest.skip("../shared/realproc is not available")
    # the DVR's own /proc dump has no meminfo: borrow the capture's (as test_charts does)
    proc = tmp_path / "dvr" / "proc"
    shutil.copytree(old, proc)
    with tarfile.open(CAPTURE) as tar:
        member = next(m for m in tar.getmembers() if m.name.rstrip("/").endswith("meminfo"))
        (proc / "meminfo").write_bytes(tar.extractfile(member).read())
    path = str(tmp_path / "dvr.html")
    write_page("-S", tmp_path / "dvr", path=path)
    _open_file(browser, path)
    pss = browser.find_element(By.CSS_SELECTOR, '#measure button[data-key="pss"]')
    assert not pss.is_enabled() and "no PSS" in pss.get_attribute("title")
    rss = browser.find_element(By.CSS_SELECTOR, '#measure button[data-key="rss"]')
    assert rss.get_attribute("aria-checked") == "true"
    assert not browser.find_element(By.ID, "chart-empty").is_displayed()
    # init's RSS, 272 KiB (its smaps' Rss lines summed), is what the picture holds
    assert browser.execute_script("return window.smemPage.state.index.get('processes').v.rss") == 272
    _no_requests_and_no_errors(browser)
