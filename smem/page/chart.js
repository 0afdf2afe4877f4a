/* smem html: the hierarchy drawn by plotly (only the levels shown), zoomed by clicks and the path. */

function hover(n) {  // (long names cut: the tables and the sharing panel give them whole)
  const lines = [`<b>${n.name ? plotlyName(cut(n.name, 90)) : boxLabel(n, 90)}</b>`];
  if (n.kind === "process") lines.push(plotlyName(cut(n.row.command, 90)), `user ${plotlyName(cut(n.row.user, 40))}` +
                                       (n.row.cgroup ? ` · cgroup ${plotlyName(cut(n.row.cgroup, 60))}` : ""));
  if (n.kind === "area") lines.push(plotlyText(n.row.source));
  if (n.kind === "mapping" || n.kind === "rest") lines.push(plotlyText(n.count ? `${n.count} mappings` : ""));
  if (n.row && n.row.swap !== undefined && n.kind === "process") lines.push(`Swap ${human(n.row.swap)}`);
  for (const [m, label] of MEASURES) {
    if (n.v[m] === undefined) continue;
    let line = `${label} ${human(n.v[m])}`;
    if (compared() && n.d[m] !== undefined && n.d[m] !== null) line += ` (${signed(n.d[m])})`;
    lines.push(m === state.measure ? `<b>${line}</b>` : line);
  }
  const parent = n.parent ? figure(n.parent) : 0;
  const v = figure(n);
  if (n.parent) lines.push(`${pct(v, parent)} of ${boxLabel(n.parent, 60)}`);
  if (state.measure === "pss" && state.data.meta.memtotal) lines.push(`${pct(v, state.data.meta.memtotal)} of MemTotal`);
  if (n.status) lines.push(n.status === "new" ? "new: only in NEW" : "gone");
  return lines.join("<br>");
}

function chartNodes(top) {
  // breadth first from the node shown, as deep as CHART_NODES allows (at least its children)
  const nodes = [top];
  let level = [top], depth = 0;
  while (level.length && depth < 4) {
    const next = [];
    for (const n of level) for (const c of childrenOf(n)) next.push(c);
    if (depth > 0 && nodes.length + next.length > CHART_NODES) break;
    nodes.push(...next);
    level = next;
    depth++;
  }
  return nodes;
}

function drawChart() {
  const root = state.tree;
  let top = root;
  for (const key of state.path) {
    const found = state.index.get(key);
    if (found) top = found; else break;
  }
  const nodes = chartNodes(top);
  const shown = new Set(nodes.map((n) => n.id));
  const topValue = total(top);
  const colors = nodes.map((n) => colorOf(n));
  // a box too small to hold a label gets none: measuring thousands of labels plotly would hide
  // anyway is most of a large chart's drawing time (the hover still names every box)
  const chart = document.getElementById("chart");
  const pixels = Math.max(1, chart.clientWidth * chart.clientHeight) / Math.max(1, topValue);
  const labelled = nodes.map((n) => n === top || total(n) * pixels >= MIN_LABEL_AREA);
  const trace = {
    type: state.layout, ids: nodes.map((n) => n.id),
    labels: nodes.map((n, i) => (labelled[i] ? boxLabel(n, Infinity) + (n.status ? ` [${n.status}]` : "") : "")),
    parents: nodes.map((n) => (n === top || !shown.has(n.parent && n.parent.id) ? "" : n.parent.id)),
    values: nodes.map((n) => total(n)), branchvalues: "total",
    text: nodes.map((n, i) => (labelled[i] ? human(figure(n)) + (compared() && n.d[state.measure] ? " " + signed(n.d[state.measure]) : "") : "")),
    hovertext: nodes.map(hover),
    hovertemplate: "%{hovertext}<extra></extra>",
    texttemplate: labelled.map((shown) => (shown ? "%{label}<br>%{text}" : "")),
    marker: compared() ? {colors: nodes.map(relativeChange), colorscale: [[0, "#1971c2"], [0.5, "#f1f3f5"], [1, "#c92a2a"]],
                          cmin: -0.5, cmax: 0.5, showscale: true, line: {width: 1, color: "#fff"},
                          colorbar: {title: {text: "change"}, thickness: 12, tickformat: "+.0%"}}
                       : {colors, line: {width: 1, color: "#fff"}},
    sort: true, maxdepth: -1,
  };
  if (state.layout === "treemap") { trace.pathbar = {visible: false}; trace.tiling = {pad: 2}; }
  const layout = {margin: {l: 0, r: 0, t: 0, b: 0}, font: {family: "system-ui, sans-serif", size: 12},
                  hoverlabel: {align: "left"}};
  state.shown = new Map(nodes.map((n) => [n.id, n]));
  Plotly.react(chart, [trace], layout, {displayModeBar: false, responsive: true}).then(hideTinyLabels);
  if (!chart.smemListening) {
    chart.smemListening = true;
    const onClick = (event) => {
      const point = event.points && event.points[0];
      const n = point && state.shown.get(point.id);
      if (n) zoomTo(n === currentTop() && n.parent ? n.parent : n);
      return false;  // our zoom: the deeper levels are built now, not handed to plotly up front
    };
    chart.on("plotly_treemapclick", onClick);
    chart.on("plotly_sunburstclick", onClick);
    chart.on("plotly_icicleclick", onClick);
    chart.on("plotly_afterplot", hideTinyLabels);
  }
  drawCrumbs(top);
  document.getElementById("chart-note").textContent = chartNote(top);
  const empty = document.getElementById("chart-empty");  // (plotly draws an empty box, which says nothing)
  empty.hidden = topValue > 0;
  empty.textContent = topValue > 0 ? "" : `Nothing to draw: no ${MEASURES.find((m) => m[0] === state.measure)[1]} here in this reading.`;
}

