"""smem html's process table in a window 800 pixels wide (a laptop's half screen): the PSS it is
sorted by was out of view, right of the command and cgroup cells, and was found only by
scrolling the table sideways.  Under 900 pixels the text cells are cut shorter (each shows its
whole text on hover) and the figures stay in view; a comparison's, of three figures a measure,
are cut shorter still."""

import pytest

from page_browser import _no_requests_and_no_errors, _open_file, _wait

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


#: script: [whether the table's frame shows a shadow at its left edge, at its right, the button's text
#: or null where hidden, the headers of the columns half or more right of the table's view]
EDGES = """const frame = document.querySelector('.table-frame'), wrap = document.querySelector('.table-wrap');
    const shade = (where) => getComputedStyle(frame, where).opacity === '1';
    const edge = wrap.getBoundingClientRect().left + wrap.clientLeft + wrap.clientWidth;
    const more = document.getElementById('table-more');
    return [shade('::before'), shade('::after'), more.hidden || !more.offsetWidth ? null : more.textContent,
            [...document.querySelectorAll('#table thead th')].filter((th) => { const r = th.getBoundingClientRect();
                                                                                return r.left + r.width / 2 > edge; })
                                                                 .map((th) => th.textContent)]"""


def test_a_table_wider_than_its_box_says_its_columns_go_on_to_the_right(browser, pages):
    """At 1400 px a comparison's process table is wider than its card: its RSS columns were
    reached only by scrolling it sideways, and nothing said they were there.  A shadow at its right edge and a button naming the columns
    there say so; the button scrolls to them, and then the shadow is at the left edge.  A table
    that fits says nothing."""
    from selenium.webdriver.common.by import By
    _open_file(browser, pages["compared"][0])
    left, right, button, hidden = browser.execute_script(EDGES)
    assert not left and right and hidden and {"RSS", "dRSS"} <= set(hidden), (left, right, hidden)
    assert button.startswith(f"{len(hidden)} more columns → ") and hidden[0] in button, button
    browser.find_element(By.ID, "table-more").click()
    _wait(browser, "const w = document.querySelector('.table-wrap'); return w.scrollLeft + w.clientWidth >= w.scrollWidth - 1")
    assert browser.execute_script(EDGES) == [True, False, None, []]
    _open_file(browser, pages["plain"][0])  # (its ten columns fit at 1400 px)
    assert browser.execute_script(EDGES) == [False, False, None, []]
    _no_requests_and_no_errors(browser)
