"""smem html with names holding Unicode bidi controls (U+202E RIGHT-TO-LEFT OVERRIDE, a stray
U+2069 POP DIRECTIONAL ISOLATE): anyone can name a process so, and an override left open reverses
what follows it on its line.  The tables isolate each name (<bdi>), but the picture's labels, the
path above it and the sharing panel put a name before a pid or a figure: a process named
"\u202e..." showed its pid 1234 as 4321 and its crumb's 154 KiB as BiK 451.  Each name is
isolated there too, its characters kept."""

import pytest

from page_browser import _no_requests_and_no_errors, _open_file
from page_documents import write_page
import hostile_inputs as hc

pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
pytestmark = pytest.mark.xdist_group("page")

RLO, PDI = "\u202e", "\u2069"
NAME = f"{PDI}{RLO}evil"          # (the PDI would close an isolate the page put around the name)
USER = f"{RLO}mallory{PDI}{RLO}"

#: script: the x of each character of ``arguments[0]`` in the SVG text element (a plotly box's label)
#: holding it, in the order of the text
SVG_XS = """const t = [...document.querySelectorAll('#chart text.slicetext')].find((e) => e.textContent.includes(arguments[0]));
    if (!t) return null;
    const at = t.textContent.indexOf(arguments[0]);
    return [...arguments[0]].map((_, i) => t.getStartPositionOfChar(at + i).x)"""
#: script: the x of each character of ``arguments[1]`` in the first element ``arguments[0]`` finds holding it
HTML_XS = """const e = [...document.querySelectorAll(arguments[0])].find((e) => e.textContent.includes(arguments[1]));
    if (!e) return null;
    const walker = document.createTreeWalker(e, NodeFilter.SHOW_TEXT), range = document.createRange();
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const at = n.data.indexOf(arguments[1]);
      if (at < 0) continue;
      return [...arguments[1]].map((_, i) => { range.setStart(n, at + i); range.setEnd(n, at + i + 1);
                                               return range.getBoundingClientRect().left; });
    }
    return null"""


def _increasing(xs):
    return xs is not None and all(a < b for a, b in zip(xs, xs[1:]))


@pytest.fixture(scope="module")
def bidi_page(tmp_path_factory):
    where = tmp_path_factory.mktemp("bidi")
    processes = {1234: hc.process_files(1234, stat=hc.STAT.replace(b"(dbus-daemon)", f"({NAME})".encode()))}
    members = [(m[0], m[1], {**m[2], "uname": USER}) if len(m) > 2 else m
               for m in hc.capture_members(processes=processes)]
    capture = where / "bidi.tar"
    capture.write_bytes(hc.tar_of(members))
    path = str(where / "bidi.html")
    write_page("-S", capture, path=path)
    return path


def test_a_name_with_bidi_controls_reverses_no_pid_or_figure_after_it(browser, bidi_page):
    _open_file(browser, bidi_page)
    browser.execute_script("window.smemPage.zoomTo(window.smemPage.state.index.get('process:1234'))")
    # the picture's box of the process: its name, then its pid, read left to right
    label = browser.execute_script("return [...document.querySelectorAll('#chart text.slicetext')].map((t) => t.textContent)")
    assert any("evil" in text and "1234" in text for text in label), label
    assert _increasing(browser.execute_script(SVG_XS, "1234"))
    # the path above the picture: the process's name, pid and figure (154 KiB)
    crumb = browser.execute_script("return [...document.querySelectorAll('#crumbs button')].pop().textContent")
    assert NAME in crumb and crumb.endswith(" 1234 · 154 KiB"), crumb
    assert _increasing(browser.execute_script(HTML_XS, "#crumbs button", "1234 · 154 KiB"))
    # the sharing panel: the user, then the process's figures
    note = browser.execute_script("return document.querySelector('#share p.note').textContent")
    assert USER in note and " · PSS 154 KiB" in note, note
    assert _increasing(browser.execute_script(HTML_XS, "#share p.note", "PSS 154 KiB"))
    _no_requests_and_no_errors(browser)
