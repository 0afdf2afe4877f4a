/* smem html: the header's breakdown bar, the tables, and who shares what. */
// ------------------------------------------------------------------ the header

function drawHeader() {
  const data = state.data, source = data.process.source, meta = data.meta;
  const facts = document.getElementById("facts");
  const fact = (label, text) => el("span", {}, label + " ", el("b", {text: String(text)}));
  // what the source does not know (a capture without hostname, kernel or time) is left out: "host ?" said nothing
  const known = [["host", source.hostname], ["kernel", source.kernel], ["at", source.time], ["source", source.description]]
    .filter(([, text]) => text !== undefined && text !== null && text !== "");
  facts.replaceChildren(...known.map(([label, text]) => fact(label, text)), fact("MemTotal", human(meta.memtotal)));
  if (meta.installed && meta.installed.kib) {
    const ram = fact("installed RAM", (meta.installed.estimate ? "~" : "") + human(meta.installed.kib));
    ram.title = meta.installed.source;
    facts.append(ram);
  }
  if (compared() && data.process.sources) facts.append(fact("compared with", data.process.sources.old.description));
  // what smem warned of as it read (processes it could not read: the figures leave them out)
  const warned = meta.warnings || [], said = document.getElementById("warnings");
  said.replaceChildren(...warned.map((w) => el("div", {text: "warning: " + w})));
  said.hidden = !warned.length;
  drawPressure();
  const bar = document.getElementById("bar"), legend = document.getElementById("legend");
  bar.replaceChildren(); legend.replaceChildren();
  if (!data.system) { document.getElementById("breakdown").hidden = true; return; }
  const rows = data.system.rows.filter((r) => r.used !== null && r.status !== "gone");
  const whole = meta.memtotal || rows.reduce((s, r) => s + Math.max(0, r.used), 0);
  const colors = segmentColors(data);
  // (a row below zero is explained in the breakdown's notes: said where its figure is shown)
  const belowZero = (data.system.notes || []).find((n) => n.startsWith("below zero: "));
  rows.forEach((row) => {
    const color = colors.get(row.area);
    const tip = `${row.area}: ${human(row.used)} (${pct(row.used, whole)} of MemTotal)` +
                (compared() ? `, ${signed(row.dused)} since OLD` : "") + `\n${row.source}` +
                (row.used < 0 && belowZero ? `\n${belowZero}` : "");
    if (row.used > 0) {
      const seg = el("div", {class: "seg" + (light(color) ? " light" : ""), title: tip,
                             style: `width:${100 * row.used / whole}%;background:${color}`, onclick: () => selectArea(row)});
      seg.smemLabels = [`${row.area} ${human(row.used)}`, human(row.used)];
      bar.append(seg);
    }
    if (row.used !== 0 || row.area === "unexplained") {
      legend.append(el("button", {type: "button", class: "item", title: tip, onclick: () => selectArea(row)},
                       el("span", {class: "swatch", style: `background:${color}`}), row.area + " ",
                       el("b", {text: human(row.used)})));
    }
  });
  drawBelowZero(rows, meta.below_zero_why);
  fitBarLabels();
}

/* What each area below zero is and why it is, under the legend: a screenshot shows no hover
   text, and "-112 MiB" read as an error.  ``why``: the breakdown's (meta.below_zero_why). */
function drawBelowZero(rows, why) {
  const said = document.getElementById("below-zero");
  const below = rows.filter((r) => r.used < 0 && r.area !== "unexplained");  // (MemTotal less the rest: its own note)
  said.hidden = !below.length;
  said.replaceChildren(...below.map((row) => el("span", {}, el("b", {text: row.area}),
    ` is ${human(row.used)}: ${belowZeroMeaning(row)}. ${belowZeroWhy(why)} `)));
}

/* Why an area goes below zero, as every note of one says it (the header's, the time chart's). */
function belowZeroWhy(why) {
  return `Below zero: the processes read held more than meminfo counted, as ${why}.`;
}

function belowZeroMeaning(row) {
  if (!row.area.startsWith("anon of processes not read")) return row.source;
  return "the anonymous memory meminfo counts (AnonPages) less what the processes smem read hold (their Pss_Anon), " +
         "which is that of the processes it could not read" + (row.area.endsWith("not selected") ? " or did not select" : "") +
         ": in the system's figure but in no process's";
}

