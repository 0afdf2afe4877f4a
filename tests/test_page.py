"""smem html's page in a real browser (Debian's chromium and chromium-driver through selenium),
opened from a file with the network off: drawn, zoomed, sorted, filtered, hostile names shown as
text, a comparison marked, and smem serve's page.  A recording's timeline is test_page_recording.py;
what the page embeds, without a browser, test_page_documents.py.  One browser serves the worker
(page_browser.py).
"""

import json
import shlex
import urllib.error
import urllib.request

import pytest

from conftest import run_smem
from page_browser import _click_box, _no_requests_and_no_errors, _open, _open_file, _texts, _wait
from page_documents import (CAPTURE, CAPTURES, CGROUP, CGROUP_CELLS, IMG, SCRIPT_END, SVG_MAP, USER,
                            capture_without_anon, embedded, write_page)
from serve_process import serving, stop
import hostile_inputs as hc

pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
pytestmark = pytest.mark.xdist_group("page")


def test_the_page_draws_offline_zooms_sorts_and_filters(browser, pages):
    from selenium.webdriver.common.by import By
    _open_file(browser, pages["plain"][0])
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chart g.slice")) > 20
    assert len(browser.find_elements(By.CSS_SELECTOR, "#bar .seg")) > 5
    crumbs = lambda: [text.split(" · ")[0] for text in _texts(browser, "#crumbs button")]
    assert crumbs() == ["MemTotal", "processes (PSS)"]
    _click_box(browser, "daemon")
    _wait(browser, "return document.querySelectorAll('#crumbs button').length === 3")
    assert crumbs()[-1] == "daemon"
    browser.find_element(By.CSS_SELECTOR, "#crumbs button").click()  # back to MemTotal
    _wait(browser, "return document.querySelectorAll('#crumbs button').length === 1")

    pids = lambda: [int(text) for text in _texts(browser, "#table tbody td:first-child")]
    header = browser.find_element(By.CSS_SELECTOR, '#table th[data-key="pid"]')
    header.click()
    assert pids() == sorted(pids()) and len(pids()) == 24
    browser.find_element(By.CSS_SELECTOR, '#table th[data-key="pid"]').click()
    assert pids() == sorted(pids(), reverse=True)
    browser.find_element(By.ID, "filter").send_keys("shm-server")
    commands = _texts(browser, "#table tbody td:nth-child(4)")
    assert len(commands) == 5 and all("shm-server" in c for c in commands)
    # a row selected zooms the picture to it, and says what it maps and who shares it
    browser.find_element(By.CSS_SELECTOR, "#table tbody tr").click()
    assert crumbs()[-1] == "smem-shm-c 7906"  # the program and the pid; its command line in the panel
    assert "how many other processes map each" in browser.find_element(By.ID, "share").text
    # a user selected in its table: the picture goes to that user
    browser.find_element(By.CSS_SELECTOR, '#tabs button[data-table="user"]').click()
    browser.execute_script("""return [...document.querySelectorAll('#table tbody tr')]
        .find((tr) => tr.cells[0].innerText === 'nobody')""").click()
    assert crumbs() == ["MemTotal", "processes (PSS)", "nobody"]
    _no_requests_and_no_errors(browser)


def test_many_boxes_under_one_parent_fold_into_one_that_adds_up(browser, tmp_path):
    from selenium.webdriver.common.by import By
    capture = tmp_path / "many.tar"
    capture.write_bytes(hc.capture_tar(processes={pid: hc.process_files(pid) for pid in range(2000, 2300)}))
    path = str(tmp_path / "many.html")
    write_page("-S", capture, path=path)
    _open_file(browser, path)
    program = "dbus-daemon"  # 300 processes of one user and one program
    browser.execute_script(f"window.smemPage.zoomTo(window.smemPage.state.index.get('user:alice/program:{program}'))")
    boxes = browser.execute_script("""return [...document.querySelectorAll('#chart g.slice text.slicetext')]
        .map(t => t.textContent)""")
    more = [b for b in boxes if "more, smaller" in b]
    assert len(more) == 1 and more[0].startswith("51 more, smaller"), more
    sizes = browser.execute_script("""const s = window.smemPage.state, top = s.index.get('user:alice/program:dbus-daemon');
        return [top.v.pss, top.children.length, top.children.reduce((a, c) => a + c.v.pss, 0)]""")
    assert sizes == [300 * 154, 250, 300 * 154]
    _no_requests_and_no_errors(browser)


