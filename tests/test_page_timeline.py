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
    assert drawn == [["7 python3", "%{y:.0f} KiB<extra>%{meta}</extra>", f"7 {command}"],
                     ["8 python3", "%{y:.0f} KiB<extra>%{meta}</extra>", "8 python3"]], drawn


#: script: the unit, the hover's template and the top of the data of the processes' chart drawn of
#: each of ``arguments[1]``, lists of figures (KiB) of one process's frames
LINE_UNITS = """const lines = [];
    const Plotly = {react: (id, traces, layout) => { if (id === "time-lines") lines.push(
        [layout.yaxis.title.text, traces[0].hovertemplate.split("<")[0], Math.max(...traces[0].y)]); }};
    const draw = new Function("Plotly", "document", arguments[0] + "\\nreturn drawTimeCharts;")(
        Plotly, {getElementById: (id) => id});
    for (const pss of arguments[1]) {
      const summary = {frames: pss.map((_, i) => ({time: 1.8e9 + 10 * i})),
                       processes: [{pid: 1, name: "p", pss}], areas: [{area: "free", used: pss.map(() => 5)}]};
      draw(summary, 0, new Map());
    }
    return lines;"""


def test_a_recordings_lines_are_drawn_in_the_unit_their_figures_step_by_whole_numbers_in(browser):
    """The processes' chart was in MiB (GiB from 10 GiB) whatever they held: processes of 130 to 190
    KiB ticked 0.14, 0.16, 0.18.  The unit is the largest in which the figures shown span 2 or more
    (1024-based, as the tables'), its hover in it, and never one that plotly writes as "20k"."""
    script = '"use strict";\n' + "\n".join((PAGE / name).read_text() for name in ("common.js", "timeline.js"))
    mib, gib = 1 << 10, 1 << 20
    cases = {  # KiB of one process, frame by frame: the unit, the hover's template, the largest in it
        (130, 190): ["KiB", "%{y:.0f} KiB", 190],
        (1000, 1100): ["KiB", "%{y:.0f} KiB", 1100],  # (0.98 to 1.07 MiB: ticks of 0.02)
        (19 * mib, 21 * mib): ["MiB", "%{y:.1f} MiB", 21],  # (19456 to 21504 KiB: "20k")
        (20 * mib, 20 * mib): ["MiB", "%{y:.1f} MiB", 20],  # (flat: the least unit under 10000)
        (0, 3 * gib): ["GiB", "%{y:.1f} GiB", 3],
        (12 * gib, 12 * gib): ["GiB", "%{y:.1f} GiB", 12],
        (100 * mib, 1200 * mib): ["MiB", "%{y:.1f} MiB", 1200],  # (0.1 to 1.2 GiB: ticks of 0.2)
    }
    drawn = browser.execute_script(LINE_UNITS, script, [list(pss) for pss in cases])
    assert dict(zip(cases, drawn)) == cases, drawn
