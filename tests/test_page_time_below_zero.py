"""A recording's page: its chart of the breakdown over time stacks the areas, and an area below
zero (the breakdown's "anon of processes not read" when meminfo and the processes are read at
different moments) was stacked as it is: drawn downwards over the area under it, which then
looked smaller, and not said anywhere.  It is drawn at 0 (as the single reading's bar leaves it
out), its hover keeps its figure, and a note under the charts says what it is and why below zero,
as the single reading's page says it under its legend.

Real recordings: a capture pushed to smem record three times, with meminfo's AnonPages 0 (the
area below zero in every frame) and as taken (nothing below zero)."""

import pytest

from page_browser import _no_requests_and_no_errors, _open_file
from page_documents import CAPTURE, capture_without_anon, write_page

pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
pytestmark = pytest.mark.xdist_group("page")

AREA = "anon of processes not read"

#: script: [the note's text, or null where it is hidden; the stacked y of AREA; its hover's figures]
DRAWN = f"""const note = document.getElementById('time-below-zero');
    const trace = document.getElementById('time-areas').data.find((t) => t.name === '{AREA}');
    return [note && note.offsetParent ? note.innerText : null, trace ? Array.from(trace.y) : null,
            trace && trace.customdata ? Array.from(trace.customdata) : null]"""


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    from test_page_documents import _pushed_recording
    where = tmp_path_factory.mktemp("below")
    below = _pushed_recording(where / "below", capture_without_anon(where / "below.tar"))
    plain = _pushed_recording(where / "plain", CAPTURE)
    return {name: write_page("-S", rec, path=str(where / f"{name}.html")) and str(where / f"{name}.html")
            for name, rec in (("below", below), ("plain", plain))}


def test_an_area_below_zero_over_time_is_drawn_at_zero_and_said(browser, recordings):
    _open_file(browser, recordings["below"])
    text, stacked, figures = browser.execute_script(DRAWN)
    assert stacked == [0, 0, 0], stacked  # (was its figure, below zero: drawn downwards over the area under it)
    assert figures and all(f < 0 for f in figures), figures  # the hover says the figure
    assert text is not None, "no note under the charts"
    # which area, in how many frames and how low; what it is and why below zero, as the header says it
    assert text.startswith(f"{AREA} is below zero in 3 of 3 frames (down to -"), text
    assert "drawn at 0" in text and "could not read" in text and "Pss_Anon" in text, text
    assert "read at different moments" in text, text
    header = browser.execute_script("return document.getElementById('below-zero').innerText")
    assert header.split("Below zero: ")[1] == text.split("Below zero: ")[1]  # said the same way
    _no_requests_and_no_errors(browser)


def test_nothing_below_zero_says_nothing(browser, recordings):
    _open_file(browser, recordings["plain"])
    text, stacked, _ = browser.execute_script(DRAWN)
    assert text is None
    assert stacked is None or all(v >= 0 for v in stacked)
    _no_requests_and_no_errors(browser)
