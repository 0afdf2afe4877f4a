"""A recording's page over time: a small summary of every frame, full documents of a few.

The page of a recording (``smem html -S DIR``) shows its last frame as any page, and beside it
the largest processes' PSS and the breakdown's areas at every frame (line and stacked area
charts) and a slider over the frames whose whole documents are embedded: the last, and, within
a size budget, up to FULL_FRAMES spread over the recording.  A frame that kept smaps_rollup only
(``smem record --smaps-every``) is a stop showing its own figures (each process's, its groups',
the breakdown's: data.ROLLUP_TABLES) and no mappings, which only its key frame has.  The largest
processes are chosen over the whole recording (by their largest PSS in any frame), so one that
grew late is among them; beside them, the processes that grew the most (a leak in a small
process is what a recording is for, and the largest processes of a busy machine hide it).
"""

import json
import re

from ..sources.recorded import without_frame
from .data import page_documents

__all__ = ["timeline_documents", "FULL_FRAMES", "FULL_BUDGET", "TOP_PROCESSES", "TOP_GROWERS", "chosen_processes"]

#: the frames with whole documents (the slider's stops), at most: every frame of a short
#: recording; FULL_BUDGET bounds the page of a large machine (docs/benchmarks.md)
FULL_FRAMES = 48
#: the whole documents of the frames before the last, at most this many bytes of JSON: a
#: 1,500-process recording's page stays under bench/page.py's 8 MiB, as a capture's does
FULL_BUDGET = 3 << 20
#: processes drawn as lines: the largest, and the most grown of the others
TOP_PROCESSES = 10
TOP_GROWERS = 5


def _spread(count, wanted):
    """Indexes of ``wanted`` frames spread over ``count``, the last always among them."""
    if count <= wanted:
        return list(range(count))
    step = (count - 1) / (wanted - 1)
    return sorted({round(i * step) for i in range(wanted)} | {count - 1})


def _coarse_to_fine(stops):
    """``stops`` (sorted) in the order they are read: the last, the first, then the middle of each
    span left, halving: whichever of them the budget keeps are spread over the recording."""
    order = [stops[-1]] + stops[:1] * (len(stops) > 1)
    spans = [(0, len(stops) - 1)]
    while spans:
        halves = []
        for low, high in spans:
            if high - low >= 2:
                middle = (low + high) // 2
                order.append(stops[middle])
                halves += [(low, middle), (middle, high)]
        spans = halves
    return order


def _frame_summaries(request, entries, damaged):
    """(entry, process JSON, breakdown JSON) of each frame of ``entries`` that can be read: the
    processes' PSS as plain ``smem`` reads it (smaps_rollup, so a frame without smaps still has
    each process's own figure); the error of each that cannot is added to ``damaged`` (one
    damaged frame costs only itself, docs/capture-format.md)."""
    from ..app import plan, read_snapshot
    from ..errors import CaptureError
    from ..formats import Rendering, render
    from ..options import ReportRequest, SystemOptions, TableOptions
    from ..report import make_table
    system = SystemOptions()
    processes = TableOptions(columns=("pid", "name", "command", "pss"), totals=False, format="json")
    areas = TableOptions(columns=("area", "used"), totals=False, format="json")
    request = ReportRequest(query=request.query._replace(view="process", old_source=None),
                            table=processes, system=system)
    # two readings of each frame: the breakdown reads every mapping, the processes' PSS must not
    breakdown_request = request._replace(query=request.query._replace(view="breakdown"), table=areas)
    process_plan, breakdown_plan = plan(request), plan(breakdown_request)
    for entry in entries:
        try:
            snapshot, _ = read_snapshot(request, process_plan, at=str(entry.number))
            whole, _ = read_snapshot(breakdown_request, breakdown_plan, at=str(entry.number))
        except CaptureError as e:
            damaged.append(e)
            continue
        yield (entry, render(Rendering(make_table([snapshot], process_plan.view, processes, system), processes, snapshot)),
               render(Rendering(make_table([whole], breakdown_plan.view, areas, breakdown_request.system), areas, whole)))


def _frame_read(documents):
    """The number of the frame a page's tables were read from: a frame without every smaps whose
    rollups lack the PSS split, which the breakdown needs, is read from the key frame before it
    (sources.recorded: "frame 1 (the key frame for frame 3)")."""
    description = json.loads(documents["process"])["source"].get("description") or ""
    found = re.search(r"frame (\d+)(?: \(the key frame for frame \d+\))?, [^,]*$", description)
    return int(found.group(1)) if found else None


