"""smem html of a kernel without PSS (before 2.6.25: old embedded boards), in a real browser: the
picture is drawn by RSS, as smem sorts and charts such a reading, and PSS cannot be chosen; it
drew an empty box, "processes · 0 KiB", and "Nothing to draw: no PSS"; its captions still said PSS, and its table was sorted by a PSS column of
"-" only.
"""

import pytest

from conftest import nopss_tree
from page_browser import _no_requests_and_no_errors, _open_file
from page_documents import embedded, write_page

pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
pytestmark = pytest.mark.xdist_group("page")


def test_a_reading_without_pss_is_drawn_by_rss(browser, tmp_path):
    from selenium.webdriver.common.by import By
    tree = nopss_tree(tmp_path)  # (the DVR's own /proc dump, the capture's meminfo)
    path = str(tmp_path / "dvr.html")
    write_page("-S", tree, "--top-mappings", "3", path=path)
    _open_file(browser, path)
    pss = browser.find_element(By.CSS_SELECTOR, '#measure button[data-key="pss"]')
    assert not pss.is_enabled() and "no PSS" in pss.get_attribute("title")
    # nor swap PSS, which no process of a 2.6 kernel has (SwapPss came in 4.3): it drew nothing
    swappss = browser.find_element(By.CSS_SELECTOR, '#measure button[data-key="swappss"]')
    assert not swappss.is_enabled() and "has a swap PSS" in swappss.get_attribute("title")
    rss = browser.find_element(By.CSS_SELECTOR, '#measure button[data-key="rss"]')
    assert rss.get_attribute("aria-checked") == "true"
    assert not browser.find_element(By.ID, "chart-empty").is_displayed()
    # init's RSS, 272 KiB (its smaps' Rss lines summed), is what the picture holds
    assert browser.execute_script("return window.smemPage.state.index.get('processes').v.rss") == 272
    # the captions say the measure drawn, and the table is sorted by RSS (its PSS column is all "-")
    note = browser.find_element(By.ID, "chart-note").text
    assert "the kernel gives no PSS" in note and "largest by RSS" in note and "PSS)" not in note, note
    assert "largest by RSS" in browser.find_element(By.ID, "footer").text
    sorted_by = browser.find_elements(By.CSS_SELECTOR, "#table th[aria-sort]")
    assert [(th.get_attribute("data-key"), th.get_attribute("aria-sort")) for th in sorted_by] == [("rss", "descending")]
    _no_requests_and_no_errors(browser)
    # each process's largest mappings are its largest by RSS, not the first by name
    with open(path) as f:
        maps = embedded(f.read())["maps"][0]
    fields = maps["fields"]
    shown = [(maps["names"][row[1]], row[fields.index("rss")]) for row in maps["processes"]["1"] if row[1] != -1]
    # (smem -S DIR -m -s rss -r: libuClibc 160, busybox 52, ld-uClibc 28, then the heap's 12, ...)
    assert shown == [("/lib/libuClibc-0.9.28.so", 160), ("/bin/busybox", 52), ("/lib/ld-uClibc.so.0", 28)], shown
