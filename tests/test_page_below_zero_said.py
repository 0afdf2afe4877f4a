"""smem html's header: an area below zero (the breakdown's "anon of processes not read" when
meminfo and the processes are read at different moments) is said under the legend, what it is
and why it is below zero.  It was said only in the legend item's hover text, so a screenshot
showed "-112 MiB" unexplained."""

import pytest

from page_browser import _no_requests_and_no_errors, _open_file
from page_documents import capture_without_anon, write_page

pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
pytestmark = pytest.mark.xdist_group("page")

#: script: [the note's text as shown, its box's right edge, the window's width, whether it is under the legend], or null
SAID = """const note = document.getElementById('below-zero');
    if (!note || !note.offsetParent) return null;
    const box = note.getBoundingClientRect(), legend = document.getElementById('legend').getBoundingClientRect();
    return [note.innerText, box.right, document.documentElement.clientWidth, box.top >= legend.bottom]"""


@pytest.mark.parametrize("width", [1400, 800])
def test_an_area_below_zero_is_said_under_the_legend(browser, pages, tmp_path, width):
    path = str(tmp_path / "below.html")
    write_page("-S", capture_without_anon(tmp_path / "below.tar"), path=path)
    browser.set_window_size(width, 900)
    try:
        _open_file(browser, path)
        said = browser.execute_script(SAID)
        assert said is not None, "no note under the legend"
        text, right, window, under = said
        assert right <= window and under, said
        # what it is (the processes smem could not read: in meminfo's figure, in no process's) and why below zero
        assert text.startswith("anon of processes not read is -"), text
        assert "could not read" in text and "AnonPages" in text and "Pss_Anon" in text, text
        assert "read at different moments" in text, text
        _open_file(browser, pages["plain"][0])  # nothing below zero: nothing said
        assert browser.execute_script(SAID) is None
    finally:
        browser.set_window_size(1400, 1200)
    _no_requests_and_no_errors(browser)
