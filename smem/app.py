"""Running a report: a request in, a snapshot read, a table made, text or a chart out.

The CLI builds a frozen :class:`~smem.options.ReportRequest`; this module
decides what to read (from the view, its columns, the format and the chart)
and calls each layer once, in order: source, model, exact accounting and
sizing, table, format or chart.  Other front ends (a watch loop, a server)
call :func:`run_report` or its steps too.
"""

import contextlib
import dataclasses
import os
from typing import List, NamedTuple, Optional

from .errors import SmemError, UsageError
from .compression import by_option
from .extras import require
from .formats import FORMATS, Rendering, render
from .loading import load_reading
from .loading.process import SLOW_READ_SECONDS
from .model import Derived, Snapshot
from .selection import Selection, own_invocation
from .options import ReportRequest
from .report import CONTROLS, make_table, selected_columns, sort_column
from .sources import open_source
from .sources.base import OWN_PID
from .units import human
from .views import VIEWS, needs_of

#: how smem diff names this machine now
LIVE = "live"

__all__ = ["Result", "run_report", "run_capture", "run_receive", "recording_readings", "plan", "Plan", "read_snapshot", "companion_tables", "load_warnings", "SLOW_READ_SECONDS"]


class Result(NamedTuple):
    text: Optional[str]             # the report, or None when a chart was shown or saved
    warnings: List[str]


class Plan(NamedTuple):
    """What a request reads: its view, the tables read beside it from the same snapshot (a metrics
    scrape's companions: (View, TableOptions) pairs), and the Needs of all their columns."""

    view: object
    companions: tuple
    needs: object
    exact: bool


def _check(request):
    query, view = request.query, VIEWS[request.query.view]
    if request.system.breakdown and view.shaped_by_system is None:
        raise UsageError("--breakdown accounts for all of MemTotal: use it with -w")
    view = view.shaped(request.system)
    if query.old_source is not None:
        _comparable(view, query, "smem diff")
        from .views.diff import diff_view  # (a comparison only)
        view = diff_view(view)
    if not view.takes_selection:
        given = [o for o, v in (("-P", query.process_filter), ("-U", query.user_filter), ("-M", query.map_filter),
                                ("--pid", query.pids)) if v]
        if given:
            raise UsageError(f"the {view.title} view attributes memory to every process: "
                             f"it takes no {' or '.join(given)}")
    if request.watch is not None:
        view = _watched(request, view)
    if view.requires_exact and not (query.process_filter or query.user_filter or query.pids):
        raise UsageError("--shared-with needs a selection: -P, -U or --pid")
    if query.wss_seconds is not None:
        from .working_set import check_working_set
        check_working_set(query, True)
        if "wss" not in view.columns:
            raise UsageError(f"--wss measures processes' working set: the {view.title} view has no wss column")
        if request.watch is not None:
            raise UsageError("--wss measures once: it does not combine with --interval")
    if request.system.recommend is not None and not view.needs_sizing:
        raise UsageError("--recommend sizes RAM for the whole system: use it with -w")
    return view


def _comparable(view, query, command):
    """A UsageError where ``view`` has no rows to match between two snapshots, naming why."""
    if query.exact or view.requires_exact:
        raise UsageError(f"{command} does not combine with --exact or --shared-with")
    if view.row_key is None:
        raise UsageError(f"{command} compares processes, users, programs, cgroups, mappings, the "
                         f"system or shared memory objects, not the {view.title} view")


def _watched(request, view):
    """The view of watch mode, or a UsageError where watching means nothing."""
    watch, query = request.watch, request.query
    if not watch.interval > 0 or watch.interval == float("inf"):
        raise UsageError(f"--interval takes a number of seconds above 0 (not {watch.interval:g})")
    if watch.replay is not None:
        from .sources.recorded import is_recording
        if query.source is None or not is_recording(query.source):
            raise UsageError("--speed and --all-frames play a recording back: use them with -S RECORDING")
        if query.at is not None:
            raise UsageError("--at chooses one frame: --speed and --all-frames play them all")
    elif query.source is not None or query.old_source is not None:
        raise UsageError("--interval watches this machine: a capture (-S) is one instant (a recording is "
                         "played back with --speed or --all-frames); on a remote host run smem --interval there")
    if request.chart is not None:
        raise UsageError("--interval redraws a report: it does not combine with --pie or --bar")
    _comparable(view, query, "--interval")
    if FORMATS[request.table.format].stream is None:
        raise UsageError(f"-F {request.table.format} is one document, not a stream: watch mode writes "
                         "json (JSON Lines), csv or a table")
    from .views.diff import watch_view
    return watch_view(view, watch.since)


