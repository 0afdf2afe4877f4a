"""smem html's page of a recording in a real browser (page_browser.py: Debian's chromium through
selenium, one a module): the growth over time, the slider's stops at key frames and at frames
without smaps, each showing that frame's own figures and named by its number."""

import json
import os
import shlex
import shutil
import time

import pytest

from conftest import run_smem
from page_browser import _Chromium, _no_requests_and_no_errors, _open_file, _wait
from page_recordings import recorded_growth

pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
pytestmark = pytest.mark.xdist_group("page")


@pytest.fixture(scope="module")
def recordings(tmp_path_factory, pid_namespace):
    return recorded_growth(tmp_path_factory.mktemp("timeline"), pid_namespace)


@pytest.fixture(scope="module")
def recorded_page(recordings):
    """The page of a three-frame recording, every frame's smaps kept, in which a process grew."""
    return recordings["every"]


@pytest.fixture(scope="module")
def rollup_recorded_page(recordings):
    """The same with smaps kept in the first frame only (the others keep smaps_rollup)."""
    return recordings["rollups"]


def test_a_recordings_page_draws_the_growth_over_time_and_its_slider_shows_an_earlier_instant(browser, recorded_page):
    from selenium.webdriver.common.by import By
    path, pid, _ = recorded_page
    _open_file(browser, path)
    assert browser.find_element(By.ID, "timeline").is_displayed()
    traces = browser.execute_script(
        "return document.getElementById('time-lines').data.map((t) => [t.name, t.y])")
    line = next(y for name, y in traces if name.startswith(f"{pid} "))
    assert len(line) == 3 and line[-1] >= line[0] + 35  # MiB: grown at least once between frame 1 and 3
    areas = browser.execute_script("return document.getElementById('time-areas').data.length")
    assert areas > 5
    # the slider at the first instant: the tables and the data shown are the first frame's
    grower_pss = ("return window.smemPage.state.data.process.rows.filter((r) => r.pid === %d)[0].pss" % pid)
    last_pss = browser.execute_script(grower_pss)
    last_table = browser.find_element(By.ID, "table").text
    browser.execute_script("const s = document.getElementById('time-slider'); s.value = '0';"
                           "s.dispatchEvent(new Event('input'));")
    assert browser.execute_script(grower_pss) <= last_pss - 35 * 1024
    assert browser.find_element(By.ID, "table").text != last_table
    label = browser.find_element(By.ID, "time-label").text
    assert "frame 1 of 3" in label
    # its time as the charts' axes write theirs (24 hours, this browser's zone), not the locale's
    frame_time = browser.execute_script("return window.smemPage.readEmbedded().timeline.summary.frames[0].time")
    assert label.endswith(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(frame_time))), label
    # the command printed under the table at that instant prints the same document
    command, shown = browser.execute_script("const d = window.smemPage.state.data;"
                                            "return [d.meta.commands.user, d.user];")
    assert "--at 1" in command
    printed = json.loads(run_smem(*shlex.split(command)[1:], check=True).stdout)
    assert (printed["rows"], printed["totals"]) == (shown["rows"], shown["totals"])  # (an instant's keeps no pressure)
    _no_requests_and_no_errors(browser)


def test_a_recordings_charts_say_their_unit_leave_out_empty_areas_and_stack_on_a_narrow_screen(browser, recorded_page):
    """The areas' chart said "25k" MiB, listed a dozen areas with nothing in any frame, and on a
    phone both charts were squeezed side by side into 170 pixels each."""
    _open_file(browser, recorded_page[0])
    for chart in ("time-lines", "time-areas"):
        unit, most = browser.execute_script(f"""const c = document.getElementById('{chart}');
            return [c.layout.yaxis.title.text, Math.max(...c.data.map((t) => t.y).flat())]""")
        assert unit in ("MiB", "GiB") and most < 10000, (chart, unit, most)
    assert all(any(y) for y in browser.execute_script("return document.getElementById('time-areas').data.map((t) => t.y)"))
    browser.set_window_size(420, 900)
    try:
        widths = browser.execute_script("return ['time-lines', 'time-areas'].map((id) => document.getElementById(id).clientWidth)")
        assert all(width >= 300 for width in widths), widths
        # the processes' legend below its plot, not beside it; the areas' left to the page's own
        # (plotly draws again once the window's new width is known: waited for)
        _wait(browser, """const c = document.getElementById('time-lines'), [plot, legend] =
            [c.querySelector('.nsewdrag'), c.querySelector('.legend')].map((e) => e.getBoundingClientRect());
            return legend.top >= plot.bottom && plot.width >= 0.75 * c.clientWidth
                   && !document.querySelector('#time-areas .legend')""")
    finally:
        browser.set_window_size(1400, 1200)
    _no_requests_and_no_errors(browser)