def test_hostile_names_show_as_text_and_run_nothing(browser, pages):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By
    _open_file(browser, pages["hostile"][0])
    cells = _texts(browser, "#table tbody td")
    assert f"{SCRIPT_END} --x" in cells and IMG in cells and USER in cells
    assert browser.find_elements(By.CSS_SELECTOR, "img, [onerror], [onload], [onmouseover], b[onmouseover]") == []
    labels = browser.execute_script("return [...document.querySelectorAll('#chart text')].map(t => t.textContent)")
    assert any(label.startswith(USER) for label in labels), labels
    browser.execute_script("window.smemPage.zoomTo(window.smemPage.state.index.get('process:1234'))")
    labels = browser.execute_script("return [...document.querySelectorAll('#chart text')].map(t => t.textContent)")
    file_name = SVG_MAP.rsplit("/", 1)[1].replace("\u2028", "")  # (its box says its file's name, its hover the path)
    assert any(file_name in label.replace("\u2028", "") for label in labels), labels
    assert any(SVG_MAP.replace("<", "&lt;").replace(">", "&gt;") in hover
               for hover in browser.execute_script("return document.getElementById('chart').data[0].hovertext"))
    browser.find_element(By.CSS_SELECTOR, "button[data-table=cgroup]").click()  # (long paths: cut, their ends show)
    assert browser.execute_script(CGROUP_CELLS) == [[CGROUP, True, False], [f"{CGROUP}/payload", True, False]]
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text
    _no_requests_and_no_errors(browser)


def test_the_compared_page_marks_what_grew_shrank_came_and_went(browser, pages):
    from selenium.webdriver.common.by import By
    compared = embedded(pages["compared"][1])["process"][0]["rows"]
    gone = next(r for r in compared if r["status"] == "gone")
    grew = next(r for r in compared if r["status"] == "" and r["dpss"] > 0)
    _open_file(browser, pages["compared"][0])
    shown = browser.execute_script("""return [...document.querySelectorAll('#table tbody tr')].map(tr => ({
        pid: Number(tr.cells[0].textContent), tags: [...tr.querySelectorAll('.tag')].map(t => t.textContent),
        grow: tr.querySelectorAll('td.grow').length, shrink: tr.querySelectorAll('td.shrink').length}))""")
    rows = {r["pid"]: r for r in shown}
    assert rows[gone["pid"]]["tags"] == ["gone"] and rows[gone["pid"]]["shrink"]
    assert rows[grew["pid"]]["grow"] and not rows[grew["pid"]]["tags"]
    # sorted by the size of the change
    by_pid = {r["pid"]: abs(r["dpss"]) for r in compared}
    assert [by_pid[r["pid"]] for r in shown] == sorted(by_pid.values(), reverse=True)
    _no_requests_and_no_errors(browser)


def test_the_compared_group_tables_show_the_change_of_their_count(browser, pages):
    """A group's Count in a compared table was NEW's alone (OLD's for a gone row); beside it now its
    change, coloured as the memory's (quirks.tar.gz, OLD, had more of root's processes, and users
    faithful.tar.gz lacks)."""
    from selenium.webdriver.common.by import By
    users = embedded(pages["compared"][1])["user"][0]
    assert [c["key"] for c in users["columns"]][:4] == ["user", "count", "dcount", "status"]
    root = next(r for r in users["rows"] if r["user"] == "root")
    assert root["dcount"] < 0 and root["status"] == ""
    _open_file(browser, pages["compared"][0])
    browser.find_element(By.CSS_SELECTOR, '#tabs button[data-table="user"]').click()
    shown = browser.execute_script("""return [...document.querySelectorAll('#table tbody tr')].map(tr => ({
        user: tr.cells[0].textContent, change: tr.cells[2].textContent, shrink: tr.cells[2].classList.contains('shrink'),
        grow: tr.cells[2].classList.contains('grow')}))""")
    assert {"user": "root", "change": str(root["dcount"]), "shrink": True, "grow": False} in shown
    gone = next(r for r in users["rows"] if r["status"] == "gone")  # only in OLD: minus its count
    assert gone["count"] is None and gone["dcount"] < 0
    assert {"user": gone["user"], "change": str(gone["dcount"]), "shrink": True, "grow": False} in shown
    assert not any(r["grow"] or r["change"].startswith("+") for r in shown)  # (NEW has none more)
    _no_requests_and_no_errors(browser)


