/* smem html: the hierarchy as nodes, from the embedded documents: MemTotal, its areas, groups,
   programs, processes, kinds and mappings; children made as they are first shown. */
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
    n.children = data.meta.rollup ? () => pageKindNodes(r) : () => mappingNodes(data, r.pid);
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
    const name = row[1] < 0 ? `other ${KIND_NAMES[kind]} (${row[2]})` : maps.names[row[1]];
    // a file's box is labelled by its file name, which a small box can show; its hover gives the path
    const leaf = node(fileName(name), row[1] < 0 ? "rest" : "mapping", v,
                      {name, mapping: row[1], count: row[2], key: row[1] < 0 ? null : "map:" + row[1]});
    (kinds[kind] = kinds[kind] || []).push(leaf);
  }
  return Object.entries(kinds).map(([kind, leaves]) => {
    const v = {};
    for (const leaf of leaves) addInto(v, leaf.v);
    const n = node(KIND_NAMES[kind], "kind", v, {part: kind});
    n.children = leaves;
    return n;
  });
}

/* A process of a frame that kept smaps_rollup only: no mappings, but in PSS the kernel's split of
   it by page type (Pss_Anon, Pss_File, Pss_Shmem, Linux 5.9+); in the other measures a leaf. */
function pageKindNodes(r) {
  if (state.measure !== "pss") return [];
  return Object.keys(PAGE_KIND_NAMES).filter((kind) => r["pss_" + kind] > 0)
    .map((kind) => node(PAGE_KIND_NAMES[kind], "kind", {pss: r["pss_" + kind]}, {part: kind}));
}

const fileName = (name) => (/^\/.*[^/]$/.test(name) ? name.slice(name.lastIndexOf("/") + 1) : name);

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
  system.rows.forEach((row) => {
    if (row.status === "gone" || row.used === null) return;
    if (meta.process_areas.includes(row.area)) { own += row.used; return; }
    if (row.used <= 0) return;
    const area = node(row.area, "area", {pss: row.used}, {row, key: "area:" + row.area, color: areaColor(row.area)});
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

/* The figure a node is named with (its text, the path, the hover): its size in the chart, but
   MemTotal's own for the root, whose boxes add up to more where an area is below zero (meminfo and
   the processes read at different moments): that area is no box. */
function figure(n) {
  return n.kind === "root" ? value(n) : total(n);
}

function forgetTotals(n) {  // children made: this node's and its ancestors' sizes are summed again
  for (let p = n; p; p = p.parent) p.totals = null;
}
