"""smem html's process table in a window 800 pixels wide (a laptop's half screen): the PSS it is
sorted by was out of view, right of the command and cgroup cells, and was found only by
scrolling the table sideways.  Under 900 pixels the text cells are cut shorter (each shows its
whole text on hover) and the figures stay in view."""

import pytest

from page_browser import _no_requests_and_no_errors, _open_file

pytest.importorskip("plotly")
pytestmark = pytest.mark.xdist_group("page")

#: script: the pixels the header of each column whose key is an argument reaches beyond the table's visible box
BEYOND_VIEW = """const wrap = document.querySelector('.table-wrap').getBoundingClientRect();
    return [...arguments].map((key) => document.querySelector(`#table th[data-key="${key}"]`).getBoundingClientRect().right - wrap.right)"""


def test_at_800_pixels_the_processes_uss_and_pss_are_in_view(browser, pages):
    browser.set_window_size(800, 900)
    try:
        _open_file(browser, pages["hostile"][0])  # (a long command line and cgroup)
        assert max(browser.execute_script(BEYOND_VIEW, "uss", "pss")) <= 0
        title = browser.execute_script("return document.querySelector('#table tbody td.text:nth-child(4)').title")
        assert title.endswith("--x")  # (the command cut, its whole text on hover)
    finally:
        browser.set_window_size(1400, 1200)
    _no_requests_and_no_errors(browser)
