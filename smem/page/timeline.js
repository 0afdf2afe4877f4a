// ------------------------------------------------------------------ over time (a recording)

/* A recording's page: the largest and most grown processes' PSS (lines) and the breakdown's areas (stacked)
   at every frame, and a slider over the frames whose whole documents are embedded: moving it
   renders that instant.  Names reach plotly escaped (plotlyText), the label by textContent. */

/* A screen narrow enough that the charts' legends go below them (stacked from 1200 px, each
   chart still has too little room for a legend beside it here). */
const NARROW = window.matchMedia("(max-width: 640px)");

function timeAxis(frames) { return frames.map((f) => new Date(f.time * 1000)); }

/* The unit of a chart of figures from ``least`` to ``most`` KiB, 1024-based as the tables' ([its
   name, KiB in one, the hover's format]): the largest in which they span 2 or more, so the ticks
   step by whole-ish numbers (a chart of small processes in MiB ticked 0.14, 0.16, 0.18), of
   those that keep ``most`` under 10000 (plotly wrote 20000 MiB as "20k"). */
const CHART_UNITS = [["GiB", 1 << 20, ".1f"], ["MiB", 1024, ".1f"], ["KiB", 1, ".0f"]];
function chartUnit(least, most) {
  const fit = CHART_UNITS.filter(([, kib]) => most / kib < 10000);
  return fit.find(([, kib]) => (most - least) / kib >= 2) || fit[fit.length - 1] || CHART_UNITS[0];
}

/* How many times fit level along the axis of the chart ``id`` as plotly last drew it (a two-line
   first label, its date under it, needs some 100 pixels); 6 before it is drawn. */
function timeTicks(id) {
  const size = document.getElementById(id)._fullLayout?._size;
  return size ? Math.max(1, Math.min(6, Math.floor(size.w / 100))) : 6;
}

/* Drawn (first, again on a slider move, or at a new width): its ticks made as many as fit, and
   at one width of the chart only ever fewer.  (The last label sticks out past the plot, and
   automargin makes room for it: fewer ticks, a wider plot, room for more; more, a narrower
   plot, room for fewer.  At 418 px the lines' chart swapped 2 and 3 in a loop that never gave
   the browser back.) */
function levelTimeTicks(id) {
  let settled = null;  // [the chart's width, the ticks fitted at it]
  const chart = document.getElementById(id), fit = () => {
    const n = timeTicks(id), width = chart.clientWidth;
    if (chart.layout.xaxis.nticks === n || (settled && settled[0] === width && n > settled[1])) return;
    settled = [width, n];
    Plotly.relayout(chart, {"xaxis.nticks": n});
  };
  chart.on("plotly_afterplot", fit);
  fit();
}

/* [the least, the largest] of every figure in ``series`` (arrays, nulls left out); [0, 0] if none.
   (A loop: Math.max(...figures) of a long recording is a call of a million arguments, which V8 refuses.) */
function bounds(series) {
  let least = Infinity, most = -Infinity;
  for (const values of series) for (const v of values) {
    if (v === null || v === undefined) continue;
    if (v < least) least = v;
    if (v > most) most = v;
  }
  return most === -Infinity ? [0, 0] : [least, most];
}

/* A time chart's height with its legend beside the plot, or none; one whose legend is in rows
   under it is taller by their room (legendRoom), its plot as high as its neighbour's. */
const CHART_HEIGHT = 260;
/* The pixels a legend in rows may take: every row shown (plotly scrolls one taller than this). */
const LEGEND_MOST = 2000;

/* The pixels the chart ``id``'s legend in rows took when it was last drawn at its present width
   (0 before: fitLegendRoom makes room once it is drawn). */
function legendRoom(id) {
  const chart = document.getElementById(id), room = chart.smemLegendRoom;
  return room && room[0] === chart.clientWidth ? room[1] : 0;
}

/* Drawn (first, again on a slider move, or at a new width): the chart made as much taller than
   CHART_HEIGHT as its legend's rows take (at the chart's foot, under the time axis's labels), so
   its plot is as high as its neighbour's whatever the rows.  At one width it is fitted once: the
   rows depend on the width alone. */
