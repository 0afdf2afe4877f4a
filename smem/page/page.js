/* smem html: the page's script.  Reads the JSON documents embedded in the page (or, live,
   fetched from smem serve's data.json), draws the breakdown bar, the hierarchy (plotly), the
   tables and the sharing panel.  Every text from the data is set with textContent, or escaped
   for plotly's labels: never parsed as HTML.  No request is made but the live data.json. */
"use strict";
(function () {
const startedAt = performance.now();  // plotly.js is loaded by now (bench/page.py reads both times)

const MEASURES = [["pss", "PSS"], ["uss", "USS"], ["rss", "RSS"], ["swappss", "Swap PSS"]];
const GROUPINGS = [["user", "Users"], ["cgroup", "Cgroups"], ["program", "Programs"]];
const LAYOUTS = [["treemap", "Treemap"], ["icicle", "Icicle"], ["sunburst", "Sunburst"]];
const TABLES = [["process", "Processes"], ["user", "Users"], ["program", "Programs"], ["cgroup", "Cgroups"],
                ["mapping", "Mappings"], ["system", "System"]];
const KIND_NAMES = {anon: "anonymous mappings", file: "file mappings", shmem: "shared memory mappings"};
const PALETTE = ["#4263eb", "#f08c00", "#2f9e44", "#ae3ec9", "#1098ad", "#e8590c", "#5c7cfa", "#d6336c",
                 "#74b816", "#7048e8", "#0ca678", "#f59f00", "#868e96", "#3bc9db", "#e64980", "#94d82d"];
const AREA_COLORS = {cache: "#f59f00", free: "#8ce99a", kernel: "#748ffc", other: "#adb5bd", lost: "#fa5252"};
const TABLE_ROWS = 400;   // rows drawn at once; the filter and the sort reach every row
const CHART_NODES = 1200; // nodes handed to plotly at once: deeper levels are built as the user zooms
const MAX_CHILDREN = 250;  // boxes under one parent; the smaller rest is one box
const MIN_LABEL_AREA = 2400;  // square pixels a box needs for its label (about 60 x 40)

const state = {data: null, measure: "pss", grouping: "user", layout: "treemap", path: [], table: "process",
               sort: {}, filter: "", selected: null, tree: null};

// ------------------------------------------------------------------ data

function readEmbedded() {
  const data = {};
  for (const el of document.querySelectorAll('script[type="application/json"][id^="smem-"]')) {
    data[el.id.slice(5)] = JSON.parse(el.textContent);
  }
  return data;
}

const compared = () => Boolean(state.data.meta.compared);

function human(kib) {
  if (kib === null || kib === undefined || kib === "") return "-";
  const sign = kib < 0 ? "-" : "";
  let v = Math.abs(kib), unit = 0;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  while (v >= 1024 && unit < units.length - 1) { v /= 1024; unit++; }
  return sign + (unit === 0 || v >= 100 ? v.toFixed(0) : v.toFixed(1)) + " " + units[unit];
}
const signed = (kib) => (kib > 0 ? "+" : "") + human(kib);
const pct = (part, whole) => (whole ? (100 * part / whole).toFixed(part / whole < 0.001 ? 3 : 1) + "%" : "-");
/* plotly reads labels as its own small markup: entities keep a name as the text it is */
const plotlyText = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

// ------------------------------------------------------------------ the hierarchy

/* A node: label, kind, own figures per measure (v), changes (d), children (or a function that
   makes them), and the key a table row selects it by.  Values are never made up: a group is the
   sum of its members, and a part its members leave is a child of its own ("rest"). */
function node(label, kind, v, more) {
  return Object.assign({label, kind, v, d: {}, children: null, parent: null, id: null}, more || {});
}

function addInto(target, values) {
  for (const [m] of MEASURES) if (values[m] !== null && values[m] !== undefined) target[m] = (target[m] || 0) + values[m];
}

function figures(row, prefix) {
  const v = {};
  for (const [m] of MEASURES) v[m] = row[prefix + m] === undefined ? null : row[prefix + m];
  return v;
}

function processNodes(data) {
  // compared, a gone process is a node of size 0 in NEW: its box is not drawn, its change counts
  return data.process.rows.map((r) => {
    // the box says which program and pid; the hover and the sharing panel give the command line
    const n = node(`${r.name === null || r.name === undefined ? "?" : r.name} ${r.pid}`, "process", figures(r, ""),
                   {row: r, key: "process:" + r.pid});
    if (compared()) n.d = figures(r, "d"), n.status = r.status;
    n.children = () => mappingNodes(data, r.pid);
    return n;
  });
}

function mappingNodes(data, pid) {
  const maps = data.maps, rows = maps.processes[String(pid)];
  if (!rows || !rows.length) return [];
  const f = maps.fields, kinds = {};
  for (const row of rows) {
    const kind = maps.kinds[row[0]];
    const v = {};
    for (const [m] of MEASURES) v[m] = row[f.indexOf(m)];
    const label = row[1] < 0 ? `other ${KIND_NAMES[kind]} (${row[2]})` : maps.names[row[1]];
    const leaf = node(label, row[1] < 0 ? "rest" : "mapping", v,
                      {mapping: row[1], count: row[2], key: row[1] < 0 ? null : "map:" + row[1]});
    (kinds[kind] = kinds[kind] || []).push(leaf);
  }
  return Object.entries(kinds).map(([kind, leaves]) => {
    const v = {};
    for (const leaf of leaves) addInto(v, leaf.v);
    const n = node(KIND_NAMES[kind], "kind", v);
    n.children = leaves;
    return n;
  });
}

function groupBy(items, keyOf, labelOf, kind) {
  const groups = new Map();
  for (const item of items) {
    const key = keyOf(item);
    if (!groups.has(key)) groups.set(key, node(labelOf(item), kind, {}, {key: kind + ":" + key, children: []}));
    const g = groups.get(key);
    g.children.push(item);
    addInto(g.v, item.v);
    addInto(g.d, item.d);
  }
  return [...groups.values()];
}

function processTree(data) {
  const processes = processNodes(data);
  const by = state.grouping;
  const name = (p) => p.row.name === null || p.row.name === undefined ? "?" : p.row.name;
  if (by === "program") return groupBy(processes, name, name, "program");
  const top = groupBy(processes, (p) => p.row[by], (p) => p.row[by], by);
  for (const g of top) {
    g.children = groupBy(g.children, name, name, "program");
    for (const p of g.children) p.key = `${by}:${g.label}/program:${p.label}`;
  }
  return top;
}

function areaColor(row, index) {
  if (row.area === "unexplained") return AREA_COLORS.lost;
  if (/^free/.test(row.area)) return AREA_COLORS.free;
  if (row.cache && row.used && row.cache === row.used) return AREA_COLORS.cache;
  return index % 2 ? AREA_COLORS.kernel : "#5c7cfa";
}

/* The root: MemTotal and its areas where the measure is PSS and -w --breakdown was read;
   otherwise the processes alone (USS, RSS and swap are not parts of MemTotal). */
function buildTree(data) {
  const groups = processTree(data);
  const sum = {};
  for (const g of groups) addInto(sum, g.v);
  const meta = data.meta, system = data.system;
  const processes = node(meta.selected ? "selected processes" : "processes", "processes", sum,
                         {key: "processes", children: groups});
  for (const g of groups) addInto(processes.d, g.d);
  if (state.measure !== "pss" || !system || !meta.process_areas.length) return finish(processes);
  const root = node("MemTotal", "root", {pss: meta.memtotal}, {key: "root", children: []});
  let own = 0;
  system.rows.forEach((row, i) => {
    if (row.status === "gone" || row.used === null) return;
    if (meta.process_areas.includes(row.area)) { own += row.used; return; }
    if (row.used <= 0) return;
    const area = node(row.area, "area", {pss: row.used}, {row, key: "area:" + row.area, color: areaColor(row, i)});
    if (compared()) area.d = {pss: row.dused};
    root.children.push(area);
  });
  processes.v = Object.assign({}, processes.v, {pss: own});
  processes.label = meta.selected ? "selected processes (PSS)" : "processes (PSS)";
  root.children.unshift(processes);
  return finish(root);
}

/* Ids, parents and the index of keys (a table row finds its box by key). */
function finish(root) {
  let next = 0;
  const index = new Map();
  (function walk(n, parent) {
    n.id = "n" + (next++);
    n.parent = parent;
    if (n.key) index.set(n.key, n);
    if (Array.isArray(n.children)) for (const c of n.children) walk(c, n);
  })(root, null);
  state.index = index;
  return root;
}

/* A node's children, made now if they are made on demand (a process's mappings); more than
   MAX_CHILDREN fold into one box; a part of the node its children leave (in any measure) is a
   "rest" child, so that every level adds up. */
function childrenOf(n) {
  if (typeof n.children === "function") {
    const made = n.children();
    n.children = made;
    for (const c of made) {
      finishChild(c, n);
    }
  }
  let kids = n.children || [];
  if (kids.length > MAX_CHILDREN && !n.folded) {
    // the largest stay boxes of their own; the rest are one box, "N more", holding them
    n.folded = true;
    kids.sort((a, b) => total(b) - total(a));
    const more = node(`${kids.length - MAX_CHILDREN + 1} more, smaller`, "more", {}, {children: kids.slice(MAX_CHILDREN - 1)});
    for (const c of more.children) addInto(more.v, c.v), addInto(more.d, c.d);
    kids = n.children = kids.slice(0, MAX_CHILDREN - 1);
    finishChild(more, n);
    kids.push(more);
  }
  if (kids.length && !n.rested) {
    forgetTotals(n);
    n.rested = true;
    const covered = {};
    for (const c of kids) addInto(covered, c.v);
    const rest = {};
    let any = false;
    for (const [m] of MEASURES) {
      const left = (n.v[m] || 0) - (covered[m] || 0);
      if (left > 0) { rest[m] = left; any = true; }
    }
    if (any) {
      const label = n.kind === "processes" ? "smaps_rollup beyond the smaps sums (read apart)" : "rest";
      const r = node(n.kind === "root" ? "not in any area" : label, "rest", rest);
      finishChild(r, n);
      kids.push(r);
    }
  }
  return kids;
}

function finishChild(c, parent) {
  c.parent = parent;
  c.id = parent.id + "." + (parent.made = (parent.made || 0) + 1);
  state.index.set(c.key || c.id, c);  // (a box without a key, "N more", is found by its id)
  if (Array.isArray(c.children)) c.children.forEach((k) => finishChild(k, c));
}

const value = (n) => Math.max(0, n.v[state.measure] || 0);
function total(n) {  // the node's size in the chart: at least its children's sum (kept per measure)
  const memo = n.totals || (n.totals = {});
  if (memo[state.measure] === undefined) {
    const kids = Array.isArray(n.children) ? n.children : [];
    let s = 0;
    for (const c of kids) s += total(c);
    memo[state.measure] = Math.max(value(n), s);
  }
  return memo[state.measure];
}

function forgetTotals(n) {  // children made: this node's and its ancestors' sizes are summed again
  for (let p = n; p; p = p.parent) p.totals = null;
}

const cut = (text, most) => (String(text).length > most ? String(text).slice(0, most - 1) + "…" : String(text));

function hover(n) {  // (long names cut: the tables and the sharing panel give them whole)
  const lines = [`<b>${plotlyText(cut(n.label, 90))}</b>`];
  if (n.kind === "process") lines.push(plotlyText(cut(n.row.command, 90)), plotlyText(cut(`user ${n.row.user}` + (n.row.cgroup ? ` · cgroup ${n.row.cgroup}` : ""), 90)));
  if (n.kind === "area") lines.push(plotlyText(n.row.source));
  if (n.kind === "mapping" || n.kind === "rest") lines.push(plotlyText(n.count ? `${n.count} mappings` : ""));
  if (n.row && n.row.swap !== undefined && n.kind === "process") lines.push(`Swap ${human(n.row.swap)}`);
  for (const [m, label] of MEASURES) {
    if (n.v[m] === undefined) continue;
    let line = `${label} ${human(n.v[m])}`;
    if (compared() && n.d[m] !== undefined && n.d[m] !== null) line += ` (${signed(n.d[m])})`;
    lines.push(m === state.measure ? `<b>${line}</b>` : line);
  }
  const parent = n.parent ? total(n.parent) : 0;
  const v = total(n);
  if (n.parent) lines.push(`${pct(v, parent)} of ${plotlyText(cut(n.parent.label, 60))}`);
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
    labels: nodes.map((n, i) => (labelled[i] ? plotlyText(n.label) + (n.status ? ` [${n.status}]` : "") : "")),
    parents: nodes.map((n) => (n === top || !shown.has(n.parent && n.parent.id) ? "" : n.parent.id)),
    values: nodes.map((n) => total(n)), branchvalues: "total",
    text: nodes.map((n, i) => (labelled[i] ? human(total(n)) + (compared() && n.d[state.measure] ? " " + signed(n.d[state.measure]) : "") : "")),
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
  Plotly.react(chart, [trace], layout, {displayModeBar: false, responsive: true});
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
  }
  drawCrumbs(top);
  document.getElementById("chart-note").textContent = chartNote(top);
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
  if (n.kind === "rest") return "#ced4da";
  if (top.color) return top.color;
  const siblings = top.parent ? top.parent.children : [top];
  return lighter(PALETTE[Math.max(0, siblings.indexOf(top)) % PALETTE.length], Math.min(0.6, 0.16 * depth));
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
    crumbs.append(el("button", {type: "button", text: `${n.label} · ${human(total(n))}`, title: n.label,
                                onclick: () => (n === top ? null : zoomTo(n))}));
  });
}