#: script: per segment of the header's bar, [its pixels beyond its share of the bar's, its label, whether the label
#: fits, the contrast of its text on its colour (WCAG)]
BAR_SEGMENTS = """const bar = document.getElementById('bar').getBoundingClientRect(), whole = window.smemPage.state.data.meta.memtotal;
    const luminance = (css) => { const [r, g, b] = css.match(/[0-9.]+/g).slice(0, 3).map((v) => v / 255)
        .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4)); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
    const rows = window.smemPage.state.data.system.rows.filter((r) => r.used > 0 && r.status !== 'gone');
    return [...document.querySelectorAll('#bar .seg')].map((seg, i) => {
        const style = getComputedStyle(seg), [a, b] = [luminance(style.color), luminance(style.backgroundColor)].sort((x, y) => x - y);
        return [seg.getBoundingClientRect().width - bar.width * rows[i].used / whole, seg.textContent,
                seg.scrollWidth <= seg.clientWidth, (b + 0.05) / (a + 0.05)]; })"""


def test_the_bars_segments_are_as_wide_as_their_share_and_their_labels_whole_and_readable(browser, pages, tmp_path):
    """A segment of 0.1% of MemTotal was 11 pixels wide (its padding and border), a label too long
    for its segment was cut ("page cache n"), and white text on the light green of free memory
    was hard to read."""
    _open_file(browser, pages["plain"][0])
    segments = browser.execute_script(BAR_SEGMENTS)
    assert len(segments) > 5
    assert all(extra < 1.5 for extra, *_ in segments), segments  # (the large give the smallest their pixel)
    labelled = [s for s in segments if s[1]]
    assert any(s[1].startswith("free ") for s in labelled), labelled
    assert all(fits and contrast >= 3 for _, _, fits, contrast in labelled), labelled
    _no_requests_and_no_errors(browser)
    # an area below zero (meminfo and the processes read at different moments) says why where it is shown
    write_page("-S", capture_without_anon(tmp_path / "below.tar"), path=str(tmp_path / "below.html"))
    _open_file(browser, str(tmp_path / "below.html"))
    tips = browser.execute_script("return [...document.querySelectorAll('#legend .item')].map((b) => b.title)")
    below = [t for t in tips if t.startswith("anon of processes not read: -")]
    assert below and "\nbelow zero: anon of processes not read: meminfo and the processes are read" in below[0], tips


def test_memtotal_is_memtotal_in_the_path_and_its_box_when_an_area_is_below_zero(browser, tmp_path):
    """An area below zero is no box, so MemTotal's boxes add up to more than MemTotal: the path and
    the box said "MemTotal · 23.6 GiB" under a header of "MemTotal 23.5 GiB"."""
    path = str(tmp_path / "below.html")
    write_page("-S", capture_without_anon(tmp_path / "below.tar"), path=path)
    _open_file(browser, path)
    (memtotal,) = [fact.split(" ", 1)[1] for fact in _texts(browser, "#facts > span") if fact.startswith("MemTotal ")]
    assert _texts(browser, "#crumbs button")[0] == f"MemTotal \u00b7 {memtotal}"
    browser.execute_script("window.smemPage.zoomTo(window.smemPage.state.tree)")
    _wait(browser, "return document.querySelectorAll('#crumbs button').length === 1")
    assert _texts(browser, "#crumbs button") == [f"MemTotal \u00b7 {memtotal}"]
    root = browser.execute_script("const d = document.getElementById('chart').data[0]; return d.text[0]")
    assert root == memtotal
    _no_requests_and_no_errors(browser)


