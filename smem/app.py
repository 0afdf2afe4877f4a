"""Running a report: a request in, a snapshot read, a table made, text or a chart out.

The CLI builds a frozen :class:`~smem.options.ReportRequest`; this module
decides what to read (from the view, its columns, the format and the chart)
and calls each layer once, in order: source, model, exact accounting and
sizing, table, format or chart.  Other front ends (a watch loop, a server)
call :func:`run_report` or its steps too.
"""

import dataclasses
import functools
import os
from typing import List, NamedTuple, Optional, Tuple

from .errors import SmemError
from .extras import require
from .formats import FORMATS, Rendering, render
from .loading import load_reading
from .loading.process import SLOW_READ_SECONDS
from .model import Derived, Snapshot
from .selection import Selection, own_invocation
from .options import LIVE, ReportRequest
from .report import CONTROLS, make_table, selected_columns, sort_column, summed_uss_note
from .sources import open_source
from .sources.base import OWN_PID
from .units import human
from .views import VIEWS, needs_of
from .views.columns import Sizing

__all__ = ["Result", "run_report", "plan", "Plan", "read_snapshot", "companion_tables", "load_warnings", "warning_kind", "named_processes", "pids_not_found", "SLOW_READ_SECONDS", "NO_SMAPS"]


class Result(NamedTuple):
    text: Optional[str]             # the report, or None when a chart was shown or saved
    warnings: List[str]
    notes: Tuple[str, ...] = ()     # what the report asked for and its format cannot hold (for standard error)
    chart: Optional[bytes] = None   # the chart's PNG, for standard output (-o -)


class Plan(NamedTuple):
    """What a request reads: its view, the tables read beside it from the same snapshot (a metrics
    scrape's companions: (View, TableOptions) pairs), and the Needs of all their columns."""

    view: object
    companions: tuple
    needs: object
    exact: bool


def report_view(request):
    """The view ``request``'s table is made of: its view as -w's options shape it, compared
    (smem diff: OLD given) or watched (watch mode), as smem.validate checked they may be."""
    view = VIEWS[request.query.view]
    if request.query.old_source is not None:
        from .views.diff import diff_view  # (a comparison only)
        view = diff_view(view)
    if request.watch is not None:
        from .views.diff import watch_view
        view = watch_view(view, request.watch.since)
    return view


def plan(request, companions=None):
    """What to read for ``request`` (its options valid together: smem.validate); unknown fields
    fail here, before any /proc is read.

    ``companions``: (view name or View, TableOptions) of more tables to make from the same snapshot
    (``smem serve``'s scrape, ``smem html``'s page); by default the view's ``metrics_companions`` when the format
    asks for them.
    """
    view = report_view(request)
    exact = request.query.exact or view.accounting.requires_exact
    table = request.table._replace(exact=exact)
    columns = selected_columns(view, table, request.chart) + [sort_column(view, table)]
    exact = exact or any("exact" in c.needs for c in columns)
    counters = set()
    if companions is not None:
        companions = tuple((VIEWS[name] if isinstance(name, str) else name, options._replace(exact=exact))
                           for name, options in companions)
    elif FORMATS[table.format].wants_companions:
        companions = tuple((VIEWS[name], _companion_options(view, VIEWS[name], table))
                           for name in view.metrics.companions)
    else:
        companions = ()
    also = set()
    if companions or FORMATS[table.format].wants_companions:  # labelled samples (a scrape, OpenMetrics)
        also |= view.reads.identity
    for companion, options in companions:
        also |= companion.reads.needs | companion.reads.identity
        for column in selected_columns(companion, options) + [sort_column(companion, options)]:
            counters |= column.counters
            also |= column.needs
    if request.chart is not None:  # a pie sorted by a column that is not an amount shows the view's measure
        counters |= {c for key in (view.charting.measure, view.charting.measure_without_pss)
                     for c in view.columns[key].counters}
    if exact:
        require("numpy", "--exact")
        from .exact import COUNTERS_READ  # numpy: only here
        counters |= COUNTERS_READ
    # --exact reads each process's frames whole (smem.exact), not through its smaps' mappings (but -M's)
    needs = needs_of(view, columns, counters=counters, max_rss_kib=request.query.max_rss_kib,
                     also=also)
    return Plan(view, companions, needs, exact)