function chartNote(top) {
  const meta = state.data.meta;
  const parts = [];
  if (state.measure !== "pss") parts.push(`${MEASURES.find((m) => m[0] === state.measure)[1]}: the processes' own figures (MemTotal is broken down in PSS).`);
  parts.push(`Mappings: each process's ${meta.top_mappings} largest by PSS; the rest of each kind is one "other" box. Click a box to zoom, the path above to go back.`);
  if (compared()) parts.push("Colour: change from OLD to NEW (red grew, blue shrank); gone rows are in the tables; mappings are NEW's, not compared.");
  return parts.join(" ");
}

// ------------------------------------------------------------------ the header

function drawHeader() {
  const data = state.data, source = data.process.source, meta = data.meta;
  const facts = document.getElementById("facts");
  const fact = (label, text) => el("span", {}, label + " ", el("b", {text: text === undefined || text === null ? "?" : String(text)}));
  facts.replaceChildren(fact("host", source.hostname), fact("kernel", source.kernel), fact("at", source.time),
                        fact("source", source.description), fact("MemTotal", human(meta.memtotal)));
  if (meta.installed && meta.installed.kib) {
    const ram = fact("installed RAM", (meta.installed.estimate ? "~" : "") + human(meta.installed.kib));
    ram.title = meta.installed.source;
    facts.append(ram);
  }
  if (compared() && data.process.sources) facts.append(fact("compared with", data.process.sources.old.description));
  const bar = document.getElementById("bar"), legend = document.getElementById("legend");
  bar.replaceChildren(); legend.replaceChildren();
  if (!data.system) { document.getElementById("breakdown").hidden = true; return; }
  const rows = data.system.rows.filter((r) => r.used !== null && r.status !== "gone");
  const whole = meta.memtotal || rows.reduce((s, r) => s + Math.max(0, r.used), 0);
  rows.forEach((row, i) => {
    const color = meta.process_areas.includes(row.area) ? PALETTE[i % 3] : areaColor(row, i);
    const tip = `${row.area}: ${human(row.used)} (${pct(row.used, whole)} of MemTotal)` +
                (compared() ? `, ${signed(row.dused)} since OLD` : "") + `\n${row.source}`;
    if (row.used > 0) {
      const seg = el("div", {class: "seg", title: tip, style: `width:${100 * row.used / whole}%;background:${color}`,
                             onclick: () => selectArea(row)});
      if (row.used / whole > 0.06) seg.textContent = `${row.area} ${human(row.used)}`;
      bar.append(seg);
    }
    if (row.used !== 0 || row.area === "unexplained") {
      legend.append(el("span", {class: "item", title: tip, onclick: () => selectArea(row)},
                       el("span", {class: "swatch", style: `background:${color}`}), row.area + " ",
                       el("b", {text: human(row.used)})));
    }
  });
}

