/* smem html: the page's constants, its state and the helpers every part uses (read the data,
   format a figure, make an element with text only). */
const startedAt = performance.now();  // plotly.js is loaded by now (bench/page.py reads both times)

const MEASURES = [["pss", "PSS"], ["uss", "USS"], ["rss", "RSS"], ["swappss", "Swap PSS"]];

/* What each process's largest mappings are chosen by (smem/page/mappings.py): PSS, else RSS on a
   kernel without PSS. */
function rankedBy() { return state.data.meta.pss_missing ? "RSS" : "PSS"; }
const GROUPINGS = [["user", "Users"], ["cgroup", "Cgroups"], ["program", "Programs"]];
const LAYOUTS = [["treemap", "Treemap"], ["icicle", "Icicle"], ["sunburst", "Sunburst"]];
const TABLES = [["process", "Processes"], ["user", "Users"], ["program", "Programs"], ["cgroup", "Cgroups"],
                ["mapping", "Mappings"], ["system", "System"]];
const KIND_NAMES = {anon: "anonymous mappings", file: "file mappings", shmem: "shared memory mappings"};
const GROUP_SHADES = ["#5b6b7f", "#7a8797", "#4d5a6a", "#8b96a3"];  // slate greys: no area's hue
const PAGE_KIND_NAMES = {anon: "anonymous pages", file: "file pages", shmem: "shared memory pages"};
const DENSE_COLUMNS = 14;  // a table of more columns is drawn with narrower cells, to fit a window
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

/* An area's colour: AREA_PALETTE is smem/data/area_colours.json, which the charts read too (html.py
   puts it before this script); the first prefix the area's name starts with gives it. */
function areaColor(area) {
  const found = AREA_PALETTE.areas.find(([prefix]) => String(area).startsWith(prefix));
  return found ? found[1] : AREA_PALETTE.other;
}
const signed = (kib) => (kib > 0 ? "+" : "") + human(kib);
const pct = (part, whole) => (whole ? (100 * part / whole).toFixed(part / whole < 0.001 ? 3 : 1) + "%" : "-");
/* plotly reads labels as its own small markup: entities keep a name as the text it is */
const plotlyText = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
/* a name isolated (FSI ... PDI) from what its line says after it, a pid or a figure, which its own
   U+202E would show reversed: one FSI more than it has isolate controls (a stray PDI of its own
   closes one of ours, not the last; it closed a <bdi>'s isolate in Chromium too), PDIs for all that
   can be open.  Plotly's labels have no <bdi>.  A name without a bidi control or a right-to-left
   letter, which cannot reorder anything, is left as it is. */
const BIDI = /[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069\ud802\ud803\ud83a\ud83b]/;
const isolated = (s) => {
  if (!BIDI.test(String(s))) return String(s);
  const n = (String(s).match(/[\u2066-\u2069]/g) || []).length;
  return "\u2068".repeat(n + 1) + String(s) + "\u2069".repeat(2 * n + 1);
};
const plotlyName = (s) => isolated(plotlyText(s));
/* a box's name (a process's without its pid) and what follows it: a process's pid */
const nameOf = (n) => (n.kind === "process" ? [n.row.name ?? "?", ` ${n.row.pid}`] : [n.label, ""]);
/* a box's label as plotly text, ``most`` characters of its name at most */
const boxLabel = (n, most) => { const [name, after] = nameOf(n); return plotlyName(cut(name, most)) + after; };
/* a long name cut to ``most`` characters, keeping its start (the hovers; the tables give it whole) */
const cut = (text, most) => (String(text).length > most ? String(text).slice(0, most - 1) + "…" : String(text));

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

/* ``date`` as the charts' time axes write it (plotly: this browser's time zone, 24 hours):
   2026-12-06 16:27:30, not the locale's "12/6/2026, 4:27:30 PM" beside them. */
function clockText(date) {
  const two = (n) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())} ` +
         `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
}
