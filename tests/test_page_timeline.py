"""A long recording's timeline (smem/page/timeline.js) in a real browser: its charts' scripts
run on a recording's summary as large as a week of frames, with plotly itself left out (a stub
takes what it would draw: drawing 10 lines of 100,000 points is not what is tested)."""

from pathlib import Path

import pytest


pytestmark = pytest.mark.xdist_group("page")

PAGE = Path(__file__).resolve().parent.parent / "smem" / "page"


def test_a_long_recordings_charts_are_drawn_in_their_unit(browser):
    """100,000 frames (11 days at 10 s) of the 10 largest processes: the unit was found with
    Math.max(...every figure), a call of a million arguments, which V8 refuses ("Maximum call
    stack size exceeded", from about 150,000): the page of a long recording drew no chart."""
    script = '"use strict";\n' + "\n".join((PAGE / name).read_text() for name in ("common.js", "timeline.js"))
    drawn = browser.execute_script("""
        const drawn = {};
        const Plotly = {react: (id, traces, layout) => { drawn[id] = [layout.yaxis.title.text, traces.length,
                                                                       traces[0].y.length, traces[0].y[0]]; }};
        const draw = new Function("Plotly", "document", arguments[0] + "\\nreturn drawTimeCharts;")(
            Plotly, {getElementById: (id) => id});
        const n = 100000, gib = 1 << 20;
        const summary = {frames: Array.from({length: n}, (_, i) => ({time: 1.8e9 + 10 * i})),
                         processes: Array.from({length: 10}, (_, p) => ({pid: p + 1, name: "p", pss: Array(n).fill(12 * gib)})),
                         areas: [{area: "free", used: Array(n).fill(20 * gib)}]};
        try { draw(summary, n - 1, new Map()); } catch (e) { return String(e); }
        return drawn;""", script)
    assert drawn == {"time-lines": ["GiB", 10, 100000, 12], "time-areas": ["GiB", 1, 100000, 20]}, drawn


def test_a_recordings_lines_say_each_processs_command_on_hover(browser):
    """Two python3 lines (a leaking script and a steady one) hovered as ``pid`` alone: which was
    the leak was in the tables only.  The command is the hover's, cut, as text, never a template."""
    script = '"use strict";\n' + "\n".join((PAGE / name).read_text() for name in ("common.js", "timeline.js"))
    drawn = browser.execute_script("""
        let lines = null;
        const Plotly = {react: (id, traces) => { if (id === "time-lines") lines = traces; }};
        const draw = new Function("Plotly", "document", arguments[0] + "\\nreturn drawTimeCharts;")(
            Plotly, {getElementById: (id) => id});
        const summary = {frames: [{time: 1.8e9}, {time: 1.8e9 + 10}],
                         processes: [{pid: 7, name: "python3", command: "python3 leaky.py %{y} <b>" + "x".repeat(90), pss: [1, 2]},
                                     {pid: 8, name: "python3", command: null, pss: [3, 3]}],
                         areas: [{area: "free", used: [5, 5]}]};
        draw(summary, 1, new Map());
        return lines.map((t) => [t.name, t.hovertemplate, t.meta]);""", script)
    command = "python3 leaky.py %{y} &lt;b&gt;" + "x" * 54 + "…"  # (80 characters of it)
    assert drawn == [["7 python3", "%{y:.1f} MiB<extra>%{meta}</extra>", f"7 {command}"],
                     ["8 python3", "%{y:.1f} MiB<extra>%{meta}</extra>", "8 python3"]], drawn