def test_a_recordings_breakdown_moves_between_key_frames_where_the_rollups_split_pss(browser, rollup_recorded_page):
    """Frames 2 and 3 kept only smaps_rollup: their breakdown's process areas are theirs (the
    rollups' Pss_Anon/Pss_File/Pss_Shmem, Linux 5.9+), not the key frame's smaps repeated: at
    each frame they add up to the processes' PSS as plain smem reads that frame (smaps_rollup),
    which a process grown by 100 MiB between frames moves."""
    if not _kernel_splits_rollup():
        pytest.skip("this kernel's smaps_rollup has no Pss_Anon (before 5.9)")
    path, _, rec = rollup_recorded_page
    _open_file(browser, path)
    areas, unit = browser.execute_script("const c = document.getElementById('time-areas'); return [c.data"
                                         ".filter((t) => t.name.startsWith('process ')).map((t) => t.y), c.layout.yaxis.title.text]")
    assert len(areas) in (2, 3) and all(len(y) == 3 for y in areas)  # anon, file (shmem if any) at 3 frames
    for frame in (1, 2, 3):
        printed = json.loads(run_smem("-S", rec, "--at", str(frame), "-t", "-F", "json", "-c", "pid pss", check=True).stdout)
        processes_kib = sum(y[frame - 1] for y in areas) * {"MiB": 1 << 10, "GiB": 1 << 20}[unit]
        assert abs(processes_kib - printed["totals"]["pss"]) < 8 * 1024, frame  # (what no process reports)
    _no_requests_and_no_errors(browser)


def test_a_recordings_slider_stops_at_a_frame_without_smaps_and_shows_that_frames_figures(browser, rollup_recorded_page):
    """Frame 2 kept smaps_rollup only: the slider stops there (it had only the key frame's stop,
    the frame it was read from) and the grown process's figures are frame 2's, as smem --at 2
    prints them; the picture splits it by page type, not into mappings, and says so."""
    from selenium.webdriver.common.by import By
    path, pid, rec = rollup_recorded_page
    _open_file(browser, path)
    frames = browser.execute_script("return window.smemPage.readEmbedded().timeline.summary.frames")
    assert [f["smaps"] for f in frames][:2] == [True, False] and all(f["full"] for f in frames)
    grower = "return window.smemPage.state.data.process.rows.filter((r) => r.pid === %d)[0]" % pid
    shown = {}
    # (the key frame's figures are its smaps' sums, as a report reading mappings prints them; frame
    # 2's its smaps_rollup's, as plain smem prints them)
    for stop, columns in ((0, "pid pss uss rss maps"), (1, "pid pss uss rss")):
        browser.execute_script("const s = document.getElementById('time-slider'); s.value = arguments[0];"
                               "s.dispatchEvent(new Event('input'));", str(stop))
        shown[stop] = browser.execute_script(grower)
        printed = json.loads(run_smem("-S", rec, "--at", str(stop + 1), "--pid", str(pid), "-F", "json",
                                      "-c", columns, check=True).stdout)["rows"][0]
        assert {k: shown[stop][k] for k in ("pss", "uss", "rss")} == {k: printed[k] for k in ("pss", "uss", "rss")}, stop
    assert shown[1]["pss"] >= shown[0]["pss"] + 90 * 1024  # grown by 100 MiB after frame 1
    assert "frame 2 of 3" in browser.find_element(By.ID, "time-label").text
    assert "smaps_rollup only" in browser.find_element(By.ID, "time-kept").text
    assert "smaps_rollup only" in browser.find_element(By.ID, "chart-note").text
    assert browser.find_element(By.CSS_SELECTOR, "#tabs button[disabled]").text == "Mappings"
    if _kernel_splits_rollup():  # in PSS, the process's boxes are the kernel's split of it
        kinds = browser.execute_script("""const s = window.smemPage.state, n = s.index.get('process:%d');
            window.smemPage.zoomTo(n); return n.children.map((c) => [c.label, c.v.pss || 0]);""" % pid)
        assert dict(kinds)["anonymous pages"] == shown[1]["pss_anon"] and sum(v for _, v in kinds) <= shown[1]["pss"]
    _no_requests_and_no_errors(browser)