def _companion_options(view, companion, options):
    """The options of a companion table: the columns it shares with the view's, its own sort."""
    keys = tuple(k for k in (options.columns or view.default_columns) if k in companion.columns)
    return options._replace(columns=keys or None, sort=None)


def read_snapshot(request, the_plan, spec=None, at=None, load=load_reading, at_option=None):
    """(Snapshot, warnings): the source ``spec`` (the query's by default, and its frame ``at`` of a
    recording, given by ``at_option``: by default --at, smem diff's --to) read as ``the_plan`` says,
    sized and accounted as asked.  ``load``: what reads the processes, load_reading's signature
    (smem.incremental's Refresher.load re-reads only the processes that changed)."""
    view, needs, exact = the_plan.view, the_plan.needs, the_plan.exact
    query = request.query
    if spec is None:
        spec, at = query.source, query.at if at is None else at
    if at_option is None:
        at_option = "--at" if query.old_source is None else "--to"
    selection = Selection(query.process_filter, query.user_filter, query.map_filter, query.pids)
    # the sharing report reads everyone: the holders are outside the selection
    load_selection = Selection(None, None, query.map_filter) if view.accounting.requires_exact else selection
    warnings = []
    # -M reads every mapping (load_reading); otherwise an archive may drop what smaps_rollup serves
    # (and a PSS split column may need them: a rollup from before Linux 5.9 lacks the split; the
    # dma-bufs a process maps are found in a capture's smaps); a recording's frame without smaps
    # serves the split where its rollups carry it
    # an archive is streamed (each process as it is read, none held) unless the frames of --exact
    # are to be read from it afterwards
    every_mapping = needs.mappings or query.map_filter is not None
    source = open_source(None if spec == LIVE else spec, per_mapping=every_mapping or needs.split or needs.devices,
                         every_mapping=every_mapping, streamed=not exact, timeout=query.timeout, at=at,
                         at_option=at_option, said=query.said)
    warnings.extend(source.notes)
    fold = view.reads.fold(needs) if view.reads.fold is not None and not exact else None
    working_set = None
    if query.wss_seconds is not None and spec is None:
        working_set = _measure_working_set(source, load_selection, query.wss_seconds, warnings)
    frames = None
    try:
        # --exact reads each whole process's frames where the loader reads it (one pass, not two)
        if exact and load is load_reading and view.reads.processes and not every_mapping:
            from .exact import frames_pass  # numpy: only here
            frames = frames_pass(source)
        reading = load(source, load_selection, with_processes=view.reads.processes, needs=needs,
                       jobs=query.jobs, fold=fold, **({"beside": frames} if frames is not None else {}))
        if load_selection is not selection:  # (the sharing view reads everyone, and selects among them)
            reading = dataclasses.replace(reading, selected=selection.selects)
        sizing = accounting = shared = sharing = None
        views = (view, *(c for c, _ in the_plan.companions))
        if any(_sized(v, request.system) for v in views):
            sizing = _size(reading, reading.source, request.system, warnings, request.table.abbreviate)
        if exact:
            accounting, sharing = _account_exactly(reading, view, selection, warnings, query.jobs, frames)
        if view.reads.shared_memory:
            shared = _attribute_shared_memory(reading, reading.source, warnings)
        if view.reads.processes:
            warnings.extend(_estimated(reading.source, exact))
            hidden = source.hidden()
            if hidden is not None:  # (those are not unreadable: nothing else would say they are left out)
                warnings.append(f"{hidden} and left out; run as root to see them")
            if source.machine().pid_namespace and any(v.reads.sizing is not Sizing.NEVER for v in views):
                warnings.append(f"{source.description}: its /proc lists only the processes of one PID namespace "
                                "(a container's), not the machine's: the memory of the others is counted outside the "
                                "process rows; run smem on the host to see it by process")
        source.machine()  # (its facts kept: a directory's capture-info cannot be read once it is closed)
    finally:
        source.close()
    snapshot = Snapshot(reading, Derived(sizing, accounting, shared, sharing, working_set))
    return snapshot, load_warnings(snapshot) + warnings


