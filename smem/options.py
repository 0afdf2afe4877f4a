"""What a report was asked for, split by who needs it, and frozen.

The command line builds these once; every layer below reads them and none
changes them.  A :class:`Query` says what to read, :class:`TableOptions` how
to lay the rows out, :class:`ChartOptions` what to draw, :class:`SystemOptions`
how to size RAM for the system view, :class:`WatchOptions` how often to read
again (watch mode); a :class:`ReportRequest` carries them together.  Named tuples, as psutil
returns: immutable, ``_replace`` for a changed copy, and built at import far faster than a frozen
dataclass, which compiles its methods (docs/benchmarks.md).
:class:`ServeOptions` are ``smem serve``'s: where it listens or
writes, and how often it reads.
"""

from typing import Callable, NamedTuple, Optional, Tuple

__all__ = ["Query", "TableOptions", "ChartOptions", "SystemOptions", "WatchOptions", "ReportRequest",
           "ServeOptions", "MAX_SECONDS", "DEFAULT_FORMAT", "LIVE"]

#: -F when not given: smem 1.5's table (a key of smem.formats.FORMATS)
DEFAULT_FORMAT = "classic"
#: how smem diff (and -S) names this machine now
LIVE = "live"

#: the longest time an option may give (an interval, a timeout, a staleness), seconds: 115 days;
#: the timers it goes to overflow past about 9.2e9 (sleep, select, a socket's timeout)
MAX_SECONDS = 10_000_000


class Query(NamedTuple):
    """What to read: the view, the source and the selection."""

    view: str = "process"              # a key of smem.views.VIEWS
    source: Optional[str] = None       # -S: None for the live system
    #: smem diff: the OLD source the rows are compared with (``source`` is NEW); "live" is this machine now
    old_source: Optional[str] = None
    process_filter: Optional[str] = None   # -P
    user_filter: Optional[str] = None      # -U
    map_filter: Optional[str] = None       # -M
    exact: bool = False                # --exact (implied by --shared-with)
    jobs: Optional[int] = None         # processes reading in parallel (None: decide)
    max_rss_kib: Optional[int] = None  # --max-rss: skip processes with more resident
    pids: Optional[Tuple[int, ...]] = None  # --pid: only these processes
    wss_seconds: Optional[float] = None  # --wss: clear the referenced bits, wait, then read
    timeout: Optional[float] = None    # --timeout: seconds a sender to -S tcp:// may be silent
    at: Optional[str] = None           # --at: which frame of a recording (-S RECORDING); None: the last
    old_at: Optional[str] = None       # smem diff --from: which frame of the OLD recording
    #: called with each line a source says while it waits (-S tcp://: where it listens); None: not said
    said: Optional[Callable[[str], None]] = None


class TableOptions(NamedTuple):
    """How rows become a table: columns, order, totals and units."""

    columns: Optional[Tuple[str, ...]] = None  # -c; None for the view's defaults
    sort: Optional[str] = None
    reverse: bool = False
    totals: bool = False
    no_header: bool = False
    autosize: bool = False
    abbreviate: bool = False           # -k
    percent: bool = False              # -p
    numeric: bool = False              # -n
    terminal_columns: Optional[int] = None  # the terminal's width: -a fits every column to it, a
    #                                           watch screen's name column flows to it; None: not cut
    exact: bool = False                # default columns and totals under --exact
    format: str = DEFAULT_FORMAT       # a key of smem.formats.FORMATS
    limit: Optional[int] = None        # only the first N rows once sorted (smem serve --top N)
    working_set: bool = False          # --wss: the working-set columns are among the defaults


class ChartOptions(NamedTuple):
    """--pie FIELD or --bar FIELD, and where the chart goes."""

    kind: str                          # "pie" or "bar"
    label: str                         # the field that labels slices or bars
    output: Optional[str] = None       # -o; None opens a window
    force: bool = False                # -o may replace a file that holds something else


class SystemOptions(NamedTuple):
    """The whole system (-w, --breakdown): installed RAM, the kernel image, and --recommend."""

    realmem_bytes: Optional[int] = None    # -R
    realmem_bare: bool = False             # -R was a bare number (bytes), which a warning may say
    kernel_path: Optional[str] = None      # -K
    recommend: Optional[float] = None      # --recommend headroom, percent

    @property
    def ram_kib(self):
        return None if self.realmem_bytes is None else self.realmem_bytes // 1024


class WatchOptions(NamedTuple):
    """--interval SECONDS [--count N] [--delta first|previous]: the report again and again."""

    interval: float                    # seconds from the start of one frame to the next
    count: Optional[int] = None        # frames to show; None: until q, Ctrl-C or a signal
    since: str = "first"               # the d columns: changes since the "first" or "previous" frame
    #: a recording played back (-S RECORDING): its frames at this many times their pace (--speed),
    #: or all at once (inf: --all-frames); None watches this machine every ``interval``
    replay: Optional[float] = None
    max_staleness: float = 60.0        # no figure older than this (s); 0: every process read every frame


class ReportRequest(NamedTuple):
    query: Query = Query()
    table: TableOptions = TableOptions()
    chart: Optional[ChartOptions] = None
    system: SystemOptions = SystemOptions()
    watch: Optional[WatchOptions] = None


class ServeOptions(NamedTuple):
    """smem serve: metrics over HTTP for Prometheus, or a file for node_exporter's textfile collector."""

    host: str = "127.0.0.1"            # --listen HOST:PORT ([v6]:PORT); port 0: any free port
    port: int = 9464
    top: int = 10                      # --top N: per-process metrics for the N largest PSS
    min_interval: float = 5.0          # a collection younger than this answers a scrape again
    textfile: Optional[str] = None     # --textfile DIR: write DIR/smem.prom instead of serving
    interval: float = 60.0             # --interval S between two writes of the textfile
    count: Optional[int] = None        # --count N: writes before stopping (None: until stopped)
    max_staleness: float = 60.0        # no figure older than this (s); 0: every process read at every collection