def chosen_processes(pss):
    """The pids drawn as lines, of ``pss`` (per frame, pid -> PSS): the TOP_PROCESSES with the
    largest PSS in any frame, then the TOP_GROWERS others whose PSS grew the most from the first
    frame each is in to the last (only those that grew)."""
    peak, first, last = {}, {}, {}
    for frame in pss:
        for pid, value in frame.items():
            peak[pid] = max(peak.get(pid, 0), value)
            first.setdefault(pid, value)
            last[pid] = value
    top = sorted(peak, key=lambda pid: (-peak[pid], pid))[:TOP_PROCESSES]
    growth = {pid: last[pid] - first[pid] for pid in peak if pid not in top and last[pid] > first[pid]}
    return top + sorted(growth, key=lambda pid: (-growth[pid], pid))[:TOP_GROWERS]


def timeline_documents(request, entries):
    """(documents, meta, warnings) of the last frame of ``entries`` (the recording's FrameEntry
    list), its documents with one more, ``timeline``: per frame its time, whether it kept every
    smaps and whether it has whole documents; the top processes' PSS and the areas' used KiB per
    frame; and the whole documents (``data.json``'s shape) of the frames the slider stops at, by
    index, null for the last (the page's own documents)."""
    from .html import data_json
    frames, pss, areas, warnings, damaged, read = [], [], [], [], [], []
    names, area_names = {}, []
    for entry, process_doc, system_doc in _frame_summaries(request, entries, damaged):
        read.append(entry)
        rows = json.loads(process_doc)["rows"]
        pss.append({row["pid"]: row["pss"] for row in rows if row.get("pss") is not None})
        for row in rows:
            names[row["pid"]] = (row.get("name"), row.get("command"))
        used = {}
        for row in json.loads(system_doc)["rows"]:
            if row["area"] not in area_names:
                area_names.append(row["area"])
            used[row["area"]] = row.get("used")
        areas.append(used)
        frames.append({"time": entry.time, "number": entry.number, "smaps": entry.smaps})
    if damaged:  # (the page is of the frames that could be read)
        more = len(damaged) - 1
        warnings.append(f"{damaged[0]}" + (f" (and {more} more frame{'s' * (more > 1)})" if more else "")
                        + ": left out of the page")
    if not read:
        raise damaged[0]
    entries = read
    numbers = {entry.number: i for i, entry in enumerate(entries)}
    # each stop is the frame it names, read as it was kept: a frame without smaps has its processes'
    # own figures (ROLLUP_TABLES), not its key frame's.  The last is the page's own data (null
    # among the instants); the others fill the budget, coarse to fine, so the kept ones are spread
    # (smallest: per kind of frame, with smaps or without, the smallest instant read: a frame of a
    # kind none of which fits what is left is not read)
    kept, budget, smallest, last, unsplit = {}, FULL_BUDGET, {}, None, False
    for index in _coarse_to_fine(_spread(len(entries), FULL_FRAMES)):
        entry = entries[index]
        if (last is not None and smallest.get(entry.smaps, 0) > budget) or (unsplit and not entry.smaps):
            continue
        documents, meta, said = page_documents(request, at=str(entry.number), rollup=not entry.smaps)
        read_from = _frame_read(documents)
        if read_from != entry.number and read_from in numbers:
            # its rollups have no PSS split (before Linux 5.9): the tables are its key frame's, and
            # the stop is that key frame (with its mappings); so are the other frames' of this kernel
            index, unsplit = numbers[read_from], True
            if index in kept:
                continue
            documents, meta, said = page_documents(request, at=str(read_from))
        warnings.extend(w for w in said if without_frame(w) not in map(without_frame, warnings))
        if last is None:
            last, kept[index] = (documents, meta), "null"
            continue
        # (without the documents' indentation, a third of their text: more stops in the budget)
        text = json.dumps(json.loads(data_json(documents, meta)), separators=(",", ":"))
        smallest[entry.smaps] = min(smallest.get(entry.smaps, len(text)), len(text))
        if len(text) <= budget:
            kept[index] = text
            budget -= len(text)
    top = chosen_processes(pss)
    summary = {
        "frames": [dict(f, full=i in kept) for i, f in enumerate(frames)],
        "processes": [{"pid": pid, "name": names[pid][0], "command": names[pid][1],
                       "pss": [frame.get(pid) for frame in pss]} for pid in top],
        # an area with no used KiB in any frame (one not in the sum, as KSM's saving, or a pool
        # this machine has none of) is no layer: it only lengthened the legend
        "areas": [{"area": name, "used": used} for name in area_names
                  for used in [[frame.get(name) for frame in areas]] if any(v for v in used)],
    }
    text = ('{"summary":' + json.dumps(summary, separators=(",", ":")) + ',"instants":{'
            + ",".join(f'"{index}":{body}' for index, body in sorted(kept.items())) + "}}")
    documents, meta = last
    documents = dict(documents, timeline=text)
    return documents, meta, warnings