def _estimated(source, exact):
    """The notes where the kernel's figures are estimates (built without per-page map counts)."""
    text = source.kernel_config()
    if text is None or not _no_page_mapcount(text):
        return []
    notes = ["the kernel keeps no per-page map counts (CONFIG_NO_PAGE_MAPCOUNT, Linux 6.15+): smaps' PSS and "
             "USS of large folios mapped in part are averages over the folio, estimates"]
    if exact:
        notes.append("--exact: group USS is approximate on this kernel: kpagecount gives each page of a large "
                     "folio the folio's average map count (CONFIG_NO_PAGE_MAPCOUNT)")
    return notes


@functools.lru_cache(maxsize=2)
def _no_page_mapcount(text):
    """no_page_mapcount of the config ``text``: parsed once, not at every scrape of smem serve."""
    from .parsers.kernel_config import no_page_mapcount
    return no_page_mapcount(text)


def _measure_working_set(source, selection, seconds, warnings):
    """--wss: the selected processes' working set over ``seconds`` (a WorkingSet); its notes
    are added to ``warnings``."""
    from .loading import selected_pids
    from .working_set import measure
    working_set, notes = measure(source, selected_pids(source, selection), seconds)
    warnings.extend(notes)
    return working_set


def run_report(request: ReportRequest) -> Result:
    """Read the source (and, for a comparison, the old one first), build the table and render it
    (or draw the chart)."""
    the_plan = plan(request)
    snapshots, warnings = [], []
    query = request.query
    for spec, at, option in ([(query.old_source, query.old_at, "--from")] if query.old_source is not None else []) \
            + [(None, None, None)]:
        snapshot, said = read_snapshot(request, the_plan, spec, at, at_option=option)
        snapshots.append(snapshot)
        warnings.extend(w for w in said if w not in warnings)
    if len(snapshots) > 1:
        from .compared_sides import backwards, one_key_frame, same_frame
        one_key_frame(*snapshots)
        warnings.extend(same_frame(*snapshots) + backwards(*snapshots))
    # (plain -w reads no process: validate refuses --pid, -P, -U and -M with it)
    if request.query.pids is not None and the_plan.view.reads.processes:  # (smem diff: on either side)
        warnings.extend(pids_not_found(request.query, *reversed(snapshots)))
    view = the_plan.view
    table_options = request.table._replace(exact=the_plan.exact)
    table = make_table(snapshots, view, table_options, request.system, request.chart)
    if request.chart is not None:
        from .charts import show_chart
        return Result(None, warnings, chart=show_chart(table, table_options, request.chart, snapshot))
    companions = companion_tables(the_plan, snapshot, request.system)
    old = snapshots[0] if len(snapshots) > 1 else None
    text = render(Rendering(table, table_options, snapshot, companions, old_snapshot=old))
    said = table.recommendation is not None and not FORMATS[table_options.format].carries_recommendation
    notes = (str(table.recommendation),) if said else ()
    hint = (summed_uss_note(table, the_plan.exact, query.source is not None)
            if FORMATS[table_options.format].for_people else None)
    return Result(text, warnings, notes + ((hint,) if hint is not None else ()))


