/* smem html: memory pressure beside the breakdown (PSI, Linux 4.20+): how much of the time tasks
   waited for memory, the machine's (/proc/pressure/memory: each document's "pressure") and its
   most stalled cgroups' (the cgroup table's pressure columns, where a cgroup v2 gave them).
   Nothing is drawn where the kernel gave none: no PSI is not "no pressure". */

const PRESSURE_CGROUPS = 3;  // the most stalled cgroups listed beside the machine's figures

/* The cgroup table's pressure columns ({column}) the page's meta names (smem.page.data chose them
   from the column registry), in the table's order: those the document has. */
function pressureColumns(doc) {
  if (!doc) return [];
  const keys = new Set(state.data.meta.pressure_columns || []);
  return doc.columns.filter((c) => keys.has(c.key)).map((c) => ({column: c}));
}

/* A stall figure's cell: the % with two decimals, shaded by how much of the time it is. */
function stallCell(value, title) {
  const td = el("td", {class: "num", title, text: value === null || value === undefined ? "-" : value.toFixed(2)});
  if (value > 0) td.style.background = `rgba(201, 42, 42, ${Math.min(0.55, 0.08 + value / 150).toFixed(3)})`;
  return td;
}

function drawPressure() {
  const data = state.data, box = document.getElementById("pressure");
  const memory = ((data.system || data.process).pressure || {}).memory;
  const columns = compared() ? [] : pressureColumns(data.cgroup);
  box.replaceChildren();
  box.hidden = !memory && !columns.length;
  if (box.hidden) return;
  const parts = [el("div", {class: "pressure-title"}, el("b", {text: compared() ? "Memory pressure (NEW)" : "Memory pressure"}),
                    el("span", {text: " % of the time tasks waited for memory (PSI): some, at least one task; full, " +
                                      "all at once (no work done for want of memory)"}))];
  if (memory) {
    const kinds = Object.keys(memory), windows = Object.keys(memory[kinds[0]]).filter((w) => /^avg\d+$/.test(w));
    const head = el("tr", {}, el("th", {text: "machine"}), ...windows.map((w) => el("th", {class: "num", text: w.slice(3) + " s"})));
    const rows = kinds.map((kind) => el("tr", {}, el("th", {text: kind}),
      ...windows.map((w) => stallCell(memory[kind][w], `${kind} ${w}: % of the last ${w.slice(3)} s ` +
                                      `${kind === "full" ? "all" : "at least one"} of the tasks waited for memory (/proc/pressure/memory)`))));
    const quiet = kinds.every((kind) => windows.every((w) => memory[kind][w] === 0));
    parts.push(el("table", {class: "stalls", id: "pressure-machine"}, el("thead", {}, head), el("tbody", {}, ...rows)));
    if (quiet) parts.push(el("span", {class: "note", text: `no task waited for memory over the last ${windows.map((w) => w.slice(3)).join(", ")} s`}));
  }
  if (columns.length) parts.push(pressureOfCgroups(data.cgroup, columns));
  box.replaceChildren(...parts);
}

/* The cgroups whose tasks waited the most (by the first column, some over 10 s, then the next),
   with their figures; those without memory.pressure left out. */
function pressureOfCgroups(doc, columns) {
  const keys = columns.map((p) => p.column.key);
  const known = doc.rows.filter((r) => keys.some((k) => r[k] !== null && r[k] !== undefined));
  const order = (a, b) => { for (const k of keys) { const d = (b[k] || 0) - (a[k] || 0); if (d) return d; } return 0; };
  const stalled = known.filter((r) => keys.some((k) => r[k] > 0)).sort(order).slice(0, PRESSURE_CGROUPS);
  if (!stalled.length) {
    return el("span", {class: "note", text: `cgroups: none of the ${known.length} with memory.pressure had a task wait for memory`});
  }
  const head = el("tr", {}, el("th", {text: known.length === 1 ? "cgroup" : `most stalled of ${known.length} cgroups`}),
                  ...columns.map((p) => el("th", {class: "num", title: p.column.help, text: p.column.header})));
  const rows = stalled.map((r) => {
    const name = el("td", {class: "text keep-end", title: r.cgroup}, el("bdi", {text: r.cgroup}));
    return el("tr", {}, name, ...columns.map((p) => stallCell(r[p.column.key], p.column.help)));
  });
  return el("table", {class: "stalls", id: "pressure-cgroups"}, el("thead", {}, head), el("tbody", {}, ...rows));
}
