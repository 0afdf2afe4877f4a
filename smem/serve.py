"""smem serve: memory per program, user, cgroup and system, and of the largest processes, for Prometheus.

One collection reads the source once and makes the tables of several views
from that snapshot (app.plan's companions): every row of the program, user
and cgroup views (their number grows with what runs, not with how many
processes), the system areas of ``-w``, and the ``--top N`` processes by PSS.
:mod:`smem.formats.families` names their metrics, as for ``-F openmetrics``;
prometheus_client carries them (its gauges, its exposition, its WSGI app),
served by the standard library's WSGI server in a thread per request.

Scrapes share collections: one runs at a time (a lock), and one younger than
``--min-interval`` answers again, so Prometheus servers scraping together,
or a person with curl, never make smem read /proc twice at once (reading a
process's smaps stalls it while the kernel walks its page tables).  A process
that cannot be read is counted, never a failed scrape; a source that cannot
be read at all (a capture removed) leaves the self metrics only, with
``smem_collection_errors_total`` counting it.

A collection re-reads only the processes that changed since the last one, whose sharers did,
or whose figure is ``--max-staleness`` old (smem.incremental.Refresher); the rest keep their
figures.  ``smem_oldest_figure_age_seconds`` says how old the oldest one was.

``--textfile DIR`` writes ``DIR/smem.prom`` for node_exporter's textfile
collector instead, every ``--interval`` seconds (``--count N`` times), each
time to a temporary file renamed into place (output.replace_file).
"""

import contextlib
import os
import signal
import stat
import threading
import time
from dataclasses import dataclass, field
from typing import List, Optional

from .app import companion_tables, plan, read_snapshot, readings, warning_kind
from .cpu_seconds import CpuSeconds
from .errors import OutputError, SmemError
from .extras import require
from .formats.families import exported, families, pressure_families
from .http_app import address_text, allowed_hosts, make_server, routes
from .incremental import Refresher
from .options import ReportRequest, TableOptions
from .report import make_table
from .shared_reading import SharedReading
from .sigint_ignored import sigint_ignored_line

__all__ = ["COMPANIONS", "SharedCollector", "serve_http", "write_textfiles", "unfailing", "TEXTFILE_NAME"]

#: the views whose every row a scrape carries: their rows grow with what runs (programs, users,
#: services), not with the number of processes; and the system's areas
COMPANIONS = ("program", "user", "cgroup", "system")

#: beyond each view's default columns (swap uss pss rss, the count; -w's used cache noncache): the
#: proportional swap, GPU memory (read from the fds of every process: DRM clients, dma-bufs),
#: the CPU each used since the scrape before (the first: since it started) and a cgroup's memory
#: pressure as the counters of its stall time (two series a cgroup; rate() of them gives the share
#: of time stalled over any window, which the six avg columns would add as six more series each)
EXTRA_COLUMNS = ("swappss", "gpu", "gpushared", "dmabuf", "cpu", "somestall", "fullstall")

#: HELP texts said more exactly for what smem serve exports than the columns' help, which speaks of
#: reports, watch mode and smem diff too
SERVE_HELPS = {"cpu": "% of one core it ran since the collection before (one started since, and the first "
                      "collection: since it started); rate() of the _cpu_seconds_total counter takes any window"}

TEXTFILE_NAME = "smem.prom"


def _left_out(snapshot):
    """The processes a capture's writer could not read (its capture-info): left out of the figures
    as much as those this collection could not read."""
    return snapshot.source.machine().unreadable_processes or 0


def _options(view, **more):
    """The columns of ``view`` a scrape exports, as samples or as labels (which break ties of the
    sort as a report's do), and no other: one nothing exports (the process view's command line)
    would be read again for every process a collection re-reads."""
    labels = {name for name, _ in view.metrics.labels}
    columns = tuple(view.default_columns) + tuple(k for k in EXTRA_COLUMNS
                                                  if k in view.columns and k not in view.default_columns)
    return TableOptions(columns=tuple(k for k in columns if k in labels or exported(view.columns[k])), **more)