function selectArea(row) {
  setMeasure("pss");
  const n = state.index.get(state.data.meta.process_areas.includes(row.area) ? "processes" : "area:" + row.area);
  if (n) zoomTo(n);
}

// ------------------------------------------------------------------ tables

function drawTabs() {
  const tabs = document.getElementById("tabs");
  tabs.replaceChildren();
  for (const [name, label] of TABLES) {
    if (!state.data[name]) continue;
    tabs.append(el("button", {type: "button", role: "tab", "data-table": name, text: label,
                              "aria-selected": String(state.table === name),
                              onclick: () => {  // each table its own filter: a new tab starts unfiltered
                                state.table = name; state.filter = ""; document.getElementById("filter").value = "";
                                drawTabs(); drawTable();
                              }}));
  }
}

function sortOf(doc) {
  const chosen = state.sort[state.table];
  if (chosen) return chosen;
  const amountKey = compared() ? "dpss" : doc.columns.some((c) => c.key === "pss") ? "pss" : "used";
  return state.table === "system" ? {key: null, reverse: false} : {key: amountKey, reverse: true};
}

function drawTable() {
  const doc = state.data[state.table];
  const table = document.getElementById("table");
  const sort = sortOf(doc);
  const columns = doc.columns;
  const head = el("tr");
  for (const c of columns) {
    const sorted = sort.key === c.key;
    head.append(el("th", {class: c.amount || typeof (doc.rows[0] || {})[c.key] === "number" ? "num" : null,
                          title: c.help, text: c.header, "data-key": c.key,
                          "aria-sort": sorted ? (sort.reverse ? "descending" : "ascending") : null,
                          onclick: () => { state.sort[state.table] = {key: c.key, reverse: sorted ? !sort.reverse : c.amount}; drawTable(); }}));
  }
  const words = state.filter.toLowerCase().split(/\s+/).filter(Boolean);
  let rows = doc.rows;
  if (words.length) {
    const texts = columns.filter((c) => !c.amount).map((c) => c.key);
    rows = rows.filter((r) => {
      const hay = texts.map((k) => (r[k] === null || r[k] === undefined ? "" : String(r[k]))).join(" ").toLowerCase();
      return words.every((w) => hay.includes(w));
    });
  }
  if (sort.key) {
    const k = sort.key, dir = sort.reverse ? -1 : 1;
    const magnitude = compared() && /^d/.test(k);
    rows = rows.slice().sort((a, b) => {
      let x = a[k], y = b[k];
      if (magnitude) { x = x === null ? null : Math.abs(x); y = y === null ? null : Math.abs(y); }
      if (x === y) return 0;
      if (x === null || x === undefined) return -dir;
      if (y === null || y === undefined) return dir;
      return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * dir;
    });
  }
  const body = el("tbody");
  for (const r of rows.slice(0, TABLE_ROWS)) body.append(tableRow(columns, r));
  const foot = el("tfoot");
  if (doc.totals && !words.length) {
    const tr = el("tr");
    columns.forEach((c, i) => {
      const name = Object.keys(doc.totals).find((k) => k === c.key || (i === 0 && !(c.key in doc.totals)));
      const v = c.key in doc.totals ? doc.totals[c.key] : i === 0 ? "total" : "";
      tr.append(el("td", {class: c.amount ? "num" : null, text: c.amount ? human(v) : v === undefined ? "" : String(v)}));
    });
    foot.append(tr);
  }
  table.replaceChildren(el("thead", {}, head), body, foot);
  document.getElementById("table-count").textContent =
    `${rows.length} of ${doc.rows.length} rows` + (rows.length > TABLE_ROWS ? ` (the first ${TABLE_ROWS} shown: filter to narrow)` : "");
  const command = state.data.meta.commands && state.data.meta.commands[state.table];
  document.getElementById("table-command").textContent = command ? "Same numbers as: " + command : "";
}