def _kernel_splits_rollup():
    try:
        with open("/proc/self/smaps_rollup", encoding="ascii") as f:
            return "Pss_Anon:" in f.read()
    except OSError:
        return False



def test_a_recordings_slider_names_each_stop_by_its_frame_when_one_was_damaged(browser, recorded_page, tmp_path):
    """Frame 1 damaged (left out of the page, with a warning): the stops are frames 2 and 3, and the
    slider names them so, as the command under the table does (--at 2), not by their place among the
    frames read ("frame 1 of 2" was frame 2, and a frame without smaps beside it said "the key frame
    before it, frame 1", the number the label had just given another)."""
    from selenium.webdriver.common.by import By
    rec = tmp_path / "rec"
    shutil.copytree(recorded_page[2], rec)
    (rec / "frames" / "000001.zst").write_bytes(b"not a zstd frame")
    result = run_smem("html", "-S", str(rec), "-o", str(tmp_path / "page.html"))
    assert result.returncode == 0 and b"left out of the page" in result.stderr, result.stderr
    _open_file(browser, str(tmp_path / "page.html"))
    for stop, frame in ((0, 2), (1, 3)):
        browser.execute_script("const s = document.getElementById('time-slider'); s.value = arguments[0];"
                               "s.dispatchEvent(new Event('input'));", str(stop))
        label = browser.find_element(By.ID, "time-label").text
        assert label.startswith(f"frame {frame} of 3 "), label
        assert f"--at {frame}" in browser.execute_script("return window.smemPage.state.data.meta.commands.user")
    _no_requests_and_no_errors(browser)


#: script: [chart, its tick labels' texts, whether any is rotated, whether any two overlap] of each time chart
TICKS = """return ['time-lines', 'time-areas'].map((id) => {
    const labels = [...document.querySelectorAll(`#${id} .xtick text`)];
    const boxes = labels.map((t) => t.getBoundingClientRect());
    const rotated = labels.some((t) => /rotate\\((?!0[,)])/.test(t.getAttribute('transform') || ''));
    const overlap = boxes.some((a, i) => boxes.slice(i + 1).some((b) =>
        a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom));
    return [id, labels.map((t) => t.textContent), rotated, overlap]; })"""


@pytest.mark.parametrize("width", [1400, 1000])
def test_a_recordings_time_axes_are_level_and_their_labels_apart(browser, recorded_page, width):
    """The areas' chart, narrower for its legend, turned its times aslant, and the date under the
    first ("Dec 7, 2026") ran into the time beside it."""
    browser.set_window_size(width, 1200)
    try:
        _open_file(browser, recorded_page[0])
        _wait(browser, "return document.querySelectorAll('#time-areas .xtick text').length > 1")
        charts = browser.execute_script(TICKS)
        for chart, labels, rotated, overlap in charts:
            assert len(labels) >= 2 and not rotated and not overlap, charts
    finally:
        browser.set_window_size(1400, 1200)
    _no_requests_and_no_errors(browser)


def test_a_recordings_areas_legend_lists_the_largest_first(browser, recorded_page):
    """The areas' legend, a scroll box beside the chart, listed them in the stack's order, the
    areas of a few KiB first: the large ones were out of sight.  (In rows under it: read as text.)"""
    _open_file(browser, recorded_page[0])
    _wait(browser, "return document.querySelectorAll('#time-areas .legend .traces').length > 2")
    shown = browser.execute_script("""return [...document.querySelectorAll('#time-areas .legend .traces')]
        .map((t) => [t.getBoundingClientRect(), t.querySelector('text.legendtext').textContent])
        .sort((a, b) => a[0].top - b[0].top || a[0].left - b[0].left).map((t) => t[1])""")
    peaks = browser.execute_script("""const c = document.getElementById('time-areas');
        return Object.fromEntries(c.data.map((t) => [t.name, Math.max(...t.y.map((v) => v || 0))]))""")
    assert shown == sorted(peaks, key=lambda name: -peaks[name]), (shown, peaks)
    _no_requests_and_no_errors(browser)