/* A label plotly shrank below 9 px to fit its box (a long name in a small one) is hidden: it
   could not be read, and the hover names the box.  (plotly's uniformtext would hide them too,
   but shrinks every other label to the smallest one shown.) */
function hideTinyLabels() {
  for (const text of document.querySelectorAll("#chart text.slicetext")) {
    const scale = /scale\(([^)]+)\)/.exec(text.getAttribute("transform") || "");
    text.style.display = scale && Number(scale[1]) * (parseFloat(text.style.fontSize) || 12) < 9 ? "none" : "";
  }
}

function relativeChange(n) {  // NEW against OLD, capped at +-50% (a new row is +100%)
  const d = n.d[state.measure];
  if (!d) return 0;
  const before = (n.v[state.measure] || 0) - d;
  return before > 0 ? Math.max(-0.5, Math.min(0.5, d / before)) : 0.5;
}

function colorOf(n) {
  let top = n, depth = 0;
  while (top.parent && top.parent.kind !== "root" && top.parent.kind !== "processes") { top = top.parent; depth++; }
  if (n.kind === "root") return "#dee2e6";
  if (n.kind === "processes") return "#dbe4ff";
  // a process's anonymous, file and shared memory in the header's colours for them (the areas'
  // palette), its mappings paler: where anon and page cache went shows across the whole picture
  if (n.kind === "kind") return areaColor(`process ${n.part}`);
  if (n.parent && n.parent.kind === "kind") return lighter(areaColor(`process ${n.parent.part}`), 0.45);
  if (n.kind === "rest") return "#ced4da";
  if (top.color) return top.color;
  // users, programs, cgroups and processes in neutral shades (a hue of their own would read as an
  // area's: an orange user as page cache), siblings apart, deeper levels paler
  const siblings = top.parent ? top.parent.children : [top];
  return lighter(GROUP_SHADES[Math.max(0, siblings.indexOf(top)) % GROUP_SHADES.length], Math.min(0.75, 0.25 * depth));
}

function lighter(hex, amount) {  // mixed with white: deeper levels paler, so the nesting shows
  const c = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return "#" + c.map((v) => Math.round(v + (255 - v) * amount).toString(16).padStart(2, "0")).join("");
}

function currentTop() {
  let top = state.tree;
  for (const key of state.path) { const f = state.index.get(key); if (f) top = f; }
  return top;
}

function keyPath(n) {
  const keys = [];
  for (let p = n; p && p.parent; p = p.parent) keys.unshift(p.key || p.id);
  return keys;
}

function zoomTo(n) {
  // a node without a key (a kind, a rest) is found again by its id in this tree
  if (!n.key) state.index.set(n.id, n);
  state.path = keyPath(n);
  drawChart();
  if (n.kind === "process") showProcess(n.row);
  if (n.kind === "mapping") showMapping(n.mapping);
}

function drawCrumbs(top) {
  const crumbs = document.getElementById("crumbs");
  crumbs.replaceChildren();
  const chain = [];
  for (let p = top; p; p = p.parent) chain.unshift(p);
  chain.forEach((n, i) => {
    if (i) crumbs.append(el("span", {class: "sep", text: "›"}));
    const [name, after] = nameOf(n);  // (the name isolated: its own U+202E reversed the figure after it)
    crumbs.append(el("button", {type: "button", title: n.name || n.label, onclick: () => (n === top ? null : zoomTo(n))},
                     isolated(name), `${after} · ${human(figure(n))}`));
  });
}

function chartNote(top) {
  const meta = state.data.meta;
  const parts = [];
  const label = MEASURES.find((m) => m[0] === state.measure)[1];
  if (meta.pss_missing) parts.push(`${label}: the processes' own figures (the kernel gives no PSS: Linux before 2.6.25, so MemTotal is not broken down here).`);
  else if (state.measure !== "pss") parts.push(`${label}: the processes' own figures (MemTotal is broken down in PSS).`);
  if (meta.rollup) {
    parts.push("This frame kept smaps_rollup only: no process is broken into mappings" +
               (state.measure === "pss" ? "; in PSS each is split by page type, as the kernel split it (Pss_Anon, Pss_File, Pss_Shmem)." : "."));
  } else {
    parts.push(`Mappings: each process's ${meta.top_mappings} largest by ${rankedBy()}; the rest of each kind is one "other" box.`);
  }
  parts.push("Click a box to zoom, the path above to go back.");
  if (compared()) parts.push("Colour: change from OLD to NEW (red grew, blue shrank); gone rows are in the tables; mappings are NEW's, not compared.");
  return parts.join(" ");
}