def pids_not_found(query, snapshot, *others):
    """--pid's processes that are not in ``snapshot`` (nor in ``others``: a comparison's other side,
    where a pid on one side only is a change shown): a warning when some are, an error when none
    is, nor was left out by --max-rss (those not read are then said in the error: the warning that
    names them is not shown, and the report would be empty with status 0, as if they held nothing)."""
    snapshots = (snapshot, *others)
    shown = {p.pid for s in snapshots for p in s.processes} | {pid for s in snapshots for pid, _, _ in s.skipped}
    # (pid: (why it could not be read, whether on this machine: root may read it again then))
    unreadable = {pid: (reason, s.source.local) for s in reversed(snapshots)
                  for reason, processes in s.unreadable.items() for pid, _ in processes}
    asked = list(dict.fromkeys(query.pids))
    missing = [pid for pid in asked if pid not in shown and pid not in unreadable]
    message = (f"--pid {','.join(map(str, missing))}: not found{' on either side' if others else ''}, "
               f"or a kernel thread or zombie (which has no memory of its own)")
    if query.process_filter is not None or query.user_filter is not None:
        message += ", or left out by -P/-U"
    if any(pid in shown for pid in asked):
        return [message] if missing else []
    if any(s.no_smaps for s in snapshots):  # (not "not found": they are there, and nothing of them can be measured)
        raise SmemError(f"--pid {','.join(map(str, asked))}: {NO_SMAPS}")
    said = [message] if missing else []
    for reason in sorted({unreadable[pid][0] for pid in asked if pid in unreadable}):
        pids = [pid for pid in asked if pid in unreadable and unreadable[pid][0] == reason]
        local = any(unreadable[pid][1] for pid in pids)
        hint = ("; run as root to see " + ("it" if len(pids) == 1 else "them")
                if _denied(reason) and local and os.geteuid() != 0 else "")
        said.append(f"--pid {','.join(map(str, pids))}: could not be read ({reason.lower()}){hint}")
    raise SmemError("; ".join(said))


def companion_tables(the_plan, snapshot, system, earlier=None):
    """The tables of the plan's companions, from ``snapshot`` (and, for views whose rows take
    rates over an interval, the ``earlier`` snapshot too where there is one)."""
    return tuple(make_table(readings(view, snapshot, earlier), view, options, system)
                 for view, options in the_plan.companions)


def readings(view, snapshot, earlier=None):
    """The snapshots a table of ``view`` is made of: ``snapshot``, after ``earlier`` where the
    view's rows have rates over an interval (cpu)."""
    return [earlier, snapshot] if earlier is not None and view.comparison.interval_rows else [snapshot]


def _sized(view, system):
    """Whether ``view`` is shown sized: always (-w), or where -R, -K or --recommend asks
    (--breakdown: a device needs its firmware's and kernel image's RAM too)."""
    sizing = view.reads.sizing
    asked = system.realmem_bytes is not None or system.kernel_path is not None or system.recommend is not None
    return sizing is Sizing.ALWAYS or (sizing is Sizing.ASKED and asked)


def _size(reading, source, system, warnings, abbreviate=False):
    """The sizing figures of -w; what they doubt added to ``warnings`` (amounts as -k has them)."""
    from .sizing import size_system  # ELF and decompressors: only for -w
    from .sizing_warnings import sizing_warnings
    sizing = size_system(source, reading.mem_total, system.realmem_bytes, system.kernel_path)
    warnings.extend(sizing_warnings(source, sizing, system, reading.mem_total, abbreviate))
    return sizing


def _attribute_shared_memory(reading, source, warnings):
    """The shared-memory objects of the reading; the line saying which inputs it lacked added to ``warnings``."""
    from .shared_memory import shared_memory
    found = shared_memory(source, reading.processes, reading.meminfo.kib)
    if found.missing:
        warnings.append(
            f"{source.description} has no {' and no '.join(found.missing)} (made before smem captured them): "
            "only the SysV segments and memfds that processes map are shown, without their RAM and swap"
            if len(found.missing) == 2 else
            f"{source.description} has no {found.missing[0]}: "
            + ("SysV segments only as processes map them" if found.missing[0] == "sysvipc/shm"
               else "no tmpfs mounts or files, and memfds only as processes map them"))
    return found


def _account_exactly(reading, view, selection, warnings, jobs=None, frames=None):
    """(ExactAccounting, (selected pids, SharedWith) or None), or (None, None) where the frames
    cannot be read and the view can do without them (a warning says so).  ``frames``: those the
    loader read (smem.exact.frames_pass), or None."""
    from .exact import ExactUnavailable, SharedWith, account_snapshot, sharing_of_selection  # numpy: only here
    try:
        accounting = account_snapshot(reading, jobs, frames)
    except ExactUnavailable as e:
        if view.accounting.requires_exact:
            raise
        warnings.append(f"{e}; showing the smaps figures")
        return None, None
    if not view.accounting.requires_exact:
        return accounting, None
    own = own_invocation(reading.source, selection)
    selected, sharing = sharing_of_selection(reading, accounting, selection, exclude=own)
    if reading.source.has(OWN_PID):  # smem itself maps the same libraries: not an answer
        ours = own | {os.getpid()}
        sharing = SharedWith(sharing.shared_kib, {pid: kib for pid, kib in sharing.holders.items() if pid not in ours},
                             sharing.elsewhere_kib)
    return accounting, (selected, sharing)