def plan(request, companions=None):
    """What to read for ``request``; unknown fields fail here, before any /proc is read.

    ``companions``: (view name or View, TableOptions) of more tables to make from the same snapshot
    (``smem serve``'s scrape, ``smem html``'s page); by default the view's ``metrics_companions`` when the format
    asks for them.
    """
    view = _check(request)
    exact = request.query.exact or view.requires_exact
    table = request.table._replace(exact=exact)
    columns = selected_columns(view, table, request.chart) + [sort_column(view, table)]
    exact = exact or any("exact" in c.needs for c in columns)
    if exact and not view.process_groups and not view.requires_exact:
        raise UsageError("--exact accounts processes: use it with the process, -u, -g or --cgroup views")
    counters = set()
    if companions is not None:
        companions = tuple((VIEWS[name] if isinstance(name, str) else name, options._replace(exact=exact))
                           for name, options in companions)
    elif FORMATS[table.format].wants_companions:
        companions = tuple((VIEWS[name], _companion_options(view, VIEWS[name], table))
                           for name in view.metrics_companions)
    else:
        companions = ()
    also = set()
    if companions or FORMATS[table.format].wants_companions:  # labelled samples (a scrape, OpenMetrics)
        also |= view.identity_needs
    for companion, options in companions:
        also |= companion.needs | companion.identity_needs
        for column in selected_columns(companion, options) + [sort_column(companion, options)]:
            counters |= column.counters
            also |= column.needs
    if request.chart is not None:  # a pie sorted by a column that is not an amount shows the view's measure
        counters |= {c for key in (view.chart_measure, view.chart_measure_without_pss)
                     for c in view.columns[key].counters}
    if exact:
        require("numpy", "--exact")
        from .exact import COUNTERS_READ  # numpy: only here
        counters |= COUNTERS_READ
    needs = needs_of(view, columns, counters=counters, mappings=exact, max_rss_kib=request.query.max_rss_kib,
                     also=also)
    return Plan(view, companions, needs, exact)


def _companion_options(view, companion, options):
    """The options of a companion table: the columns it shares with the view's, its own sort."""
    keys = tuple(k for k in (options.columns or view.default_columns) if k in companion.columns)
    return options._replace(columns=keys or None, sort=None)


def read_snapshot(request, the_plan, spec=None, at=None, load=load_reading):
    """(Snapshot, warnings): the source ``spec`` (the query's by default, and its frame ``at`` of a
    recording) read as ``the_plan`` says, sized and accounted as asked.  ``load``: what reads the
    processes, load_reading's signature (smem.incremental's Refresher.load re-reads only the
    processes that changed)."""
    view, needs, exact = the_plan.view, the_plan.needs, the_plan.exact
    query = request.query
    if spec is None:
        spec, at = query.source, query.at if at is None else at
    selection = Selection(query.process_filter, query.user_filter, query.map_filter, query.pids)
    # the sharing report reads everyone: the holders are outside the selection
    load_selection = Selection(None, None, query.map_filter) if view.requires_exact else selection
    warnings = []
    # -M reads every mapping (load_reading); otherwise an archive may drop what smaps_rollup serves
    # (and a PSS split column may need them: a rollup from before Linux 5.9 lacks the split; the
    # dma-bufs a process maps are found in a capture's smaps); a recording's frame without smaps
    # serves the split where its rollups carry it
    # an archive is streamed (each process as it is read, none held) unless the frames of --exact
    # are to be read from it afterwards
    every_mapping = needs.mappings or query.map_filter is not None
    source = open_source(None if spec == LIVE else spec, per_mapping=every_mapping or needs.split or needs.devices,
                         every_mapping=every_mapping, streamed=not exact, timeout=query.timeout, at=at)
    fold = view.fold(needs) if view.fold is not None and not exact else None
    if query.wss_seconds is not None and spec is None:
        warnings.append(_clear_referenced(source, load_selection, query.wss_seconds))
    try:
        reading = load(source, load_selection, with_processes=view.reads_processes, needs=needs,
                       jobs=query.jobs, fold=fold)
        if load_selection is not selection:  # (the sharing view reads everyone, and selects among them)
            reading = dataclasses.replace(reading, selected=selection.selects)
        sizing = accounting = shared = sharing = None
        if view.needs_sizing or any(c.needs_sizing for c, _ in the_plan.companions):
            sizing = _size(reading, reading.source, request.system, warnings, request.table.abbreviate)
        if exact:
            accounting, sharing = _account_exactly(reading, view, selection, warnings)
        if view.needs_shared_memory:
            shared = _attribute_shared_memory(reading, reading.source, warnings)
        if view.reads_processes:
            warnings.extend(_estimated(reading.source, exact))
    finally:
        source.close()
    snapshot = Snapshot(reading, Derived(sizing, accounting, shared, sharing))
    return snapshot, load_warnings(snapshot) + warnings