function fitLegendRoom(id) {
  const chart = document.getElementById(id), fit = () => {
    const legend = chart.querySelector("g.legend"), width = chart.clientWidth;
    if (!legend || chart.layout.legend?.yref !== "container") return;
    const room = Math.ceil(legend.getBoundingClientRect().height);
    const fitted = chart.smemLegendRoom;
    if (fitted && fitted[0] === width) return;
    chart.smemLegendRoom = [width, room];
    if (chart.layout.height !== CHART_HEIGHT + room) Plotly.relayout(chart, {height: CHART_HEIGHT + room});
  };
  chart.on("plotly_afterplot", fit);
  fit();
}

function drawTimeCharts(summary, at, colors) {
  const x = timeAxis(summary.frames);
  const inUnit = (unit) => (v) => (v === null || v === undefined ? null : v / unit);
  const marker = {type: "line", xref: "x", yref: "paper", x0: x[at], x1: x[at], y0: 0, y1: 1,
                  line: {color: "#c92a2a", width: 1, dash: "dot"}};
  // (on a phone a legend beside the plot took half its width: the processes' goes below it, and
  // the areas', as long as the page's own legend above with the same colours, is left to it)
  const narrow = NARROW.matches;
  // ``legend``: "beside" the plot, or "below" it, in rows at the chart's foot (yref container), the
  // chart taller by the room its rows took when last drawn (fitLegendRoom)
  const layout = (title, unit, legend, id) => ({title: {text: title, font: {size: 13}}, margin: {l: 50, r: 10, t: 30, b: 30},
                               height: narrow && legend === "below" ? 380 : CHART_HEIGHT + (legend === "rows" ? legendRoom(id) : 0),
                               shapes: [marker], yaxis: {title: {text: unit}, automargin: true},
                               // (few ticks, and room for them: a recording of seconds crowded and cut them;
                               // level, as many as fit: aslant, the date under the first ran into the next)
                               xaxis: {nticks: timeTicks(id), tickangle: 0, automargin: true},
                               showlegend: legend !== "none",
                               legend: legend === "below" ? {font: {size: 10}, orientation: "h", x: 0, y: -0.15, yanchor: "top"}
                                     : legend === "rows" ? {font: {size: 11}, orientation: "h", x: 0, xanchor: "left", yref: "container",
                                                            y: 0, yanchor: "bottom", maxheight: LEGEND_MOST}
                                     : {font: {size: 11}},
                               hovermode: "x unified"});
  const [lineLeast, lineMost] = bounds(summary.processes.map((p) => p.pss));
  const [lineUnit, lineKib, lineFormat] = chartUnit(lineLeast, lineMost);
  const lines = summary.processes.map((p) => ({
    type: "scatter", mode: "lines+markers", x, y: p.pss.map(inUnit(lineKib)),
    name: `${p.pid} ${plotlyName(p.name ?? "")}`, hovertemplate: `%{y:${lineFormat}} ${lineUnit}<extra>%{meta}</extra>`,
    // (the command, in meta, not in the template, where its own %{...} would be read: two python3
    // lines are told apart by their scripts; cut, keeping its start, as the tables cut it)
    meta: `${p.pid} ${plotlyName(cut(p.command ?? p.name ?? "", 80))}`}));
  Plotly.react(document.getElementById("time-lines"), lines,
               layout("PSS of the largest and the most grown processes", lineUnit, narrow ? "below" : "beside", "time-lines"),
               {displayModeBar: false, responsive: true});
  // (stacked from 0: the unit of their sum at the fullest frame)
  const [, areaMost] = bounds([summary.frames.map((_, i) => summary.areas.reduce((s, a) => s + Math.max(0, a.used[i] || 0), 0))]);
  const [areaUnit, areaKib] = chartUnit(0, areaMost);
  // (the legend lists the largest first: in the stack's order, a scroll box began with the areas of
  // a few KiB and the large ones were out of sight)
  const peaks = summary.areas.map((a) => bounds([a.used])[1]);
  const ranks = new Map(peaks.map((_, i) => i).sort((i, j) => peaks[j] - peaks[i]).map((i, rank) => [i, rank]));
  // (an area below zero is stacked at 0, as the bar above leaves it out: stacked as it is, it was
  // drawn downwards over the area under it; its hover keeps its figure, the note under says why)
  // (each hovered figure in its own unit, as the bar's legend writes it: in the axis's, the areas of
  // a few MiB beside 20 GiB free read "0.0 GiB")
  const areas = summary.areas.map((a, i) => ({
    type: "scatter", mode: "lines", stackgroup: "areas", x, y: a.used.map((v) => (v < 0 ? 0 : v)).map(inUnit(areaKib)),
    customdata: a.used, text: a.used.map(human), name: plotlyText(a.area),
    hovertemplate: "%{text}", legendrank: 1 + ranks.get(i),
    ...(colors.has(a.area) ? {line: {color: colors.get(a.area), width: 1}, fillcolor: colors.get(a.area)} : {})}));
  // (its legend in rows under the plot: beside it, a scroll box of 260 pixels cut off the last
  // areas, "unexplained" among them, at 1400 px)
  const areasLayout = layout("MemTotal broken down", areaUnit, narrow ? "none" : "rows", "time-areas");
  areasLayout.legend.traceorder = "normal";  // (by rank, the smallest on top: a stack's default reverses it)
  Plotly.react(document.getElementById("time-areas"), areas, areasLayout, {displayModeBar: false, responsive: true});
}