def test_a_measure_with_nothing_to_draw_says_so_and_one_the_machine_lacks_cannot_be_chosen(browser, pages, tmp_path):
    """Swap PSS on a machine without swap drew one empty box, "processes · 0 KiB"; what a capture
    does not know the header said as "?"."""
    from selenium.webdriver.common.by import By
    swap_pss = '#measure button[data-key="swappss"]'
    _open_file(browser, pages["hostile"][0])  # swap on, nothing swapped
    assert not browser.find_element(By.ID, "chart-empty").is_displayed()
    browser.find_element(By.CSS_SELECTOR, swap_pss).click()
    assert browser.find_element(By.ID, "chart-empty").text == "Nothing to draw: no Swap PSS here in this reading."
    path = str(tmp_path / "noswap.html")
    write_page("-S", CAPTURES / "armv7-noswap.tar.gz", path=path)
    _open_file(browser, path)
    button = browser.find_element(By.CSS_SELECTOR, swap_pss)
    assert not button.is_enabled() and "SwapTotal 0" in button.get_attribute("title")
    # its capture knows no host name, kernel or time: the header leaves them out, rather than "host ?"
    assert [fact.split(" ")[0] for fact in _texts(browser, "#facts > span")] == ["source", "MemTotal"]
    _no_requests_and_no_errors(browser)


#: script: the pixels the header of each column whose key is an argument reaches beyond the table's visible box
BEYOND_VIEW = """const wrap = document.querySelector('.table-wrap').getBoundingClientRect();
    return [...arguments].map((key) => document.querySelector(`#table th[data-key="${key}"]`).getBoundingClientRect().right - wrap.right)"""


def test_the_table_sorted_by_pss_or_its_change_shows_it_without_scrolling_sideways(browser, pages):
    """At 1024 pixels the processes' PSS was out of view, compared its change even at 1400."""
    _open_file(browser, pages["compared"][0])
    assert max(browser.execute_script(BEYOND_VIEW, "old_pss", "pss", "dpss")) <= 0
    browser.set_window_size(1024, 700)
    try:
        _open_file(browser, pages["hostile"][0])  # (a long command line and cgroup)
        assert max(browser.execute_script(BEYOND_VIEW, "uss", "pss")) <= 0
        # the sharing panel, under the tables here, is brought into view by a row selected
        browser.execute_script("document.querySelector('#table tbody tr').click()")
        assert browser.execute_script("return document.getElementById('sharing').getBoundingClientRect().top < innerHeight")
    finally:
        browser.set_window_size(1400, 1200)
    _no_requests_and_no_errors(browser)


def test_a_gone_process_selected_keeps_the_picture_and_says_it_is_only_in_old(browser, pages):
    """It zoomed the picture to an empty box and listed "its 0 largest mappings", figures "-"."""
    from selenium.webdriver.common.by import By
    gone = next(r for r in embedded(pages["compared"][1])["process"][0]["rows"] if r["status"] == "gone")
    _open_file(browser, pages["compared"][0])
    crumbs = _texts(browser, "#crumbs button")
    browser.execute_script("""[...document.querySelectorAll('#table tbody tr')]
        .find((tr) => Number(tr.cells[0].textContent) === arguments[0]).click()""", gone["pid"])
    assert _texts(browser, "#crumbs button") == crumbs
    said = browser.find_element(By.ID, "share").text
    assert "gone: only in OLD" in said and "0 largest" not in said and " - " not in said, said
    _no_requests_and_no_errors(browser)


#: script: [the text, the size in pixels] of each label shown in the picture
LABELS = """return [...document.querySelectorAll('#chart text.slicetext')].filter((t) => t.textContent.trim() && t.style.display !== 'none')
    .map((t) => [t.textContent, 12 * Number((/scale\\(([^)]+)\\)/.exec(t.getAttribute('transform')) || [0, 1])[1])])"""