function tableRow(columns, r) {
  const tr = el("tr", {onclick: () => selectRow(r, tr)});
  for (const c of columns) {
    const v = r[c.key];
    const td = el("td", {class: c.amount ? "num" : typeof v === "number" ? "num" : "text"});
    if (c.amount) {
      td.textContent = /^d/.test(c.key) && compared() ? (v === null ? "-" : signed(v)) : human(v);
      td.title = v === null || v === undefined ? "absent" : `${v} KiB`;
      if (/^d/.test(c.key) && v) td.classList.add(v > 0 ? "grow" : "shrink");
    } else if (c.key === "status") {
      if (v) td.append(el("span", {class: "tag " + v, text: v}));
    } else {
      td.textContent = v === null || v === undefined ? "-" : String(v);
      td.title = td.textContent;
    }
    tr.append(td);
  }
  return tr;
}

function selectRow(r, tr) {
  for (const old of document.querySelectorAll("#table tr.selected")) old.classList.remove("selected");
  tr.classList.add("selected");
  const t = state.table;
  if (t === "mapping") { showMapping(state.data.maps.names.indexOf(r.map), r); return; }
  if (t === "system") { selectArea(r); return; }
  if (t === "process") {
    const n = state.index.get("process:" + r.pid);
    if (n) zoomTo(n); else showProcess(r);
    return;
  }
  if (state.grouping !== t) setGrouping(t);
  const n = state.index.get(t + ":" + r[t === "program" ? "name" : t]);
  if (n) zoomTo(n);
}