#: a recording of three frames in which a process grew by 200 MiB, made by page_recordings.py on
#: the day a page of it, 418 px wide, hung the browser (below)
GROWN = os.path.join(os.path.dirname(__file__), "fixtures", "recordings", "grown")


def test_a_recordings_page_gives_the_browser_back_at_every_narrow_width(browser, tmp_path):
    """The time charts fit their ticks to the plot's width after each drawing, and automargin fits
    the plot's width to the ticks (room for the last label): at 415 to 421 px this recording's lines
    (drawn again by the slider) swapped 2 and 3 ticks in a loop that never gave the browser back,
    and a CI run waited an hour on it.  At each of those widths, the page answers and its ticks settle."""
    page = tmp_path / "page.html"
    run_smem("html", "-S", GROWN, "-o", str(page), check=True)
    _open_file(browser, str(page))
    config = browser.command_executor.client_config
    config.timeout = 10  # (a hung page: this test fails, not the next one)
    try:
        for width in range(410, 426):
            browser.set_window_size(width, 1200)
            for stop in ("0", "2"):  # (each drawn again there)
                browser.execute_script("const s = document.getElementById('time-slider'); s.value = arguments[0];"
                                       "s.dispatchEvent(new Event('input'));", stop)
            ticks = browser.execute_script(
                "return ['time-lines', 'time-areas'].map((id) => document.getElementById(id).layout.xaxis.nticks)")
            assert all(1 <= n <= 6 for n in ticks), (width, ticks)
    finally:
        config.timeout = _Chromium.ANSWER
    _no_requests_and_no_errors(browser)


#: a recording of four frames of a PID namespace holding only sh and three sleeps (``unshare --pid
#: --fork --mount-proc sh -c "sleep 300 & sleep 300 & sleep 300 & python -m smem record -o small
#: --interval 1 --count 4"``): processes of 200 to 400 KiB, as a new user's container held
SMALL = os.path.join(os.path.dirname(__file__), "fixtures", "recordings", "small")


@pytest.fixture(scope="module")
def small_page(tmp_path_factory):
    page = str(tmp_path_factory.mktemp("small") / "page.html")
    run_smem("html", "-S", SMALL, "-o", page, check=True)
    return page


def test_a_recording_of_small_processes_draws_their_pss_in_kib(browser, small_page):
    """The processes' chart was in MiB whatever they held: a container's shell and sleeps of 200 to
    400 KiB ticked "0.2", "0.25", "0.3" MiB.  In KiB, as the tables say them, its ticks are whole
    numbers and its hover says the figure in the axis's unit."""
    _open_file(browser, small_page)
    _wait(browser, "return document.querySelectorAll('#time-lines .ytick text').length > 1")
    unit, ticks, hovers, last = browser.execute_script("""const c = document.getElementById('time-lines');
        return [c.layout.yaxis.title.text, [...c.querySelectorAll('.ytick text')].map((t) => t.textContent),
                c.data.map((t) => t.hovertemplate), Object.fromEntries(c.data.map((t) => [t.name, t.y[t.y.length - 1]]))]""")
    assert unit == "KiB", unit
    assert len(ticks) >= 2 and all(tick.isdigit() for tick in ticks), ticks  # ("0.25": a fraction of a MiB)
    assert all(hover.startswith("%{y:.0f} KiB<") for hover in hovers), hovers
    # each line's last point is its process's PSS in the table (the last frame's), in KiB as there
    # (the lines' from smaps_rollup, the key frame's table from the smaps' sums: a few KiB apart)
    rows = dict(browser.execute_script("return window.smemPage.state.data.process.rows.map((r) => [`${r.pid} ${r.name}`, r.pss])"))
    assert last.keys() == rows.keys() and all(100 < pss < 1024 and abs(last[n] - pss) <= 0.1 * pss
                                              for n, pss in rows.items()), (last, rows)
    _no_requests_and_no_errors(browser)


