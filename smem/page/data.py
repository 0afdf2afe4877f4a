"""The page's data: the ``-F json`` documents of its views, read once, and what the picture reads.

One reading of the source (two for ``--compare``) makes every table the page shows, through
the app's own steps (``plan`` with companions, ``read_snapshot``, ``make_table``) and the JSON
format's own renderer: each document is the text ``smem -F json`` prints for the same view and
columns (:data:`TABLES` says which command), so a program can read a page back and a test can
compare them.  Beside them, :mod:`smem.page.mappings` gives each process's largest mappings and
each shared mapping's largest mappers, which no text view prints per process.
"""

import time
from typing import NamedTuple

from ..app import pids_not_found, plan, read_snapshot
from ..compared_sides import same_frame
from ..formats import Rendering, render
from ..loading.gathered import collector_paused
from ..options import Query, ReportRequest, SystemOptions, TableOptions
from ..report import make_table
from ..views import VIEWS
from ..views.breakdown import BELOW_ZERO_WHY
from .mappings import PageFold

__all__ = ["PageRequest", "TABLES", "ROLLUP_TABLES", "page_documents", "page_command"]

_AMOUNTS = ("swap", "uss", "pss", "rss", "swappss")

#: beside the memory: how much of a core each ran (the cpu column), its GPU memory and its share of
#: dma-bufs (DRM fdinfo: smem.device_memory); shown only where some row has a figure (data.OPTIONAL)
_SOURCES = ("cpu", "gpu", "dmabuf")

def _now(column):
    """Whether a column says how things are now, not a running total since a start (a cgroup's
    stall seconds since it was made, which the page has no use for beside the averages)."""
    return column.metric is None or column.metric.type != "counter"


#: the cgroup table's memory pressure columns (some10 ... full300), which the header's pressure box
#: shows too (pressure.js: the page's meta names them)
PRESSURE_COLUMNS = tuple(k for k, c in VIEWS["cgroup"].columns.items() if "pressure" in c.needs and _now(c))

#: the tables of the page: name -> (view, columns, the smem options that print the same document).
#: The page reads every mapping (it shows them), so its figures are the sums of smaps, as a report
#: with a column that reads mappings (maps, vss) prints them, not smaps_rollup's (read apart)
TABLES = {
    "process": ("process", ("pid", "user", "name", "command", "cgroup", "maps") + _AMOUNTS + _SOURCES, ""),
    "user": ("user", ("user", "count") + _AMOUNTS + ("vss",) + _SOURCES, "-u"),
    "program": ("program", ("name", "count") + _AMOUNTS + ("vss",) + _SOURCES, "-g"),
    "cgroup": ("cgroup", ("cgroup", "count") + _AMOUNTS + ("vss",) + _SOURCES + PRESSURE_COLUMNS, "--cgroup"),
    "mapping": ("mapping", ("map", "count", "pids") + _AMOUNTS, "-m"),
    "system": ("breakdown", ("area", "used", "cache", "noncache", "saved", "source"), "-w --breakdown"),
}

#: the tables of a recording's frame that kept smaps_rollup only (smem record --smaps-every): each
#: process's own figures and the kernel's split of its PSS (Pss_Anon, Pss_File, Pss_Shmem), read
#: from that frame; nothing that reads mappings (maps, vss, the mapping table), which only its key
#: frame has: asked for, every figure would be the key frame's (sources.recorded.open_recording)
ROLLUP_TABLES = {
    "process": ("process", ("pid", "user", "name", "command", "cgroup") + _AMOUNTS
                + ("pss_anon", "pss_file", "pss_shmem") + _SOURCES, ""),
    **{name: (view, tuple(c for c in columns if c != "vss"), flags)
       for name, (view, columns, flags) in TABLES.items() if name in ("user", "program", "cgroup")},
    "system": TABLES["system"],
}


def _optional():
    """The columns a table shows only where its reading has a figure of them: a machine without a
    GPU, a capture without the clock or a kernel without cgroup PSI had a column of "-" (absent is
    not zero).  What needs the clock, DRM fdinfo or PSI, as the registry says."""
    kinds = {"uptime", "devices", "pressure"}
    return frozenset(k for view in ("process", "user", "program", "cgroup")
                     for k, c in VIEWS[view].columns.items() if c.needs & kinds)