// ------------------------------------------------------------------ who shares what

function shareTable(headers, rows) {
  const head = el("tr");
  headers.forEach((h, i) => head.append(el("th", {class: i ? "num" : null, text: h})));
  const body = el("tbody");
  for (const cells of rows) {
    const tr = el("tr", {onclick: cells.onclick});
    cells.forEach((c, i) => tr.append(el("td", {class: i ? "num" : "text", text: c, title: c})));
    body.append(tr);
  }
  return el("table", {}, el("thead", {}, head), body);
}

function showMapping(index, tableRowOfMapping) {
  const data = state.data, share = document.getElementById("share");
  const name = index >= 0 ? data.maps.names[index] : tableRowOfMapping && tableRowOfMapping.map;
  const row = tableRowOfMapping || data.mapping.rows.find((r) => r.map === name);
  const shared = index >= 0 ? data.sharers.mappings[String(index)] : null;
  const commands = new Map(data.process.rows.map((r) => [r.pid, r.command]));
  const parts = [el("h3", {text: name === undefined ? "?" : name})];
  if (row) parts.push(el("p", {class: "note", text: `mapped by ${row.pids} process${row.pids === 1 ? "" : "es"} in ${row.count} mappings; PSS ${human(row.pss)}, RSS ${human(row.rss)}, USS ${human(row.uss)}`}));
  if (shared) {
    const f = data.sharers.fields;
    const rows = shared.rows.map((s) => {
      const cells = [`${s[0]} ${commands.get(s[0]) || ""}`, human(s[f.indexOf("pss")]), human(s[f.indexOf("rss")]), human(s[f.indexOf("uss")])];
      cells.onclick = () => { const n = state.index.get("process:" + s[0]); if (n) zoomTo(n); };
      return cells;
    });
    parts.push(shareTable(["process", "PSS", "RSS", "USS"], rows));
    if (shared.more) parts.push(el("p", {class: "more", text: `and ${shared.more[0]} more processes: PSS ${human(shared.more[f.indexOf("pss")])}`}));
  } else {
    parts.push(el("p", {class: "note", text: "No other process maps it."}));
  }
  share.replaceChildren(...parts);
}