def named_processes(processes):
    """``pid 1 (init), pid 7 (sshd) and 4 more``: (pid, name) pairs as warnings name them."""
    named = ", ".join(f"pid {pid}" + (f" ({name.translate(CONTROLS)})" if name else "") for pid, name in processes[:3])
    return named + (f" and {len(processes) - 3} more" if len(processes) > 3 else "")


def _denied(reason):
    """Whether a process could not be read for want of a right root has: EACCES (another user's
    smaps), or EPERM (every file of another user's process under a /proc mounted hidepid=noaccess)."""
    return "ermission" in reason or "not permitted" in reason


def warning_kind(message):
    """What makes a warning the same warning in a daemon's log (smem serve), which says it once while
    it lasts: for the processes that could not be read, the reason alone (their number and names
    change whenever another user's process starts or ends: the number is a gauge of its own)."""
    import re
    match = re.match(r"\d+ process(?:es)? (could not be read \([^)]*\))", message)
    return match.group(1) if match else message


#: what a reading of a kernel without smaps says (Reading.no_smaps)
NO_SMAPS = ("the kernel gives no /proc/PID/smaps (built without CONFIG_PROC_PAGE_MONITOR, or without an MMU): "
            "no process's memory can be measured")


def load_warnings(snapshot, slow_seconds=SLOW_READ_SECONDS):
    """The lines that say what the snapshot could not show: unreadable, skipped, slow processes."""
    warnings = []
    for reason, processes in sorted(snapshot.unreadable.items()):
        count = len(processes)
        hint = ("; run as root to see them"
                if _denied(reason) and snapshot.source.local and os.geteuid() != 0 else "")
        warnings.append(f"{count} process{'es' if count > 1 else ''} could not be read ({reason.lower()}): "
                        f"{named_processes(processes)}{hint}")
    machine = snapshot.source.machine()
    if machine.unreadable_processes:  # (its writer said so in capture-info: not root, or root refused)
        count = machine.unreadable_processes
        why = (f"its writer ran as root: the kernel refused {'them' if count > 1 else 'it'} even so"
               if machine.unreadable_by_root
               else "a writer not root reads only its own user's")
        warnings.append(f"{snapshot.source.description} left out {count} process{'es' * (count > 1)} its writer "
                        f"could not read ({why})")
    if machine.hidepid in ("invisible", "ptraceable"):  # (what a writer writes; a capture may say anything)
        warnings.append(f"{snapshot.source.description} was taken from a /proc mounted hidepid={machine.hidepid}, "
                        "without root: the processes it hid are not in it")
    if snapshot.no_smaps:
        warnings.append(f"{snapshot.source.description}: {NO_SMAPS}; smem -w shows the system's")
    if snapshot.pss_missing:
        warnings.append("the kernel does not report PSS (Linux < 2.6.25); PSS shows as '-'")
    if snapshot.skipped:
        count = len(snapshot.skipped)
        named = ", ".join(f"pid {pid} ({name.translate(CONTROLS)}, {human(rss)})"
                          for pid, name, rss in snapshot.skipped[:3])
        more = f" and {count - 3} more" if count > 3 else ""
        warnings.append(f"--max-rss left out {count} process{'es' if count > 1 else ''}: {named}{more}")
    slow = [p for p in snapshot.processes if p.read_seconds is not None and p.read_seconds > slow_seconds]
    if slow:
        p = max(slow, key=lambda p: p.read_seconds)
        warnings.append(f"reading pid {p.pid} ({(p.name or '?').translate(CONTROLS)}) took {p.read_seconds:.1f} s: "
                        "reading smaps stalls a process with much memory mapped; --max-rss SIZE skips such processes")
    return warnings
