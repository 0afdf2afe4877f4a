"""smem html's process table in a window 800 pixels wide (a laptop's half screen): the PSS it is
sorted by was out of view, right of the command and cgroup cells, and was found only by
scrolling the table sideways.  Under 900 pixels the text cells are cut shorter (each shows its
whole text on hover) and the figures stay in view; a comparison's, of three figures a measure,
are cut shorter still."""

import pytest

from page_browser import _no_requests_and_no_errors, _open_file

pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
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


@pytest.fixture(scope="module")
def hostile_comparison(pages, tmp_path_factory):
    """The hostile capture compared with itself: a comparison's table of long commands and cgroups."""
    from page_documents import write_page
    capture = str(pages["hostile"][0]).replace("hostile.html", "hostile.tar")
    path = str(tmp_path_factory.mktemp("compared") / "hostile-compared.html")
    write_page("--compare", capture, "-S", capture, path=path)
    return path


@pytest.mark.parametrize("width", [800, 1000, 1400])
def test_a_comparisons_change_of_pss_is_in_view(browser, pages, hostile_comparison, width):
    """A comparison's process table has three figures a measure (OLD's, NEW's, the change) and its
    sort, dPSS, was right of the view at 800 pixels, at 1000 too, and with long commands and
    cgroups at 1400."""
    browser.set_window_size(width, 900)
    try:
        for page in (pages["compared"][0], hostile_comparison):
            _open_file(browser, page)
            assert browser.execute_script("return document.querySelector('#table th[aria-sort]').dataset.key") == "dpss"
            assert max(browser.execute_script(BEYOND_VIEW, "old_pss", "pss", "dpss")) <= 0, (page, width)
        title = browser.execute_script("return document.querySelector('#table tbody td.text:nth-child(4)').title")
        assert title.endswith("--x")  # (the command cut, its whole text on hover)
    finally:
        browser.set_window_size(1400, 1200)
    _no_requests_and_no_errors(browser)