/* Each segment's label as long as fits (its name and size, its size, or none): a label cut
   in the middle ("page cache n") said less than none. */
function fitBarLabels() {
  for (const seg of document.querySelectorAll("#bar .seg")) {
    seg.classList.add("labelled");
    const fits = seg.smemLabels.find((text) => { seg.textContent = text; return seg.scrollWidth <= seg.clientWidth; });
    if (!fits) { seg.textContent = ""; seg.classList.remove("labelled"); }
  }
}
window.addEventListener("resize", fitBarLabels);

function light(hex) {  // a colour on which the ink reads better than white (WCAG's relative luminance and contrast)
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255)
    .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
  return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.215;
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
  if (!state.data[state.table]) state.table = "process";  // (an instant without mappings)
  for (const [name, label] of TABLES) {
    if (!state.data[name]) {  // a frame that kept smaps_rollup only has no mapping table: said where it was
      if (state.data.meta.rollup && name === "mapping") {
        tabs.append(el("button", {type: "button", role: "tab", text: label, disabled: "", "aria-selected": "false",
                                  title: "This frame kept smaps_rollup only: no mapping of it was recorded"}));
      }
      continue;
    }
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
  return state.table === "system" ? {key: null, reverse: false} : {key: amountKeyOf(doc), reverse: true};
}

/* The column a table is sorted by at first: PSS (its change, compared), else used; RSS where no
   row has a PSS (a kernel before 2.6.25, whose PSS column is all "-"). */
function amountKeyOf(doc) {
  const has = (k) => doc.columns.some((c) => c.key === k);
  const [pss, rss] = compared() ? ["dpss", "drss"] : ["pss", "rss"];
  if (!compared() && !has(pss)) return "used";
  const valued = (k) => doc.rows.some((r) => r[k] !== null && r[k] !== undefined);
  return doc.rows.length && has(rss) && !valued(pss) ? rss : pss;
}

