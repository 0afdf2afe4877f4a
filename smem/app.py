"""Running a report: a request in, a snapshot read, a table made, text or a chart out.

The CLI turns options into a :class:`Request`; everything that decides what
to read and how to combine it lives here, so that the command line stays a
thin layer and other front ends could call :func:`run_report` too.
"""

import os
from dataclasses import dataclass, field
from typing import List, Optional

from .errors import UsageError
from .formats import render
from .model import Selection, load_snapshot, own_invocation
from .report import ReportOptions, make_table, selected_columns, sort_column
from .sources import open_source
from .views import VIEWS, needs_of
from .views.sharing import SHARING_VIEW

__all__ = ["Request", "Result", "run_report"]

#: What charts.pie_data shows when the sort column is not an amount: PSS, or RSS without PSS.
PIE_MEASURES = frozenset({"Pss", "Rss"})


@dataclass
class Request:
    view: str = "process"           # process, mapping, user, program, cgroup, system
    options: ReportOptions = field(default_factory=ReportOptions)
    source: Optional[str] = None    # -S
    process_filter: Optional[str] = None
    user_filter: Optional[str] = None
    map_filter: Optional[str] = None
    exact: bool = False
    shared_with: bool = False


@dataclass
class Result:
    text: Optional[str]             # the report, or None when a chart was shown or saved
    warnings: List[str]


def _view(request):
    options = request.options
    view = VIEWS[request.view]
    if request.shared_with:
        if not (request.process_filter or request.user_filter):
            raise UsageError("--shared-with needs a selection: -P and/or -U")
        view = SHARING_VIEW
    if options.output and not (options.pie or options.bar):
        raise UsageError("-o/--output saves a chart: use it with --pie or --bar")
    if options.recommend is not None and view.name != "system":
        raise UsageError("--recommend sizes RAM for the whole system: use it with -w")
    return view


def run_report(request):
    """Read the source, build the table and render it (or draw the chart)."""
    options = request.options
    view = _view(request)
    exact = request.exact or request.shared_with
    options.exact = exact
    columns = selected_columns(view, options)  # unknown fields fail before any /proc is read
    columns.append(sort_column(view, options))
    needs = needs_of(view, columns)
    exact = exact or needs.exact
    if exact and not view.process_groups and view is not SHARING_VIEW:
        raise UsageError("--exact accounts processes: use it with the process, -u, -g or --cgroup views")
    options.exact = exact
    needs.mappings = needs.mappings or exact
    if options.format == "openmetrics" and view.name == "process":
        for scraped, scraped_options in _scrape_views(options):
            needs.counters = needs.counters.union(
                *(c.counters for c in selected_columns(scraped, scraped_options) + [sort_column(scraped, scraped_options)]))
    if options.pie or options.bar:
        needs.counters |= PIE_MEASURES  # a pie sorted by a column that is not an amount shows these
    if exact:
        from .exact import COUNTERS_READ  # numpy: only here
        needs.counters |= COUNTERS_READ
    selection = Selection(request.process_filter, request.user_filter, request.map_filter)
    # the sharing report reads everyone: the holders are outside the selection
    load_selection = Selection(None, None, request.map_filter) if request.shared_with else selection
    warnings = []
    # -M reads every mapping (load_snapshot); otherwise an archive may drop what smaps_rollup serves
    # (and a PSS split column may need them: a rollup from before Linux 5.9 lacks the split)
    source = open_source(request.source,
                         per_mapping=needs.mappings or needs.split or request.map_filter is not None)
    try:
        snapshot = load_snapshot(source, load_selection, with_processes=view.name != "system", needs=needs)
        if view.name == "system" or (options.format == "openmetrics" and view.name == "process"):
            from .sizing import size_system  # ELF and decompressors: only for -w
            snapshot.sizing = size_system(source, snapshot.mem_total, options.realmem_bytes, options.kernel_path)
            warnings.extend(f.doubt for f in snapshot.sizing if f is not None and f.doubt)
            if options.realmem_bytes is not None and options.realmem_bytes // 1024 < snapshot.mem_total:
                warnings.append(f"-R is less than the memory the kernel manages (MemTotal "
                                f"{snapshot.mem_total} KiB): firmware/hardware shows as 0")
        if exact:
            _account_exactly(snapshot, request, selection, warnings)
    finally:
        source.close()
    warnings[:0] = _load_warnings(snapshot)
    table = make_table(snapshot, view, options)
    if options.pie or options.bar:
        from .charts import show_chart
        show_chart(table, options, snapshot)
        return Result(None, warnings)
    extra = []
    if options.format == "openmetrics" and view.name == "process":
        extra = _scrape_tables(snapshot, options)
    return Result(render(snapshot, view, options, table, extra), warnings)


def _account_exactly(snapshot, request, selection, warnings):
    from .exact import ExactUnavailable, account_snapshot, sharing_of_selection  # numpy: only here
    try:
        snapshot.exact = account_snapshot(snapshot)
    except ExactUnavailable as e:
        if request.shared_with:
            raise
        warnings.append(f"{e}; showing the smaps figures")
        return
    if request.shared_with:
        snapshot.sharing = sharing_of_selection(snapshot, selection,
                                                exclude=own_invocation(snapshot.source, selection))


def _load_warnings(snapshot):
    warnings = []
    for reason, count in sorted(snapshot.unreadable.items()):
        hint = ("; run as root to see them"
                if "ermission" in reason and snapshot.source.is_live and os.geteuid() != 0 else "")
        warnings.append(f"{count} process{'es' if count > 1 else ''} could not be read ({reason.lower()}){hint}")
    if snapshot.pss_missing:
        warnings.append("the kernel does not report PSS (Linux < 2.6.25); PSS shows as '-'")
    return warnings


def _scrape_views(options):
    """(view, options) of the per-user and whole-system tables an OpenMetrics scrape of processes carries."""
    from dataclasses import replace
    for name in ("user", "system"):
        view = VIEWS[name]
        keys = [k for k in (options.columns or VIEWS["process"].default_columns) if k in view.columns]
        yield view, replace(options, columns=keys or None, sort=None)


def _scrape_tables(snapshot, options):
    return [make_table(snapshot, view, view_options) for view, view_options in _scrape_views(options)]
