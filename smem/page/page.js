/* smem html: the page's script, in parts that html.py joins in this order into one script (one
   scope): common.js, hierarchy.js, chart.js, tables.js, and this one, the controls and the start.
   It reads the JSON documents embedded in the page (or, live, fetched from smem serve's
   data.json) and draws the breakdown bar, the hierarchy (plotly), the tables and the sharing
   panel.  Every text from the data is set with textContent, or escaped for plotly's labels:
   never parsed as HTML.  No request is made but the live data.json. */

// ------------------------------------------------------------------ controls and start

function choice(id, label, options, current, onpick, unavailable) {
  const box = document.getElementById(id);
  box.replaceChildren(el("span", {class: "label", text: label}));
  for (const [key, text] of options) {
    const why = unavailable && unavailable[key];
    box.append(el("button", {type: "button", role: "radio", "data-key": key, text, "aria-checked": String(key === current),
                             disabled: why ? "" : null, title: why || null, onclick: () => onpick(key)}));
  }
}

/* The measures this reading has nothing of (why, by measure): no swap PSS without swap or on a
   kernel before SwapPss; no PSS on a kernel without it (before 2.6.25, old embedded boards),
   whose processes are drawn by RSS, as smem sorts and charts them then. */
function unavailableMeasures() {
  const meta = state.data.meta, why = {};
  if (meta.pss_missing) why.pss = "The kernel gives no PSS (Linux before 2.6.25): drawn by RSS";
  if (meta.swaptotal === 0 && !compared()) why.swappss = "No swap on this machine (SwapTotal 0)";
  else if (state.data.process.rows.length && state.data.process.rows.every((r) => r.swappss === null || r.swappss === undefined)) {
    why.swappss = "No process here has a swap PSS (SwapPss: Linux 4.3 and later)";
  }
  return why;
}

function setMeasure(m) { if (state.measure !== m) { state.measure = m; rebuild(); } }
function setGrouping(g) { state.grouping = g; rebuild(); }

function drawControls() {
  choice("measure", "Weight", MEASURES, state.measure, setMeasure, unavailableMeasures());
  choice("grouping", "Group", GROUPINGS, state.grouping, setGrouping);
  choice("layout", "Layout", LAYOUTS, state.layout, (l) => { state.layout = l; drawControls(); drawChart(); });
}

function rebuild() {
  const unavailable = unavailableMeasures();  // (a live reading after swapoff; a kernel without PSS)
  if (unavailable[state.measure]) state.measure = unavailable.pss ? "rss" : "pss";
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
                   (meta.rollup ? "This frame kept smaps_rollup only: no mapping of it was recorded." :
                   `Mappings per process: the ${meta.top_mappings} largest by ${rankedBy()}, the rest of each kind folded into one box; sharers: the ${meta.top_sharers} largest per mapping, the rest summed.`)}));
}

/* Draw everything from ``data`` (the embedded documents, a live refresh, or, later, one instant
   of a recording: the hook a time slider would call). */
function render(data) {
  if (state.data && state.data !== data) {  // (what the panel showed was of the instant before)
    document.getElementById("share").replaceChildren(
      el("p", {class: "note", text: "Select a process or a mapping, in a table or the picture."}));
  }
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
      status.textContent = `live from smem serve: read at ${clockText(new Date(data.meta.read_at * 1000)).slice(11)}, every ${meta.live.interval} s`;
    })
    .catch((e) => { status.className = "status stale"; status.textContent = `live: the last refresh failed (${e.message}); showing the reading before`; });
  status.className = "status live";
  status.textContent = `live from smem serve: every ${meta.live.interval} s`;
  setInterval(refresh, Math.max(1, meta.live.interval) * 1000);
}

document.getElementById("filter").addEventListener("input", (e) => { state.filter = e.target.value; drawTable(); });
const data = readEmbedded(), timeline = data.timeline;
delete data.timeline;
render(data);
if (timeline) startTimeline(timeline, data);
if (data.meta.live) live(data.meta);
window.smemPage = {state, render, zoomTo, readEmbedded, startedAt, readyAt: performance.now()};
document.body.setAttribute("data-ready", "true");