#: column keys dropped from a table (and from its command) where no row has a figure of them
OPTIONAL = _optional()


class PageRequest(NamedTuple):
    """What ``smem html`` (and ``smem serve``'s page) was asked for."""

    query: Query                       # source, --compare's OLD as old_source, the selection
    top_mappings: int = 12             # per process, the largest mappings shown; the rest one box per kind
    top_sharers: int = 50              # per shared mapping, the largest mappers listed; the rest one line


def _table_options(name, compared, tables=TABLES):
    view, columns, _ = tables[name]
    if compared:
        # the amounts, in OLD, in NEW and their change; no CPU, GPU nor pressure beside them
        columns = tuple(k for k in columns if k not in OPTIONAL)
        # PSS first: the table is sorted by its change, which 15 columns of old, new and change
        # of each amount had put out of view
        keep = (("used", "cache", "noncache") if name == "system"
                else tuple(sorted((k for k in columns if k in _AMOUNTS + ("vss",)), key=lambda k: k != "pss")))
        figures = [i for i, k in enumerate(columns) if k in _AMOUNTS + ("vss", "used", "cache", "noncache", "saved")]
        # the columns after the figures (the system table's Source) stay after them, as in smem diff
        identity, after = columns[:figures[0]], columns[figures[-1] + 1:]
        # a count (a group's processes, a process's mappings) with its change beside it, as smem diff's dcount
        counted = VIEWS[view].columns
        identity = tuple(w for k in identity for w in ((k, f"d{k}") if counted[k].compared else (k,)))
        columns = identity + ("status",) + tuple(f"{side}{key}" for key in keep for side in ("old_", "", "d")) + after
    # a comparison sorts by the change; the areas keep their order, which the bar shows
    sort = "order" if compared and name == "system" else None
    return TableOptions(columns=columns, totals=True, format="json", sort=sort)


def _views(compared, tables=TABLES):
    """(name, View) of each table; compared, each one's diff view."""
    from ..views.diff import diff_view
    for name, (view_name, _, _) in tables.items():
        view = VIEWS[view_name]
        yield name, diff_view(view) if compared else view


def page_command(name, request, at=None, tables=TABLES, columns=None):
    """The smem command that prints the ``name`` table's document of ``request`` (at frame ``at``
    of a recording, or the query's --at; ``tables``: ROLLUP_TABLES at a frame without smaps;
    ``columns``: those the page shows, where it left out some of the table's)."""
    query = request.query
    at = query.at if at is None else at
    _, all_columns, flags = tables[name]
    columns = all_columns if columns is None else columns
    words = ["smem"]
    if query.old_source is not None:
        words += ["diff", _quoted(query.old_source), _quoted(query.source or "live")]
        columns = _table_options(name, True).columns
    elif query.source is not None:
        words += ["-S", _quoted(query.source)]
        if at is not None:
            words += ["--at", _quoted(str(at))]
    words += [flags] if flags else []
    for option, value in (("-P", query.process_filter), ("-U", query.user_filter), ("-M", query.map_filter)):
        if value is not None:
            words += [option, _quoted(value)]
    if query.pids:
        words += ["--pid", ",".join(map(str, query.pids))]
    if query.max_rss_kib is not None:
        words += ["--max-rss", f"{query.max_rss_kib}K"]
    if query.old_source is not None and name == "system":
        words += ["-s", "order"]
    words += ["-t", "-F", "json", "-c", _quoted(" ".join(columns))]
    return " ".join(words)


def _quoted(word):
    import shlex
    return shlex.quote(word)


def page_documents(request, at=None, rollup=False, pids_found=False):
    """(documents, meta, warnings): name -> the JSON text of each table, ``maps`` and ``sharers``
    (the largest mappings of each process and mappers of each shared mapping, as JSON); ``meta``
    a dict of what the page says of the reading (of frame ``at`` of a recording, if given).
    ``rollup``: frame ``at`` kept smaps_rollup only, so its tables are ROLLUP_TABLES and it has
    no mapping (its maps and sharers are empty; meta["rollup"] says so). ``pids_found``: --pid's
    processes not in the reading are said as the report says them (a warning, or an error where
    none is), for smem html's one reading (not a recording's frames, nor smem serve's page, whose
    processes come and go).

    The cyclic garbage collector is paused throughout, as the loader pauses it: the tables and
    documents are tens of thousands of small lists and dicts, none in a cycle, made while the
    reading's own objects are held, and each full collection went over all of them."""
    with collector_paused():
        return _page_documents(request, at, ROLLUP_TABLES if rollup else TABLES, pids_found)