/* Under the charts, each area below zero in some frame (drawn at 0): in how many, how low, what it
   is (``rows``: the breakdown's rows shown, for their sources) and why, as the header says it.
   (MemTotal less the rest, unexplained, says its own, as in the header.) */
function drawTimeBelowZero(summary, rows, why) {
  const said = document.getElementById("time-below-zero");
  const below = summary.areas.filter((a) => a.area !== "unexplained" && a.used.some((v) => v < 0));
  const sources = new Map(rows.map((r) => [r.area, r]));
  said.hidden = !below.length;
  said.replaceChildren(...below.map((a) => {
    const frames = a.used.filter((v) => v < 0).length;
    const lowest = a.used.reduce((m, v) => (v !== null && v < m ? v : m), 0);
    const row = sources.get(a.area) || {area: a.area, source: "an area of the breakdown"};
    return el("span", {}, el("b", {text: a.area}),
      ` is below zero in ${frames} of ${a.used.length} frames (down to ${human(lowest)}), drawn at 0: ` +
      `${belowZeroMeaning(row)}. ${belowZeroWhy(why)} `);
  }));
}

/* What a stop's frame kept: every smaps (a key frame: the mappings are this frame's), or
   smaps_rollup only (each process's own figures, split by page type, and no mappings). */
function keptText(frames, at) {
  if (frames[at].smaps !== false) return "every smaps: its mappings are shown";
  let key = at;
  while (key >= 0 && frames[key].smaps === false) key--;
  return "smaps_rollup only: each process's own figures, no mappings" +
         (key >= 0 ? ` (the key frame before it, frame ${frames[key].number}, has them)` : "");
}

/* The slider: ``own`` is the page's own data, the last stop's (null among the instants). */
function startTimeline(timeline, own) {
  const {summary, instants} = timeline, stops = Object.keys(instants).map(Number).sort((a, b) => a - b);
  const section = document.getElementById("timeline"), slider = document.getElementById("time-slider");
  const label = document.getElementById("time-label"), kept = document.getElementById("time-kept");
  section.hidden = false;
  slider.min = "0"; slider.max = String(stops.length - 1); slider.step = "1"; slider.value = String(stops.length - 1);
  const show = (stop) => {
    const at = stops[stop], frame = summary.frames[at], data = instants[at] || own;
    // (named by its number, as the command under the table names it: a damaged frame left out of
    // the page leaves the number and the place among the frames read apart)
    label.textContent = `frame ${frame.number} of ${summary.frames[summary.frames.length - 1].number} ` +
                        `(stop ${stop + 1} of ${stops.length}): ` +
                        clockText(new Date(frame.time * 1000));
    kept.textContent = "This frame kept " + keptText(summary.frames, at) + ".";
    kept.className = "note" + (frame.smaps === false ? " rollup" : "");
    drawTimeCharts(summary, at, segmentColors(data));
    drawTimeBelowZero(summary, data.system ? data.system.rows : [], data.meta.below_zero_why);
    if (state.data !== data) render(data);
  };
  slider.addEventListener("input", () => show(Number(slider.value)));
  NARROW.addEventListener("change", () => show(Number(slider.value)));
  const keys = summary.frames.filter((f) => f.smaps !== false).length;
  document.getElementById("time-note").textContent =
    `${summary.frames.length} frames, ${keys} of them key frames (every smaps kept); the others kept smaps_rollup only. ` +
    `The slider stops at the ${stops.length} whose whole tables are embedded.`;
  show(stops.length - 1);
  levelTimeTicks("time-lines"); levelTimeTicks("time-areas"); fitLegendRoom("time-areas");
}