def test_a_mappings_box_says_its_file_name_and_no_label_is_too_small_to_read(browser, pages):
    """A mapping's box said its whole path, which plotly shrank to fit it, to 2 pixels and less."""
    _open_file(browser, pages["plain"][0])
    for pid in (7054, 7854):  # (a shell's mappings, and a python's, smaller and more)
        browser.execute_script(f"window.smemPage.zoomTo(window.smemPage.state.index.get('process:{pid}'))")
        labels = browser.execute_script(LABELS)
        assert len(labels) > 5 and all(size >= 9 for _, size in labels), labels
    browser.execute_script("window.smemPage.zoomTo(window.smemPage.state.index.get('process:7054'))")
    assert any(text.startswith("libtinfo.so.6") for text, _ in browser.execute_script(LABELS))
    _no_requests_and_no_errors(browser)


def test_the_keyboard_sorts_selects_and_zooms(browser, pages):
    """A table's headers and rows and the legend's areas took a mouse only: Tab never reached them."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    _open_file(browser, pages["plain"][0])
    press = lambda selector, key=Keys.ENTER: (browser.execute_script(f"document.querySelector('{selector}').focus()"),
                                              ActionChains(browser).send_keys(key).perform())
    press('#table th[data-key="pid"]')
    assert browser.execute_script("""const th = document.querySelector('#table th[data-key="pid"]');
        return th.getAttribute('aria-sort') === 'ascending' && document.activeElement === th""")
    press('#table th[data-key="pid"]', Keys.SPACE)
    assert browser.execute_script("""return document.querySelector('#table th[data-key="pid"]').getAttribute('aria-sort')""") == "descending"
    press("#table tbody tr")
    pid = _texts(browser, "#table tbody tr:first-child td:first-child")[0]
    assert _texts(browser, "#crumbs button")[-1].split(" · ")[0].endswith(" " + pid)
    free = browser.execute_script("return [...document.querySelectorAll('#legend .item')].findIndex((i) => i.textContent.startsWith('free '))")
    press(f"#legend .item:nth-child({free + 1})")
    assert _texts(browser, "#crumbs button")[-1].startswith("free ·")
    _no_requests_and_no_errors(browser)


# ------------------------------------------------------------------ smem serve's page, the browser's last:
# a page of another site than the files gets a renderer process of its own, and the files' renderer (with the
# plotly.js it compiled) ends when the tab leaves it

def _request(url, host=None, method="GET"):
    request = urllib.request.Request(url, method=method, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_smem_serve_answers_the_page_to_its_own_address_only_and_refreshes_it(browser):
    prometheus_client = pytest.importorskip("prometheus_client",
                                            reason="smem[metrics]: prometheus_client not installed")
    assert prometheus_client
    proc, base = serving("-S", CAPTURE, "--min-interval", "1")
    try:
        port = base.rsplit(":", 1)[1]
        status, body = _request(base + "/")
        assert status == 200 and b'<meta name="generator" content="smem html">' in body
        status, body = _request(base + "/data.json")
        data = json.loads(body)
        printed = json.loads(run_smem(*shlex.split(data["meta"]["commands"]["user"])[1:], check=True).stdout)
        assert status == 200 and data["user"] == printed
        # a name of someone else's pointed at 127.0.0.1 (DNS rebinding) is refused; no state changes
        for path in ("/", "/data.json"):
            assert _request(base + path, host=f"rebind.example:{port}")[0] == 403
            assert _request(base + path, method="POST")[0] == 405
        assert _request(base + "/", host=f"localhost:{port}")[0] == 200
        assert _request(base + "/metrics", host=f"rebind.example:{port}")[0] == 200  # /metrics as it was
        _open(browser, base + "/")
        _wait(browser, "return document.getElementById('status').textContent.includes('read at')", timeout=60)
        _no_requests_and_no_errors_but_data(browser)
    finally:
        stop(proc)


def _no_requests_and_no_errors_but_data(browser):
    names = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert names and all(n.endswith("/data.json") for n in names), names
    messages = [entry["message"] for entry in browser.get_log("browser")]
    assert not messages, messages