#: what says where a recording's change over time is, when --compare names the page's own frame
PAGE_FRAMES_HINT = "the page of a recording alone, smem html -S REC, draws it over time"


def _page_documents(request, at, tables, pids_found=False):
    import json
    query = request.query
    compared = query.old_source is not None
    system = SystemOptions()
    views = dict(_views(compared, tables))
    base = ReportRequest(query=query._replace(view="process", old_source=None),
                         table=_table_options("process", False, tables), system=system)
    companions = [(tables[n][0], _table_options(n, False, tables)) for n in tables if n != "process"]
    the_plan = plan(base, companions)
    # each process's mappings are folded as it is read (in the worker that read it) and let go
    top, top_sharers = request.top_mappings, request.top_sharers
    view = the_plan.view
    the_plan = the_plan._replace(view=view._replace(reads=view.reads._replace(
        fold=lambda needs: PageFold(top, top_sharers))))
    snapshots, warnings = [], []
    started = time.time()
    for spec in ([query.old_source] if compared else []) + [None]:
        snapshot, said = read_snapshot(base, the_plan, spec, None if spec else at)
        snapshots.append(snapshot)
        warnings.extend(w for w in said if w not in warnings)
    new, old = snapshots[-1], snapshots[0] if compared else None
    if pids_found and query.pids is not None:  # (compared, as smem diff: on either side)
        warnings.extend(pids_not_found(query, new, *([old] if compared else [])))
    if compared:
        warnings.extend(w for w in same_frame(old, new, PAGE_FRAMES_HINT) if w not in warnings)
    documents, process_areas, shown = {}, [], {}
    for name, view in views.items():
        options = _table_options(name, compared, tables)
        table = _without_absent(make_table(snapshots, view, options, system))
        shown[name] = tuple(c.key for c in table.columns)
        documents[name] = render(Rendering(table, options, new, old_snapshot=old))
        if name == "system":
            process_areas = [_current(row).area for row in table.rows if _current(row).of_processes]
    maps, sharers = new.folded.largest()
    documents["maps"] = json.dumps(maps, separators=(",", ":"))
    documents["sharers"] = json.dumps(sharers, separators=(",", ":"))
    ram = new.sizing[0] if new.sizing and new.sizing[0] is not None else None
    meta = {
        "memtotal": new.mem_total, "swaptotal": new.swap_total, "compared": compared,
        "pss_missing": any(s.pss_missing for s in snapshots),
        "installed": {"kib": ram.kib, "source": ram.source, "estimate": ram.estimate} if ram else None,
        "selected": bool(query.process_filter or query.user_filter or query.pids or query.map_filter),
        "process_areas": process_areas, "top_mappings": request.top_mappings,
        "top_sharers": request.top_sharers, "read_at": started, "pressure_columns": PRESSURE_COLUMNS,
        "below_zero_why": BELOW_ZERO_WHY,
        "commands": {name: page_command(name, request, at, tables, None if compared else shown[name])
                     for name in tables},
        "rollup": tables is ROLLUP_TABLES,
        # what smem said on stderr as it read (processes it could not read, a capture taken without
        # root, ...): the page is kept and shared, and its figures need them
        "warnings": warnings,
    }
    return documents, meta, warnings


def _without_absent(table):
    """``table`` without its OPTIONAL columns of no figure in any row: what ``smem -F json -c``
    prints of the columns left."""
    keep = [i for i, c in enumerate(table.columns)
            if c.key not in OPTIONAL or any(values[i] is not None for values in table.values)]
    if len(keep) == len(table.columns):
        return table
    return table._replace(columns=[table.columns[i] for i in keep],
                          values=[[values[i] for i in keep] for values in table.values],
                          totals=None if table.totals is None else [table.totals[i] for i in keep])


def _current(row):
    """A table row, or in a comparison the side shown (NEW's, or OLD's for a row that is gone)."""
    return getattr(row, "current", row)