@dataclass
class Collection:
    """What one read of the source gave: the metric families and what the self metrics say."""

    families: list = field(default_factory=list)
    finished: float = 0.0            # time.time() at the end
    duration: float = 0.0            # seconds the collection took
    processes: Optional[int] = None  # processes read (None: the collection failed)
    unreadable: int = 0
    skipped: int = 0
    warnings: List[str] = field(default_factory=list)
    error: Optional[str] = None
    oldest_age: float = 0.0          # seconds since the oldest figure was read, at ``finished``
    taken: Optional[int] = None      # the source's own time (a capture's, a recording frame's): Unix time
    reread: int = 0                  # processes whose rollup it read (the rest were kept)
    reasons: dict = field(default_factory=dict)  # how many of them for each reason
    counted: int = 0                 # processes whose figures their counters gave (smem.private_growth)


def _largest(snapshot, earlier, top):
    """(snapshot, earlier) with only the processes that can be among the ``top`` of largest PSS
    (ties and processes without a PSS kept), for the process view's table sorted by PSS: its rows
    are made of those alone, not of every process at every scrape."""
    if snapshot.pss_missing:
        return snapshot, earlier
    import heapq
    pss = [p.totals.get("Pss") for p in snapshot.processes]
    known = [v for v in pss if v is not None]
    if len(known) <= top:
        return snapshot, earlier
    floor = heapq.nlargest(top, known)[-1]
    kept = tuple(p for p, v in zip(snapshot.processes, pss) if v is None or v >= floor)
    pids = {p.pid for p in kept}
    return _only(snapshot, kept), None if earlier is None else _only(
        earlier, tuple(p for p in earlier.processes if p.pid in pids))


def _only(snapshot, processes):
    import dataclasses
    return dataclasses.replace(snapshot, reading=dataclasses.replace(snapshot.reading, processes=processes))


def unfailing(say):
    """``say`` (a line on stderr) dropping a line it cannot write: a daemon whose stderr is gone (the
    terminal it was started from hung up, a pipe to a logger that died) serves on.  Each scrape with
    something new to say was an empty reply so (wsgiref takes an EPIPE for the client's going)."""
    def said(message):
        try:
            say(message)
        except OSError:
            pass
    return said