function drawTable() {
  const doc = state.data[state.table];
  const table = document.getElementById("table");
  const sort = sortOf(doc);
  const columns = doc.columns, shape = shapeOf(doc);
  const head = el("tr");
  for (const c of columns) {
    const sorted = sort.key === c.key;
    head.append(el("th", {class: shape.figures.has(c.key) ? "num" : null,
                          title: c.help, text: c.header, "data-key": c.key, tabindex: "0",
                          "aria-sort": sorted ? (sort.reverse ? "descending" : "ascending") : null,
                          onkeydown: pressed, onclick: () => {
                            state.sort[state.table] = {key: c.key, reverse: sorted ? !sort.reverse : c.amount};
                            drawTable();
                            document.querySelector(`#table th[data-key="${c.key}"]`).focus();  // (drawn anew)
                          }}));
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
  for (const r of rows.slice(0, TABLE_ROWS)) body.append(tableRow(columns, r, shape));
  const foot = el("tfoot");
  if (doc.totals && !words.length) {
    const tr = el("tr"), counts = [];
    columns.forEach((c, i) => {
      const key = c.total || c.key;  // (named for what it counts: the cpu column's is cpu_percent)
      let v = key in doc.totals ? doc.totals[key] : "";
      // the count under the first column (processes, as smem prints under PID) and a text column's
      // (users) are said by the first cell's title: a bare "1" under names read as nothing
      const counted = i === 0 || (c.total && c.total !== c.key && !c.amount && !shape.figures.has(c.key));
      if (counted) {
        if (v !== "") counts.push(`${v} ${c.total && c.total !== c.key ? c.total : "rows"}`);
        v = i === 0 ? "total" : "";
      }
      // (aligned as the column's figures: a count's or CPU%'s total, left-aligned, stood apart from them)
      tr.append(el("td", {class: shape.figures.has(c.key) ? "num" : null, text: c.amount ? human(v) : v === undefined ? "" : String(v)}));
    });
    if (counts.length) tr.cells[0].title = counts.join(", ");
    foot.append(tr);
  }
  table.replaceChildren(el("thead", {}, head), body, foot);
  table.classList.toggle("dense", columns.length > DENSE_COLUMNS);  // (the cgroups' with CPU, GPU and pressure)
  table.classList.toggle("compared", compared());  // (OLD's figures, NEW's and the changes: cut shorter when narrow)
  document.getElementById("table-count").textContent =
    `${rows.length} of ${doc.rows.length} rows` + (rows.length > TABLE_ROWS ? ` (the first ${TABLE_ROWS} shown: filter to narrow)` : "");
  const command = state.data.meta.commands && state.data.meta.commands[state.table];
  document.getElementById("table-command").textContent = command ? "Same numbers as: " + command : "";
  markTableEdges();
}

/* A table wider than its box says so: a shadow at each edge past which it has columns (the frame's
   more-left, more-right), and beside the filter a button naming the columns right of the view,
   which scrolls to them.  (At 1400 px a comparison's RSS columns were reached only by scrolling
   the table sideways, and nothing on the screen said they were there.) */
function markTableEdges() {
  const wrap = document.querySelector(".table-wrap"), frame = wrap.parentElement;
  const box = wrap.getBoundingClientRect(), edge = box.left + wrap.clientLeft + wrap.clientWidth;
  frame.classList.toggle("more-left", wrap.scrollLeft > 1);
  frame.classList.toggle("more-right", wrap.scrollWidth - wrap.clientWidth - wrap.scrollLeft > 1);
  // (a column counts as right of the view once half of it is)
  const right = [...document.querySelectorAll("#table thead th")].filter((th) => {
    const r = th.getBoundingClientRect();
    return r.left + r.width / 2 > edge;
  });
  const more = document.getElementById("table-more");
  more.hidden = !right.length;
  const names = right.map((th) => th.textContent);
  more.textContent = right.length ? `${right.length} more column${right.length === 1 ? "" : "s"} → ` +
                                    (names.length > 4 ? names.slice(0, 4).join(", ") + ", …" : names.join(", ")) : "";
  more.title = names.join(", ");
}
document.querySelector(".table-wrap").addEventListener("scroll", markTableEdges, {passive: true});
new ResizeObserver(markTableEdges).observe(document.querySelector(".table-wrap"));
document.getElementById("table-more").addEventListener("click", () => {
  const wrap = document.querySelector(".table-wrap");
  wrap.scrollTo({left: wrap.scrollWidth, behavior: "smooth"});
});

/* Enter or space on a focused header, row or legend item: as a click (they are reached by Tab). */
function pressed(event) {
  if (event.key !== "Enter" && event.key !== " ") return;
  event.preventDefault();
  event.currentTarget.click();
}

/* How a table's cells are laid out: ``figures``, the keys of its columns of figures (right-aligned,
   a "-" in them too: a cgroup's pressure whose first row has none); ``decimals``, of each column
   of figures that are not KiB (CPU%, pressure), as many as its most precise figure has, at most
   two, so that a column's figures line up ("0.0" over "12.5"). */
function shapeOf(doc) {
  const figures = new Set(), decimals = {};
  for (const c of doc.columns) {
    const numbers = doc.rows.map((r) => r[c.key]).filter((v) => typeof v === "number");
    if (c.amount || numbers.length) figures.add(c.key);
    if (c.amount) continue;
    // (a loop: Math.max(...) of a table of 120,000 rows is a call of as many arguments, which V8 refuses)
    const most = numbers.reduce((m, v) => Number.isInteger(v) ? m : Math.max(m, (String(v).split(".")[1] || "").length), 0);
    if (most) decimals[c.key] = Math.min(2, most);
  }
  return {figures, decimals};
}

function tableRow(columns, r, shape) {
  const tr = el("tr", {tabindex: "0", onkeydown: pressed, onclick: () => selectRow(r, tr)});
  for (const c of columns) {
    const v = r[c.key];
    const td = el("td", {class: shape.figures.has(c.key) ? "num" : "text"});
    if (c.amount) {
      td.textContent = /^d/.test(c.key) && compared() ? (v === null ? "-" : signed(v)) : human(v);
      td.title = v === null || v === undefined ? "absent" : `${v} KiB`;
      if (/^d/.test(c.key) && compared() && v) td.classList.add(v > 0 ? "grow" : "shrink");  // (not DmaBuf's)
    } else if (c.key === "status") {
      if (v) td.append(el("span", {class: "tag " + v, text: v}));
    } else {
      const change = /^d/.test(c.key) && compared() && typeof v === "number";  // a count's (dcount)
      const shown = typeof v === "number" && shape.decimals[c.key] ? v.toFixed(shape.decimals[c.key]) : String(v);
      const text = v === null || v === undefined ? "-" : change && v > 0 ? "+" + shown : shown;
      if (change && v) td.classList.add(v > 0 ? "grow" : "shrink");
      if (c.keep_end) {  // (a cgroup path: cut, its last part shows, which tells it from its parent)
        td.classList.add("keep-end");
        td.append(el("bdi", {text: text}));
      } else {
        td.textContent = text;
      }
      td.title = text;
    }
    tr.append(td);
  }
  return tr;
}

function selectRow(r, tr) {
  for (const old of document.querySelectorAll("#table tr.selected")) old.classList.remove("selected");
  tr.classList.add("selected");
  const t = state.table;
  if (t === "mapping") { showMapping(state.data.maps.names.indexOf(r.map), r); revealSharing(); return; }
  if (t === "system") { selectArea(r); return; }
  if (t === "process") {
    const n = state.index.get("process:" + r.pid);  // (a gone one has no box: nothing to zoom to)
    if (n && total(n) > 0) zoomTo(n); else showProcess(r);
    revealSharing();
    return;
  }
  if (state.grouping !== t) setGrouping(t);
  const n = state.index.get(t + ":" + r[t === "program" ? "name" : t]);
  if (n) zoomTo(n);
}

// ------------------------------------------------------------------ who shares what

/* What a selected process or mapping is shows in the sharing panel: below the tables on a
   screen under 1500 px, where a click on a row seemed to do nothing, it is scrolled to. */
function revealSharing() {
  const panel = document.getElementById("sharing"), box = panel.getBoundingClientRect();
  if (box.top >= window.innerHeight - 40) panel.scrollIntoView({block: "nearest"});
}

function shareTable(headers, rows) {
  const head = el("tr");
  headers.forEach((h, i) => head.append(el("th", {class: i ? "num" : null, text: h})));
  const body = el("tbody");
  for (const cells of rows) {
    const tr = el("tr", {tabindex: "0", onkeydown: pressed, onclick: cells.onclick});
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
  if (shared && shared.own) {  // ([heap], [stack], <anonymous>: a name each process has for memory of its own)
    parts.push(el("p", {class: "note own", text: `Each process has its own ${name}: the processes below have one each, ` +
                        "other memory, not one object they share (forked processes share copy-on-write pages of theirs: there USS is below RSS)."}));
  }
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
  const parts = [el("h3", {text: `${r.pid} ${r.command}`})];
  if (r.status === "gone") {  // (a comparison's process only in OLD: its figures are OLD's, its mappings unread)
    parts.push(el("p", {class: "note"}, isolated(r.user), ` · gone: only in OLD, where it had PSS ${human(r.old_pss)} · USS ${human(r.old_uss)} · RSS ${human(r.old_rss)}`));
    share.replaceChildren(...parts);
    return;
  }
  parts.push(el("p", {class: "note"}, isolated(r.user), ` · PSS ${human(r.pss)} · USS ${human(r.uss)} · RSS ${human(r.rss)} · ` +
                      (rows.length ? `its ${rows.length} largest mappings, and how many other processes map each (select one to see them)`
                                   : data.meta.rollup ? "this frame kept smaps_rollup only: its mappings were not recorded"
                                   : "no mapping of it was read")));
  // (what a user asks of a process: what quitting it gives back)
  parts.push(el("p", {class: "note hint", text: "USS is what quitting it would free; its shared pages stay while another " +
                      "process maps them (a forked family, or a file in tmpfs, frees them only all together)."}));
  if (!rows.length) { share.replaceChildren(...parts); return; }
  const table = rows.map((m) => {
    const shared = data.sharers.mappings[String(m[1])];
    const others = shared ? shared.rows.length - 1 + (shared.more ? shared.more[0] : 0) : 0;
    // (each process's own [heap] or [stack]: others of that name share nothing with it)
    const cells = [maps.names[m[1]], human(m[f.indexOf("pss")]), human(m[f.indexOf("rss")]), shared && shared.own ? "own" : String(others)];
    cells.onclick = () => showMapping(m[1]);
    return cells;
  });
  parts.push(shareTable(["mapping", "PSS", "RSS", "others mapping it"], table));
  share.replaceChildren(...parts);
}

/* The header bar's colour of each area (by name) of a page's data: the over-time chart's
   stacked areas take the same. */
function segmentColors(data) {
  const colors = new Map();
  if (!data.system) return colors;
  data.system.rows.filter((r) => r.used !== null && r.status !== "gone").forEach((row) => {
    colors.set(row.area, areaColor(row.area));
  });
  return colors;
}