def _estimated(source, exact):
    """The notes where the kernel's figures are estimates (built without per-page map counts)."""
    from .parsers.kernel_config import no_page_mapcount, parse_kernel_config
    text = source.kernel_config()
    if text is None or not no_page_mapcount(parse_kernel_config(text)):
        return []
    notes = ["the kernel keeps no per-page map counts (CONFIG_NO_PAGE_MAPCOUNT, Linux 6.15+): smaps' PSS and "
             "USS of large folios mapped in part are averages over the folio, estimates"]
    if exact:
        notes.append("--exact: group USS is approximate on this kernel: kpagecount gives each page of a large "
                     "folio the folio's average map count (CONFIG_NO_PAGE_MAPCOUNT)")
    return notes


def _clear_referenced(source, selection, seconds):
    """--wss: clear the selected processes' referenced bits and wait; the note to say once."""
    from .loading import selected_pids
    from .working_set import CLEAR_REFS_NOTE, measure_interval
    measure_interval(source.proc, selected_pids(source, selection), seconds)
    return CLEAR_REFS_NOTE


def recording_readings(request, the_plan=None):
    """(time, Snapshot) of each frame of the recording ``request.query.source``, in order, read as
    ``the_plan`` (by default ``plan(request)``) says: a recording over time, for a page or a chart.
    ``time`` is seconds since the epoch when the frame was taken (or received)."""
    from .sources.recorded import Recording
    the_plan = plan(request) if the_plan is None else the_plan
    with Recording(request.query.source) as recording:
        entries = list(recording.frames)
    for entry in entries:
        snapshot, _ = read_snapshot(request, the_plan, at=str(entry.number))
        yield entry.time, snapshot


def run_report(request: ReportRequest) -> Result:
    """Read the source (and, for a comparison, the old one first), build the table and render it
    (or draw the chart)."""
    the_plan = plan(request)
    snapshots, warnings = [], []
    query = request.query
    for spec, at in ([(query.old_source, query.old_at)] if query.old_source is not None else []) + [(None, None)]:
        snapshot, said = read_snapshot(request, the_plan, spec, at)
        snapshots.append(snapshot)
        warnings.extend(w for w in said if w not in warnings)
    if request.query.pids is not None and request.query.old_source is None:
        warnings.extend(_pids_not_found(request.query, snapshot))
    view = the_plan.view
    table_options = request.table._replace(exact=the_plan.exact)
    table = make_table(snapshots, view, table_options, request.system, request.chart)
    if request.chart is not None:
        from .charts import show_chart
        show_chart(table, table_options, request.chart, snapshot)
        return Result(None, warnings)
    companions = companion_tables(the_plan, snapshot, request.system)
    old = snapshots[0] if len(snapshots) > 1 else None
    return Result(render(Rendering(table, table_options, snapshot, companions, old_snapshot=old)), warnings)


def _pids_not_found(query, snapshot):
    """--pid's processes that are not in ``snapshot``: a warning when some are, an error when none is."""
    found = {p.pid for p in snapshot.processes}
    found.update(pid for processes in snapshot.unreadable.values() for pid, _ in processes)
    found.update(pid for pid, _, _ in snapshot.skipped)
    missing = [pid for pid in dict.fromkeys(query.pids) if pid not in found]
    if not missing:
        return []
    message = (f"--pid {','.join(map(str, missing))}: not found, or a kernel thread or zombie "
               f"(which has no memory of its own)")
    if query.process_filter is not None or query.user_filter is not None:
        message += ", or left out by -P/-U"
    if len(missing) == len(set(query.pids)):
        raise SmemError(message)
    return [message]


def companion_tables(the_plan, snapshot, system, earlier=None):
    """The tables of the plan's companions, from ``snapshot`` (and, for views whose rows take
    rates over an interval, the ``earlier`` snapshot too where there is one)."""
    return tuple(make_table(readings(view, snapshot, earlier), view, options, system)
                 for view, options in the_plan.companions)


def readings(view, snapshot, earlier=None):
    """The snapshots a table of ``view`` is made of: ``snapshot``, after ``earlier`` where the
    view's rows have rates over an interval (cpu)."""
    return [earlier, snapshot] if earlier is not None and view.interval_rows else [snapshot]


def _size(reading, source, system, warnings, abbreviate=False):
    """The sizing figures of -w; what they doubt added to ``warnings`` (amounts as -k has them)."""
    from .sizing import size_system  # ELF and decompressors: only for -w
    sizing = size_system(source, reading.mem_total, system.realmem_bytes, system.kernel_path)
    warnings.extend(f.doubt for f in sizing if f is not None and f.doubt)
    if system.ram_kib is not None and system.ram_kib < reading.mem_total:
        total = human(reading.mem_total) if abbreviate else f"{reading.mem_total} KiB"  # -k: as the table
        warnings.append(f"-R is less than the memory the kernel manages (MemTotal {total}): "
                        "firmware/hardware shows as 0")
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