#: script: [the window's width, the areas' chart's box, its legend's box, each legend entry's [name, box]]
#: (a box: [left, top, right, bottom])
LEGEND_BOXES = """const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const chart = document.getElementById('time-areas'), legend = chart.querySelector('g.legend');
    return [document.documentElement.clientWidth, box(chart), box(legend.querySelector('rect.bg')),
            [...legend.querySelectorAll('.traces')].map((t) => [t.querySelector('text.legendtext').textContent, box(t)])]"""


@pytest.mark.parametrize("width", [1400, 900])
def test_a_recordings_areas_legend_shows_every_area_without_scrolling(browser, small_page, width):
    """The areas' legend, beside the chart, was a scroll box 260 pixels high: at 1400 px its last
    entries, "unexplained" among them, were cut off under it, and at 900 px too.  Each entry is
    inside the legend's box, the chart's and the window, none over another."""
    browser.set_window_size(width, 1200)
    try:
        _open_file(browser, small_page)
        _wait(browser, "return document.querySelectorAll('#time-areas .legend .traces').length > 2")
        time.sleep(0.3)  # (the chart made taller for its legend: drawn again)
        window, chart, legend, entries = browser.execute_script(LEGEND_BOXES)
        names = browser.execute_script("return document.getElementById('time-areas').data.map((t) => t.name)")
        assert sorted(name for name, _ in entries) == sorted(names) and "unexplained" in names
        inside = lambda inner, outer: (inner[0] >= outer[0] - 0.5 and inner[1] >= outer[1] - 0.5
                                       and inner[2] <= outer[2] + 0.5 and inner[3] <= outer[3] + 0.5)
        for name, entry in entries:
            assert inside(entry, legend) and inside(entry, chart) and entry[2] <= window, (width, name, entry, legend, chart)
        boxes = [entry for _, entry in entries]
        overlaps = [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
                    if a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1]
        assert not overlaps, overlaps
        # (its plot as high as the processes' beside or above it: the legend's rows took their own room)
        plots = browser.execute_script("""return ['time-lines', 'time-areas'].map((id) =>
            document.querySelector(`#${id} .nsewdrag`).getBoundingClientRect().height)""")
        assert abs(plots[0] - plots[1]) <= 2, plots
    finally:
        browser.set_window_size(1400, 1200)
    _no_requests_and_no_errors(browser)



#: script: the lines of the breakdown chart's hover label (x unified: one a trace), once it shows
AREAS_HOVER = """const label = document.querySelector('#time-areas .hoverlayer');
    return label && label.textContent ? [...label.querySelectorAll('text')].map((t) => t.textContent) : null"""


def test_a_recordings_breakdown_hovers_each_area_in_its_own_unit(browser, small_page):
    """The breakdown's chart hovered every area in the axis's unit (GiB, of a machine's 24 GiB): the
    processes' 432 KiB of anon, kernel stacks, page tables read "0.0 GiB".  Each figure the mouse
    shows is in its own unit now, as the tables write them (KiB, MiB, GiB), its frame's figure."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    _open_file(browser, small_page)
    _wait(browser, "return document.querySelectorAll('#time-areas .ytick text').length > 1")
    plot = browser.find_element(By.CSS_SELECTOR, "#time-areas .nsewdrag")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", plot)
    ActionChains(browser).move_to_element_with_offset(plot, plot.size["width"] // 2 - 2, 0).perform()
    hovered = _wait(browser, AREAS_HOVER)
    at = browser.execute_script("return document.getElementById('time-areas')._hoverdata[0].pointNumber")
    areas = browser.execute_script("return window.smemPage.readEmbedded().timeline.summary.areas")
    figures = dict(line.rsplit(" : ", 1) for line in hovered if " : " in line)
    assert len(figures) == len(areas), hovered
    for area in areas:
        kib = area["used"][at]
        unit, size = ("KiB", 1) if kib < 1024 else ("MiB", 1024) if kib < 1 << 20 else ("GiB", 1 << 20)
        number, shown_unit = figures[area["area"]].split()
        assert shown_unit == unit and abs(float(number) - kib / size) <= 0.05 + 0.005 * kib / size, (area, hovered)
    assert figures["process anon (PSS)"] == "432 KiB", hovered  # (was "0.0 GiB")
    _no_requests_and_no_errors(browser)