function showProcess(r) {
  const data = state.data, share = document.getElementById("share");
  const maps = data.maps, rows = (maps.processes[String(r.pid)] || []).filter((m) => m[1] >= 0);
  const f = maps.fields;
  const parts = [el("h3", {text: `${r.pid} ${r.command}`}),
                 el("p", {class: "note", text: `${r.user} · PSS ${human(r.pss)} · USS ${human(r.uss)} · RSS ${human(r.rss)} · its ${rows.length} largest mappings, and how many other processes map each (select one to see them)`})];
  const table = rows.map((m) => {
    const shared = data.sharers.mappings[String(m[1])];
    const others = shared ? shared.rows.length - 1 + (shared.more ? shared.more[0] : 0) : 0;
    const cells = [maps.names[m[1]], human(m[f.indexOf("pss")]), human(m[f.indexOf("rss")]), String(others)];
    cells.onclick = () => showMapping(m[1]);
    return cells;
  });
  parts.push(shareTable(["mapping", "PSS", "RSS", "others"], table));
  share.replaceChildren(...parts);
}

// ------------------------------------------------------------------ controls and start

function choice(id, label, options, current, onpick) {
  const box = document.getElementById(id);
  box.replaceChildren(el("span", {class: "label", text: label}));
  for (const [key, text] of options) {
    box.append(el("button", {type: "button", role: "radio", "data-key": key, text, "aria-checked": String(key === current),
                             onclick: () => onpick(key)}));
  }
}