def _account_exactly(reading, view, selection, warnings):
    """(ExactAccounting, (selected pids, SharedWith) or None), or (None, None) where the frames
    cannot be read and the view can do without them (a warning says so)."""
    from .exact import ExactUnavailable, account_snapshot, sharing_of_selection  # numpy: only here
    try:
        accounting = account_snapshot(reading)
    except ExactUnavailable as e:
        if view.requires_exact:
            raise
        warnings.append(f"{e}; showing the smaps figures")
        return None, None
    if not view.requires_exact:
        return accounting, None
    own = own_invocation(reading.source, selection)
    selected, sharing = sharing_of_selection(reading, accounting, selection, exclude=own)
    if reading.source.has(OWN_PID):  # smem itself maps the same libraries: not an answer
        for pid in own | {os.getpid()}:
            sharing.holders.pop(pid, None)
    return accounting, (selected, sharing)


def _named(processes):
    """``pid 1 (init), pid 7 (sshd) and 4 more``: (pid, name) pairs as warnings name them."""
    named = ", ".join(f"pid {pid}" + (f" ({name.translate(CONTROLS)})" if name else "") for pid, name in processes[:3])
    return named + (f" and {len(processes) - 3} more" if len(processes) > 3 else "")


def load_warnings(snapshot, slow_seconds=SLOW_READ_SECONDS):
    """The lines that say what the snapshot could not show: unreadable, skipped, slow processes."""
    warnings = []
    for reason, processes in sorted(snapshot.unreadable.items()):
        count = len(processes)
        hint = ("; run as root to see them"
                if "ermission" in reason and snapshot.source.local and os.geteuid() != 0 else "")
        warnings.append(f"{count} process{'es' if count > 1 else ''} could not be read ({reason.lower()}): "
                        f"{_named(processes)}{hint}")
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


def run_capture(path, stream=None, *, host=None, compression="gz", exact=False, force=False):
    """Write a capture of this machine (or of ``host``) to the file ``path``, or to ``stream``
    (standard output) when ``path`` is None; the warnings to show.  ``compression``: gz, bz2, xz,
    zst or none."""
    from .capture_writer import write_capture
    from .output import output_file
    if exact:
        require("numpy", "capture --exact")
    module = by_option(compression).module if compression != "none" else None
    if module is not None:
        require(module, f"capture --compression {compression}")
    source = open_source(host) if host else open_source(None)
    target = (output_file(path, force=force, what="capture", private=True) if path is not None
              else contextlib.nullcontext(stream))
    try:
        with target as out, _compressed(out, compression) as (archive, tar_compression):
            written, skipped = write_capture(source, archive, tar_compression, exact=exact)
        if path is None:
            stream.flush()
    except BrokenPipeError:
        raise  # the command line says the capture was cut off, and quiets stdout
    except OSError as e:
        where = f" to {path}" if path is not None else ""
        raise SmemError(f"cannot write the capture{where}: {e.strerror or e}") from None
    finally:
        source.close()
    if not skipped:
        return []
    hint = "; run as root to capture them" if host is None and os.geteuid() != 0 else ""
    return [f"{len(skipped)} process{'es' if len(skipped) > 1 else ''} could not be read and "
            f"{'were' if len(skipped) > 1 else 'was'} left out: {_named(skipped)}{hint}"]


def run_receive(address, path, stream=None, *, timeout=None, force=False, said=None):
    """Wait on ``address`` (HOST:PORT) for one capture pushed there, read it whole (a capture it
    must be), then write it as it came to ``path`` (or ``stream``).  ``said``: the listening line."""
    from .output import output_file
    from .sources.tcp import DEFAULT_TIMEOUT, Listener
    with Listener(address, timeout or DEFAULT_TIMEOUT, said) as listener:
        source, spool = listener.capture()
    source.close()
    target = (output_file(path, force=force, what="capture", private=True) if path is not None
              else contextlib.nullcontext(stream))
    try:
        with spool, target as out:
            while True:
                chunk = spool.read(1 << 20)
                if not chunk:
                    break
                out.write(chunk)
        if path is None:
            stream.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        where = f" to {path}" if path is not None else ""
        raise SmemError(f"cannot write the capture{where}: {e.strerror or e}") from None
    return []


@contextlib.contextmanager
def _compressed(out, compression):
    """(stream, what tarfile should compress with): zstd is a stream of ours, the rest tarfile's."""
    if compression != "zst":
        yield out, None if compression == "none" else compression
        return
    import zstandard
    with zstandard.ZstdCompressor(level=10).stream_writer(out, closefd=False) as stream:
        yield stream, None