class SharedCollector:
    """A prometheus_client collector whose scrapes share collections: one at a time, and one
    younger than ``min_interval`` seconds answers again."""

    def __init__(self, query, options, warn):
        from .selection import Selection
        from .views import VIEWS
        Selection(query.process_filter, query.user_filter, query.map_filter)  # a bad regex fails here, at start
        # the --top N processes: the process view's table, of those alone (_largest)
        self.request = ReportRequest(query=query._replace(view="process"),
                                     table=_options(VIEWS["process"], sort="pss", reverse=True, limit=options.top))
        self.companions = tuple((name, _options(VIEWS[name])) for name in COMPANIONS)
        self.plan = plan(self.request, self.companions)  # unknown fields and bad filters fail here, at start
        self.top = options.top
        self.min_interval = options.min_interval
        self.refresher = Refresher(options.max_staleness)
        self.cpu_seconds = CpuSeconds()  # what each group ran, kept across its processes' exits
        self.warn = unfailing(warn)
        self.collections = 0
        self.errors = 0
        self._shared = SharedReading(self.min_interval, self._collect)  # one at a time, shared
        self._saying = threading.Lock()  # (collections are said in turn, each once)
        self._previous = None  # the snapshot of the collection before: rates (cpu) are over the interval
        self._said = set()

    def latest(self, say=True):
        """The latest collection, made now if none is young enough (smem.shared_reading: its age
        counted from its start), and what it had to say said, with ``say``."""
        collection, made = self._shared.get()
        if made and say:
            self.say(collection)
        return collection

    def _collect(self):
        start = time.monotonic()
        try:
            snapshot, warnings = read_snapshot(self.request, self.plan, load=self.refresher.load)
            earlier, self._previous = self._previous, snapshot
            taken = snapshot.source.machine().epoch
            tables = companion_tables(self.plan, snapshot, self.request.system, earlier)
            if self.top:
                largest = _largest(snapshot, earlier, self.top)
                tables = (make_table(readings(self.plan.view, *largest), self.plan.view, self.request.table,
                                     self.request.system), *tables)
        except SmemError as e:
            self.errors += 1
            return Collection(finished=time.time(), duration=time.monotonic() - start, error=str(e))
        finally:
            self.collections += 1
        every = ([f for table in tables for f in families(table, SERVE_HELPS)]
                 + self.cpu_seconds.families(snapshot, tables) + pressure_families(snapshot.pressure))
        return Collection(every, time.time(),
                          time.monotonic() - start, len(snapshot.processes),
                          sum(map(len, snapshot.unreadable.values())) + _left_out(snapshot), len(snapshot.skipped),
                          warnings,
                          oldest_age=self.refresher.oldest_age(), reread=self.refresher.reread,
                          reasons=dict(self.refresher.reasons), counted=self.refresher.counted, taken=taken)

    def say(self, collection):
        """The warnings and error of ``collection`` that the one before did not have: a daemon's log
        is not a report, and would repeat them at every scrape."""
        messages = collection.warnings + ([collection.error] if collection.error is not None else [])
        with self._saying:
            for message in messages:
                if warning_kind(message) not in self._said:
                    self.warn(message)
            self._said = set(map(warning_kind, messages))

    def collect(self):
        """prometheus_client's Collector: the families of the latest collection, then smem's own."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
        collection = self.latest()
        for family in collection.families:
            kind = CounterMetricFamily if family.type == "counter" else GaugeMetricFamily
            metric = kind(family.name, family.help, labels=family.label_names, unit=family.unit)
            for values, value in family.samples:
                metric.add_metric(values, value)
            yield metric
        yield CounterMetricFamily("smem_collections", "reads of the source since smem serve started "
                                  "(scrapes within --min-interval share one)", value=self.collections)
        yield CounterMetricFamily("smem_collection_errors", "reads of the source that failed as a whole",
                                  value=self.errors)
        yield GaugeMetricFamily("smem_collection_duration_seconds", "how long the latest read took",
                                value=collection.duration, unit="seconds")
        yield GaugeMetricFamily("smem_collection_timestamp_seconds", "when the latest read ended (Unix time)",
                                value=collection.finished, unit="seconds")
        if collection.processes is not None:
            yield GaugeMetricFamily("smem_collection_processes", "processes read in the latest collection",
                                    value=collection.processes)
            yield GaugeMetricFamily("smem_collection_unreadable_processes",
                                    "processes that could not be read (permissions) in the latest collection, or by the "
                                    "writer of the capture it read (-S)",
                                    value=collection.unreadable)
            yield GaugeMetricFamily("smem_collection_skipped_processes",
                                    "processes left out by --max-rss in the latest collection",
                                    value=collection.skipped)
            yield GaugeMetricFamily("smem_collection_reread_processes",
                                    "processes whose smaps_rollup the latest collection read (the others' "
                                    "figures were kept: nothing they or their sharers did moved them)",
                                    value=collection.reread)
            yield GaugeMetricFamily("smem_collection_counted_processes",
                                    "processes whose own memory moved that the latest collection did not read: "
                                    "every page fault since their last read made a page of their own, so the "
                                    "kernel's counters (statm) gave their figures",
                                    value=collection.counted)
            reasons = GaugeMetricFamily("smem_collection_reread_by_reason_processes",
                                        "of the processes the latest collection read, how many because they were "
                                        "new, their own memory moved, their figure reached --max-staleness, what "
                                        "they share moved, KSM merged or unmerged their pages, or all (every process read)",
                                        labels=["reason"])
            for reason, count in sorted(collection.reasons.items()):
                reasons.add_metric([reason], count)
            yield reasons
            if collection.taken is not None:  # a recording whose recorder died is served still: its age shows here
                yield GaugeMetricFamily("smem_source_timestamp_seconds", "when the source's figures were taken "
                                        "(Unix time): a capture's or a recording frame's time, which -S serves "
                                        "however old; this machine's: the collection's", value=collection.taken,
                                        unit="seconds")
            yield GaugeMetricFamily("smem_oldest_figure_age_seconds",
                                    "how old the oldest figure of the latest collection was when it ended (under "
                                    "--max-staleness; add the time since smem_collection_timestamp_seconds for "
                                    "its age now)", value=collection.oldest_age, unit="seconds")


def _registry(collector, own_process):
    """A registry of ``collector``, whose families are known only once collected: without
    ``support_collectors_without_names`` (a newer prometheus_client's), ``/metrics?name[]=...`` would
    answer an empty page."""
    from prometheus_client import CollectorRegistry, ProcessCollector
    try:
        registry = CollectorRegistry(auto_describe=False, support_collectors_without_names=True)
    except TypeError:  # (an older one: name[] answers nothing, as it did)
        registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    if own_process:  # smem's own CPU and memory: process_*, as every Prometheus client exports
        ProcessCollector(registry=registry)
    return registry


class _Stop(BaseException):
    """SIGTERM or Ctrl-C: stop serving, and exit 0 (a service stopped as asked)."""


@contextlib.contextmanager
def _stopped_by_signals():
    """SIGTERM and SIGINT stop serving, but a SIGINT that what started smem left ignored (a
    script's &) stays ignored, as in smem record; yields the line that says so (None if not)."""
    def stop(signum, frame):
        raise _Stop()
    ignored = sigint_ignored_line("this server")
    signums = (signal.SIGTERM,) if ignored is not None else (signal.SIGTERM, signal.SIGINT)
    before = {s: signal.getsignal(s) for s in signums}
    for s in signums:
        signal.signal(s, stop)
    try:
        yield ignored
    except _Stop:
        pass
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def serve_http(query, options, announce, warn, page_app=None):
    """Serve /metrics on options.host:port until SIGTERM or Ctrl-C; and ``page_app`` (a WSGI app
    with the ``paths`` it answers: smem html's live page) where given."""
    require("prometheus_client", "smem serve")
    from prometheus_client import make_wsgi_app
    collector = SharedCollector(query, options, warn)
    metrics_app = make_wsgi_app(_registry(collector, own_process=True))
    server = make_server(options.host, options.port, routes(metrics_app))
    server.set_app(routes(metrics_app, page_app, allowed_hosts(options.host, server.server_address[1])))
    thread = None
    try:
        first = collector.latest(say=False)  # a source that cannot be read at all is an error now
        if first.error is not None:
            raise SmemError(first.error)
        collector.say(first)
        with _stopped_by_signals() as ignored:
            thread = threading.Thread(target=server.serve_forever, name="smem-serve", daemon=True)
            thread.start()
            announce(f"serving http://{address_text(options.host, server.server_address[1])}/metrics")
            if page_app is not None:
                announce(f"the page: http://{address_text(options.host, server.server_address[1])}/")
            if ignored is not None:
                announce(ignored)
            while True:
                time.sleep(3600)
    finally:
        if thread is not None:
            server.shutdown()
        server.server_close()


def write_textfiles(query, options, warn, announce=None):
    """Write options.textfile/smem.prom every options.interval seconds, options.count times
    (until SIGTERM or Ctrl-C when None); how many of the reads and writes failed with a count
    (for cron), 0 without (stopped as asked: each failure was a warning already).  A failed read
    writes nothing: the last good file stays (node_exporter's node_textfile_mtime_seconds shows
    its age) rather than being replaced by one without a figure of the machine's.  A write that
    fails after a good one (the disk full a while) is a warning, tried again at the next
    interval, as a failed read is: an exporter left running for weeks outlives it.  The first
    write failing is an error: a directory it could never write.  ``announce``: says that SIGINT
    is left ignored, where it is."""
    require("prometheus_client", "smem serve --textfile")
    from prometheus_client import generate_latest
    warn = unfailing(warn)
    directory = options.textfile
    try:
        if not stat.S_ISDIR(os.stat(directory).st_mode):
            raise OutputError(f"--textfile {directory}: not a directory")
    except OSError as e:
        raise OutputError(f"--textfile {directory}: {e.strerror}") from None
    from .output import replace_file
    collector = SharedCollector(query, options._replace(min_interval=0.0), warn)
    registry = _registry(collector, own_process=False)  # node_exporter has process_* of its own
    path = os.path.join(directory, TEXTFILE_NAME)
    written = 0
    good, unwritten, said = False, 0, None
    with _stopped_by_signals() as ignored:
        if ignored is not None and announce is not None:
            unfailing(announce)(ignored)
        next_at = time.monotonic()
        while True:
            failed_before = collector.errors
            text = generate_latest(registry)
            if collector.errors == failed_before:  # a failed read leaves the last good file (its mtime ages)
                try:
                    replace_file(path, text, mode=0o644)
                    good, said = True, None
                except OutputError as e:
                    if not good:
                        raise
                    unwritten += 1
                    if str(e) != said:  # (once, not at every interval while the disk stays full)
                        warn(f"{e}; {TEXTFILE_NAME} keeps the last figures written, tried again in "
                             f"{options.interval:g} s")
                        said = str(e)
            written += 1
            if options.count is not None and written >= options.count:
                break
            next_at += options.interval
            time.sleep(max(0.0, next_at - time.monotonic()))
    return collector.errors + unwritten if options.count is not None else 0