function setMeasure(m) { if (state.measure !== m) { state.measure = m; rebuild(); } }
function setGrouping(g) { state.grouping = g; rebuild(); }

function drawControls() {
  choice("measure", "Weight", MEASURES, state.measure, setMeasure);
  choice("grouping", "Group", GROUPINGS, state.grouping, setGrouping);
  choice("layout", "Layout", LAYOUTS, state.layout, (l) => { state.layout = l; drawControls(); drawChart(); });
}

function rebuild() {
  state.tree = buildTree(state.data);
  if (!state.started) {  // free memory dwarfs the rest: start at the processes (MemTotal is one click up)
    state.started = true;
    const processes = state.index.get("processes");
    if (processes && processes.parent) state.path = keyPath(processes);
  }
  drawControls();
  drawChart();
}

function drawFooter() {
  const meta = state.data.meta, footer = document.getElementById("footer");
  footer.replaceChildren(
    el("p", {text: `Made by smem ${state.data.process.smem}. The tables are the documents smem -F json prints (embedded in this page as JSON; each table names its command). ` +
                   `Mappings per process: the ${meta.top_mappings} largest by PSS, the rest of each kind folded into one box; sharers: the ${meta.top_sharers} largest per mapping, the rest summed.`}));
}

/* Draw everything from ``data`` (the embedded documents, a live refresh, or, later, one instant
   of a recording: the hook a time slider would call). */
function render(data) {
  state.data = data;
  drawHeader();
  drawTabs();
  drawTable();
  rebuild();
  drawFooter();
}

function live(meta) {
  const status = document.getElementById("status");
  status.hidden = false;
  const refresh = () => fetch(meta.live.url, {cache: "no-store", credentials: "same-origin"})
    .then((r) => { if (!r.ok) throw new Error(r.status); return r.json(); })
    .then((data) => {  // the same view (zoom, table, sort, filter) of the new reading
      data.meta.live = meta.live;
      state.data = data;
      drawHeader(); drawTable(); rebuild();
      status.className = "status live";
      status.textContent = `live from smem serve: read at ${new Date(data.meta.read_at * 1000).toLocaleTimeString()}, every ${meta.live.interval} s`;
    })
    .catch((e) => { status.className = "status stale"; status.textContent = `live: the last refresh failed (${e.message}); showing the reading before`; });
  status.className = "status live";
  status.textContent = `live from smem serve: every ${meta.live.interval} s`;
  setInterval(refresh, Math.max(1, meta.live.interval) * 1000);
}

document.getElementById("filter").addEventListener("input", (e) => { state.filter = e.target.value; drawTable(); });
const data = readEmbedded();
render(data);
if (data.meta.live) live(data.meta);
window.smemPage = {state, render, zoomTo, readEmbedded, startedAt, readyAt: performance.now()};
document.body.setAttribute("data-ready", "true");
})();
