"""The command line: options in, calls out.  No parsing or arithmetic here.

``smem`` is a click group whose default command is ``report`` (so ``smem -t -k``
is ``smem report -t -k``, as smem 1.5 is used), with ``capture`` beside it.
Options several commands share are decorators defined once below.  Each
command builds frozen options (smem.options) and calls one library function;
:func:`main` turns smem's exceptions into one line on stderr and an exit status.
"""

import os
import sys

import click
import click.shell_completion

from . import __version__, validate
from .cli_words import (DIRECTORY, PATH, Choice, SmemCommand, command_suggestion, one_line, option_suggestion,
                        usage_message)
from .compression import WRITTEN, WRITTEN_ALIASES
from .errors import SmemError, UsageError
from .formats import FORMATS, TABLE_FORMATS
from .options import ChartOptions, Query, ReportRequest, ServeOptions, SystemOptions, TableOptions, WatchOptions
from .report import parse_columns
from .units import parse_size
from .views import chosen_view, view_flags

__all__ = ["cli", "main"]

CONTEXT = dict(help_option_names=["-h", "--help"], max_content_width=100)

EPILOG = """\b
Examples:
  smem -t -k                 processes, with totals and unit suffixes
  smem -u -p                 memory per user, as a share of RAM
  smem -m -P firefox         the mappings of processes matching "firefox"
  smem -w -R 2G -K vmlinux   the whole system of a device with 2 GiB of RAM
  smem -w --breakdown        where all of MemTotal goes, each figure with its source
  smem --shm -t              shared memory (tmpfs, SysV, memfd): in RAM, in swap, who maps it
  smem -S box.tgz            a capture, made with smem capture -o box.tgz, or on a host
                             without Python: smem capture --script | ssh box sh > box.tgz
  smem -c "pid name pss" -s name -r
  smem --interval 2 -s dpss  every 2 s, redrawn; the growth since the start last
  smem -u --interval 5 --count 12 -F csv > log.csv

\b
Other commands:
  smem diff OLD NEW          what changed between two captures, or a capture and live (smem diff --help)
  smem capture               write a capture of /proc for smem -S (smem capture --help)
  smem record -o DIR         record this machine (or a target over TCP) over time, for -S DIR --at TIME
  smem serve                 metrics for Prometheus over HTTP, or for node_exporter (smem serve --help)
  smem html -o FILE          one offline interactive page of where the memory went (smem html --help)

\b
Exit status: 0 on success, 1 when a source or file cannot be used,
2 for a wrong option or field.
"""

class DefaultGroup(click.Group):
    """A group that runs ``report`` when the first word is not one of its commands."""

    command_class = SmemCommand
    default_command = "report"

    def parse_args(self, ctx, args):
        if args and args[0] in self.commands:
            return super().parse_args(ctx, args)
        if not args and ctx.resilient_parsing:
            return super().parse_args(ctx, args)  # completing the first word: offer the commands
        return super().parse_args(ctx, [self.default_command, *args])

    def shell_complete(self, ctx, incomplete):
        """The first word completes to a command, or to the report's options."""
        items = super().shell_complete(ctx, incomplete)
        if incomplete.startswith("-"):
            report_ctx = self.commands[self.default_command].make_context(
                self.default_command, [], parent=ctx, resilient_parsing=True)
            items += self.commands[self.default_command].shell_complete(report_ctx, incomplete)
        return items


def _complete_fields(ctx, param, incomplete):
    """<Tab> after -c, -s, --pie, --bar: the fields of the view the words before choose (-c takes
    several: "pid,u<Tab>" completes the last one)."""
    from .views import VIEWS
    o = ctx.params
    try:
        view = chosen_view(o)
    except UsageError:  # two views given: still offer the default's fields
        view = "process"
    watched = (o.get("delta") or "first") if o.get("interval") is not None else None
    chosen = _fields_of(VIEWS[view], compared=ctx.command.name == "diff", watched=watched)
    several = param.name == "columns"
    done, last = "", incomplete
    if several:
        cut = max(incomplete.rfind(","), incomplete.rfind(" ")) + 1
        done, last = incomplete[:cut], incomplete[cut:]
    words = sorted(chosen.columns) + (["all", "help"] if several and not done else [])
    return [click.shell_completion.CompletionItem(done + w) for w in words if w.startswith(last)]


def _version_message():
    """smem's version, where it runs from (Debian's smem 1.5 may come first on PATH, or another
    environment's smem), and which smaps parser it runs (the C one is optional)."""
    from .parsers.smaps import IMPLEMENTATION
    where = os.path.dirname(os.path.abspath(__file__)).replace("%", "%%")
    return f"%(prog)s %(version)s from {where} (smaps parser: {IMPLEMENTATION})"


def _bundle(*decorators):
    """One decorator applying several click options: what several commands share."""
    def decorate(command):
        for decorator in reversed(decorators):
            command = decorator(command)
        return command
    return decorate


def output_options(what):
    """--force, for commands that write -o FILE (``what``: what the file holds)."""
    return click.option("--force", is_flag=True, help=f"Let -o replace an existing file that does not hold a {what}.")


#: how long a sender pushing a capture over TCP may be silent
timeout_option = click.option(
    "--timeout", type=click.FloatRange(min=0, min_open=True), metavar="S",
    help="Over TCP (--listen, -S tcp://): give up on a connected sender silent for S seconds, or "
         "not done after 10 x S (default 60).")


def _view_option(flag, compared=False):
    """The click option of one of a view's flags (smem.views.choice.ViewFlag)."""
    text = flag.compared_help if compared and flag.compared_help else flag.help
    if flag.values:
        return click.option(*flag.decls, flag.dest, type=Choice(list(flag.values)), metavar=flag.metavar, help=text)
    return click.option(*flag.decls, flag.dest, is_flag=True, help=text)


#: the options that choose a view, made from the view registry (smem.views): smem 1.5's -m -u -w,
#: then the newer ones; smem diff's, those of the views it can compare
view_options = _bundle(*(_view_option(flag) for flag in view_flags()))
compared_view_options = _bundle(*(_view_option(flag, compared=True) for flag in view_flags(compared=True)))

#: which processes and mappings are read
selection_options = _bundle(
    click.option("-P", "--processfilter", metavar="REGEX", help="Process filter regex (name or command line)."),
    click.option("-M", "--mapfilter", metavar="REGEX", help="Mapping filter regex."),
    click.option("-U", "--userfilter", metavar="REGEX", help="User filter regex."),
    click.option("--pid", "pids", metavar="PID[,PID...]", help="Only these processes (in every view)."),
    click.option("--jobs", "-j", type=click.IntRange(min=0), metavar="N",
                 help="Read processes in N processes (0: one per CPU; default: one per CPU from 200 "
                      "processes up, else 1; a streamed capture: at most 2)."),
    click.option("--max-rss", metavar="SIZE",
                 help="Skip (and list) processes with more than SIZE resident (e.g. 64G): reading a huge "
                      "process's smaps stalls it."),
)

#: how the rows are laid out
table_options = _bundle(
    click.option("-H", "--no-header", is_flag=True, help="Disable the header line."),
    click.option("-c", "--columns", metavar="COLUMNS", shell_complete=_complete_fields,
                 help='Columns to show, e.g. "pid user pss" or pid,user,pss; "all"; "help" lists them.'),
    click.option("-t", "--totals", is_flag=True, help="Show totals."),
    click.option("-a", "--autosize", is_flag=True, help="Size columns to fit the terminal."),
    click.option("-F", "--format", "fmt", type=Choice(list(FORMATS)), default="classic", metavar="FORMAT",
                 help=f"Output format: {', '.join(k for k in FORMATS if k not in TABLE_FORMATS)}, or a table "
                      f"style of tabulate ({', '.join(TABLE_FORMATS[:5])}, ...; all in man smem). json and csv "
                      "carry raw KiB (-k/-p only if given); openmetrics always bytes."),
    click.option("-n", "--numeric", is_flag=True, help="Show user IDs instead of names."),
    click.option("-s", "--sort", metavar="FIELD", shell_complete=_complete_fields,
                 help="Field to sort on (default pss; order for -w)."),
    click.option("-r", "--reverse", is_flag=True, help="Reverse the sort."),
    click.option("-p", "--percent", is_flag=True, help="Show amounts as percentages (of RAM; swap of swap)."),
    click.option("-k", "--abbreviate", is_flag=True, help="Show amounts with unit suffixes."),
)


def _asked_field_help(o, view, compared=False, watched=None):
    """-c help: print the fields of the view (compared, or watched since ``watched``), with what each is."""
    if (o["columns"] or "").strip() != "help":
        return False
    from .report import field_help
    from .views import VIEWS
    chosen = _fields_of(VIEWS[view], compared, watched)
    _write(f"Fields of the {chosen.name} view (-c, -s, --pie, --bar):\n" + field_help(chosen))
    return True


def _fields_of(view, compared=False, watched=None):
    """``view`` as -c and -s see it: compared (old_FIELD, dFIELD), or watched since ``watched``."""
    if compared:
        from .views.diff import diff_view
        view = diff_view(view)
    if watched is not None and view.comparison.row_key is not None:
        from .views.diff import watch_view
        view = watch_view(view, watched)
    return view


def _table(o):
    if o["columns"] is not None and not parse_columns(o["columns"]):
        raise UsageError("-c/--columns is empty: name the fields to show, e.g. -c 'pid name pss'")
    return TableOptions(columns=parse_columns(o["columns"]) if o["columns"] else None, sort=o["sort"],
                        reverse=o["reverse"], totals=o["totals"], no_header=o["no_header"],
                        autosize=o["autosize"], abbreviate=o["abbreviate"], percent=o["percent"],
                        numeric=o["numeric"], format=o["fmt"],
                        terminal_columns=_terminal_columns() if o["autosize"] else None)


def _query(o, view, **more):
    max_rss = o["max_rss"]
    return Query(view=view, process_filter=o["processfilter"], user_filter=o["userfilter"],
                 map_filter=o["mapfilter"], max_rss_kib=parse_size(max_rss) // 1024 if max_rss is not None else None,
                 jobs=o["jobs"], pids=_pids(o["pids"]), **more)


def _pids(text):
    """--pid 12,34 (or "12 34"): the process ids, each a positive number."""
    if text is None:
        return None
    words = text.replace(",", " ").split()
    if not words or not all(w.isascii() and w.isdigit() and 0 < len(w) <= 10 and int(w) > 0 for w in words):
        raise UsageError(f"--pid takes process ids, e.g. --pid 1234 or --pid 1234,5678 (not {text[:40]!r})")
    return tuple(int(w) for w in words)


def _run(request):
    from .app import run_report  # the model and views: not for --help or completion
    result = run_report(request)
    for warning in result.warnings:
        _warn(warning)
    if result.text is not None:
        _write(result.text)


@click.group(cls=DefaultGroup, context_settings=CONTEXT, invoke_without_command=False)
def cli():
    """smem: memory reporting that accounts for shared pages (USS, PSS)."""


@cli.command(context_settings=CONTEXT, epilog=EPILOG, hidden=True)  # "smem -t" is "smem report -t"
@table_options
@click.option("-R", "--realmem", metavar="SIZE", help="Amount of physical RAM (e.g. 2G, 512M, 1.5GiB).")
@click.option("-K", "--kernel", metavar="PATH", type=PATH,
              help="Path to the kernel image (vmlinux, bzImage, vmlinuz).")
@click.option("--recommend", type=click.FloatRange(min=0, max=1000), is_flag=False, flag_value=0.0, default=None,
              metavar="[PCT]", help="With -w: the RAM size that holds what cannot be reclaimed, plus PCT percent headroom.")
@view_options
@click.option("--exact", is_flag=True,
              help="Account page by page with pagemap (root): group USS (guss) and PSS, true totals.")
@selection_options
@click.option("--pie", metavar="FIELD", shell_complete=_complete_fields,
              help="Show a pie chart of the sort field, labelled by FIELD.")
@click.option("--bar", metavar="FIELD", shell_complete=_complete_fields, help="Show a bar chart, labelled by FIELD.")
@click.option("-o", "--output", metavar="FILE", type=PATH,
              help="Save the chart (--pie/--bar) to FILE; the format follows the extension (png, svg, pdf, ...).")
@output_options("chart")
@click.option("-S", "--source", metavar="SOURCE", type=PATH,
              help="Data source: a capture (.tar, .tgz, ...), a directory, - for stdin, ssh://[user@]host[:port], "
                   "or tcp://HOST:PORT (wait there for one capture a target pushes with nc: smem capture --script), or a "
                   "recording (smem record): its last frame.")
@timeout_option
@click.option("--at", metavar="TIME", help="With -S RECORDING: the frame taken at TIME (2026-12-04T16:05, 16:05, "
              "+10m after the first, -10m before the last) or frame number N.")
@click.option("--speed", type=click.FloatRange(min=0, min_open=True), metavar="X",
              help="With -S RECORDING: play it back as watch mode, at X times its pace.")
@click.option("--all-frames", is_flag=True,
              help="With -S RECORDING: every frame at once, as watch mode writes them (-F json: JSON Lines, "
                   "-F csv: one CSV), each row with its time.")
@click.option("--interval", type=float, metavar="SECONDS",
              help="Watch: a report every SECONDS, with the change of each amount (dpss, duss, ...) and "
                   "new/gone marks. On a terminal redrawn in place (q quits, s sorts by the next column, "
                   "r reverses, p pauses); else each report after a '# TIME' line, or one JSON Lines / "
                   "CSV stream with -F json / csv.")
@click.option("--count", type=click.IntRange(min=1), metavar="N",
              help="With --interval (or --speed, --all-frames): stop after N reports.")
@click.option("--wss", type=float, metavar="SECONDS",
              help="Working set (root): clear the processes' referenced bits, wait SECONDS, then report what "
                   "each referenced meanwhile (wss, and wsspss with shared pages split) beside the defaults.")
@click.option("--delta", type=Choice(["first", "previous"]), metavar="first|previous",
              help="With --interval (or --speed, --all-frames): changes since the first report (default) or "
                   "the previous one.")
@click.option("--max-staleness", "max_staleness", type=click.FloatRange(min=0), metavar="SECONDS",
              help="With --interval: re-read only the processes that changed (or whose sharers did), and every "
                   "process at least every SECONDS (default 60; 0: every process at every report).")
@click.version_option(__version__, "--version", prog_name="smem", message=_version_message())
def report(realmem, kernel, recommend, exact, pie, bar, output, force, source, timeout,
           at, speed, all_frames, interval, count, delta, wss, max_staleness, **o):
    """Report memory usage by process, mapping, user or for the whole system,
    accounting for shared pages (USS, PSS) as well as RSS, VSS and swap.

    With --interval, watch: the report again every SECONDS, with what changed.
    """
    view = chosen_view(o)
    watch = _watch(interval, count, delta, speed, all_frames, max_staleness)
    if _asked_field_help(o, view, watched=watch.since if watch is not None else None):
        return
    validate.report_chart(pie, bar, output, force)
    table = _table(o)._replace(working_set=wss is not None)
    if source == "-" and sys.stdin is not None and sys.stdin.isatty():
        raise UsageError("-S - reads a capture from standard input, which is a terminal: "
                         "pipe one in (smem capture --script | ssh box sh | smem -S -) or name a file")
    request = ReportRequest(
        query=_query(o, view, source=source, exact=exact, wss_seconds=wss, timeout=timeout, at=at),
        table=table,
        chart=(ChartOptions("pie" if pie is not None else "bar", pie if pie is not None else bar, output, force)
               if pie is not None or bar is not None else None),
        system=SystemOptions(realmem_bytes=parse_size(realmem) if realmem is not None else None,
                             kernel_path=kernel, recommend=recommend),
        watch=watch,
    )
    if watch is not None and watch.replay == float("inf"):
        from .watch import run_watch
        run_watch(request, _write, _warn)  # every frame at once: a stream, never a screen redrawn
    elif watch is not None:
        _watch_run(request)
    else:
        _run(request)


def _watch(interval, count, delta, speed=None, all_frames=False, max_staleness=None):
    """--interval (or --speed, --all-frames over a recording), --count, --delta, --max-staleness: the
    WatchOptions (app checks the interval), or None for one report."""
    validate.watch(interval, count, delta, speed, all_frames, max_staleness)
    if speed is not None or all_frames:
        return WatchOptions(interval=1.0, count=count, since=delta or "first",
                            replay=float("inf") if all_frames else speed)
    if interval is None:
        return None
    more = {} if max_staleness is None else {"max_staleness": max_staleness}
    return WatchOptions(interval=interval, count=count, since=delta or "first", **more)


def _watch_run(request):
    """Watch mode: on a terminal (stdout) a screen redrawn in place, keys from stdin if it is one."""
    from .terminal import Screen
    from .watch import run_watch
    if sys.stdout is None:
        raise SmemError("cannot write the report: standard output is closed")
    screen = None
    if sys.stdout.isatty():
        keys = sys.stdin.fileno() if sys.stdin is not None and sys.stdin.isatty() else None
        screen = Screen(_write, sys.stdout.fileno(), keys)
    run_watch(request, _write, _warn, screen)


@cli.command(context_settings=CONTEXT)
@click.argument("old", metavar="OLD", type=PATH)
@click.argument("new", metavar="[NEW]", required=False, type=PATH)
@compared_view_options
@selection_options
@table_options
@timeout_option
@click.option("--from", "from_", metavar="TIME", help="The frame of OLD, a recording, to compare (default: its first "
              "when NEW is not given, else its last); TIME as for --at.")
@click.option("--to", metavar="TIME", help="The frame of NEW (or of OLD alone), a recording (default: its last).")
def diff(old, new, timeout, from_, to, **o):
    """Compare two captures (or directories; 'live' is this machine now): for each process, user,
    program, cgroup, mapping, system area or shared memory object (--shm), its memory in OLD, in
    NEW and the change.

    Processes are the same process when pid and start time match (a reused pid is another
    process); a tmpfs file or memfd is the same object by device and inode, a SysV segment by
    shmid, a mount by mount point and device. A recording alone (smem diff REC) compares its first
    and last frames, or --from and --to. Rows only in NEW are marked new, rows only in OLD
    gone. -t totals are NEW's total minus OLD's (--shm: files counted in their mount). Default columns: old and new PSS and the change of each amount; -c takes the
    base view's fields, old_FIELD and dFIELD.
    """
    view = chosen_view(o)
    if _asked_field_help(o, view, compared=True):
        return
    if new is None:
        from .sources.recorded import is_recording
        if not is_recording(old):
            raise UsageError(f"smem diff compares OLD and NEW, or the first and last frames of a recording: {old} is not one")
        new, from_ = old, from_ or "first"
    _run(ReportRequest(query=_query(o, view, source=new, old_source=old, timeout=timeout, at=to, old_at=from_),
                       table=_table(o)))


@cli.command(context_settings=CONTEXT)
@click.option("-o", "--output", metavar="FILE", type=PATH,
              help="Write the capture to FILE (default: standard output).")
@output_options("capture")
@click.option("--host", metavar="ssh://[USER@]HOST[:PORT]", help="Capture a remote host over ssh instead.")
@click.option("--compression", type=Choice(WRITTEN, aliases=WRITTEN_ALIASES), default="gz", show_default=True,
              help="Compression of the tar archive; gzip, bzip2 and zstd name them too (zst needs "
                   "smem[compression]).")
@click.option("--exact", is_flag=True,
              help="Also store the page frames each process maps and their map counts (root), for --exact offline.")
@click.option("--script", is_flag=True,
              help="Print the capture shell script instead, for a host without Python: "
                   "smem capture --script | ssh box sh > box.tgz")
@click.option("--listen", metavar="HOST:PORT",
              help="Wait on HOST:PORT for one capture a target pushes (the script of --script, piped into nc HOST PORT), "
                   "check it is one, and write it (port 0: any free port, named on stderr). Not authenticated "
                   "or encrypted.")
@timeout_option
def capture(output, force, host, compression, exact, script, listen, timeout):
    """Write a capture of /proc (this machine's, or a remote host's) for smem -S."""
    validate.capture(output, force, host, compression, exact, script, listen, timeout)
    if script:
        from .sources.remote import capture_script
        _write_bytes(capture_script())
        return
    if output is None and sys.stdout is None:
        raise SmemError("cannot write the capture: standard output is closed; use -o FILE")
    if output is None and sys.stdout.isatty():
        raise UsageError("refusing to write a capture to a terminal; use -o FILE or a pipe")
    from .app import run_capture, run_receive
    stream = sys.stdout.buffer if output is None else None
    try:
        warnings = (run_receive(listen, output, stream, timeout=timeout, force=force, said=_note)
                    if listen is not None else
                    run_capture(output, stream, host=host, compression=compression, exact=exact, force=force))
    except BrokenPipeError:  # a reader that stops early (head, a dropped ssh or nc) has half a capture
        _silence_stdout()
        raise SmemError("the capture was cut off: standard output was closed before the end "
                        "(broken pipe); what was written is not a whole capture") from None
    for warning in warnings:
        _warn(warning)


@cli.command(context_settings=CONTEXT)
@click.option("-o", "--output", metavar="FILE", type=PATH, required=True,
              help="Write the page to FILE (- for standard output).")
@output_options("page smem html wrote")
@click.option("-S", "--source", metavar="SOURCE", type=PATH,
              help="Data source: a capture, a directory or ssh://[user@]host[:port] (default: this machine).")
@click.option("--compare", "old", metavar="OLD", type=PATH, help="Show the change from OLD (as smem diff takes it) to the source.")
@click.option("--top-mappings", type=click.IntRange(min=1), default=12, show_default=True, metavar="N",
              help="Per process, the N largest mappings; the rest of each kind is one box.")
@selection_options
def html(output, force, source, old, top_mappings, **o):
    """Write one self-contained interactive HTML page of where the memory went: MemTotal broken
    down, a zoomable picture of users (or cgroups, programs), processes and mappings by PSS, USS,
    RSS or swap PSS, sortable tables and who shares what; --compare shows the change from OLD.
    Opens offline (nothing is fetched). Needs smem[html] (plotly).
    """
    validate.html(force, output, source, old)
    from .page.command import run_html
    from .page.data import PageRequest
    request = PageRequest(_query(o, "process", source=source, old_source=old), top_mappings=top_mappings)
    for warning in run_html(request, output, sys.stdout.buffer if output == "-" and sys.stdout else None, force):
        _warn(warning)


@cli.command(context_settings=CONTEXT)
@click.option("-o", "--output", metavar="DIR", type=DIRECTORY, required=True,
              help="The recording's directory: made if absent, resumed if it holds a recording.")
@click.option("--interval", type=click.FloatRange(min=0, min_open=True), metavar="S",
              help="Seconds between two frames of this machine (default 10).")
@click.option("--count", type=click.IntRange(min=1), metavar="N", help="Stop after N frames.")
@click.option("--duration", metavar="T", help="Stop after T (seconds, or 90s, 10m, 24h, 2d).")
@click.option("--smaps-every", type=click.IntRange(min=1), default=360, show_default=True, metavar="N",
              help="Keep every process's smaps (for -m, -M) in the first frame and every Nth; the others keep "
                   "its smaps_rollup (1: every frame).")
@click.option("--listen", metavar="HOST:PORT",
              help="Record a target instead: each capture it pushes to HOST:PORT is a frame "
                   "(while :; do sh smemcap.sh | nc HOST PORT; sleep 10; done). Not authenticated or encrypted.")
@timeout_option
def record(output, interval, count, duration, smaps_every, listen, timeout):
    """Record this machine's memory over time into a directory of frames (or a target's, pushed over
    TCP), for -S DIR [--at TIME], smem diff DIR and --all-frames. Until --count, --duration, SIGTERM
    or Ctrl-C; every frame written is kept whole. Needs smem[compression] (zstandard).
    """
    from .sources.recorded import parse_duration
    validate.record(count, duration, listen, interval, timeout)
    seconds = parse_duration(duration, "--duration") if duration is not None else None
    from .recording.record import DEFAULT_INTERVAL, record_pushed, record_this_machine
    try:
        if listen is not None:
            record_pushed(output, listen, timeout, count, seconds, smaps_every, said=_note, warn=_warn)
        else:
            record_this_machine(output, interval or DEFAULT_INTERVAL, count, seconds, smaps_every, said=_note)
    except KeyboardInterrupt:
        pass  # Ctrl-C ends a recording; every frame written is whole


@cli.command(context_settings=CONTEXT)
@click.option("--listen", metavar="HOST:PORT",
              help="Where to serve /metrics: HOST:PORT or [IPV6]:PORT (default 127.0.0.1:9464; port 0: any free "
                   "port, named on stderr).")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, metavar="N",
              help="Per-process metrics for the N processes with the most PSS (0: none).")
@click.option("--min-interval", type=click.FloatRange(min=0), default=5.0, show_default=True, metavar="S",
              help="A collection younger than S seconds answers a scrape again, so scrapers share it.")
@click.option("--textfile", metavar="DIR", type=DIRECTORY,
              help="Write DIR/smem.prom for node_exporter's textfile collector instead of serving HTTP "
                   "(a temporary file renamed into place).")
@click.option("--interval", type=click.FloatRange(min=0.1), metavar="S",
              help="With --textfile: seconds between two writes (default 60).")
@click.option("--count", type=click.IntRange(min=1), metavar="N",
              help="With --textfile: stop after N writes (--count 1 from cron; default: until stopped).")
@click.option("--max-staleness", "max_staleness", type=click.FloatRange(min=0), default=60.0, show_default=True,
              metavar="S", help="Re-read only the processes that changed (or whose sharers did) since the last "
                                "collection, and every process at least every S seconds (0: every process at "
                                "every collection).")
@selection_options
@click.option("-S", "--source", metavar="SOURCE", type=PATH,
              help="Read a capture, a directory or ssh://host instead of this machine's /proc, again at "
                   "every collection.")
def serve(listen, top, min_interval, textfile, interval, count, max_staleness, source, **o):
    """Export memory for Prometheus: per program, user and cgroup, the system's areas (-w), and the
    --top N processes by PSS, in bytes (USS, PSS, swap PSS, RSS, swap), with smem's own figures
    (smem_collection_*). Serves http://HOST:PORT/metrics until SIGTERM or Ctrl-C (exit 0), and at /
    the page of smem html, refreshed in place every --min-interval (with smem[html]); or with
    --textfile writes DIR/smem.prom for node_exporter's textfile collector. Processes are read
    in one process unless -j says otherwise. Needs smem[metrics] (prometheus_client).
    """
    validate.serve(textfile, listen, interval, count, source)
    host, port = _listen(listen if listen is not None else "127.0.0.1:9464")
    options = ServeOptions(host=host, port=port, top=top, min_interval=min_interval, textfile=textfile,
                           interval=interval if interval is not None else 60.0, count=count,
                           max_staleness=max_staleness)
    query = _query(o, "process", source=source)
    if query.jobs is None:  # a daemon beside the work it watches: one core, and no fork from a server thread
        query = query._replace(jobs=1)
    from .serve import serve_http, write_textfiles
    if textfile is not None:
        if write_textfiles(query, options, _warn):
            sys.exit(1)  # what went wrong is said already (a warning); cron should see it failed
    else:
        from .page.live import LivePage  # the page at /: smem html's, read at most every --min-interval
        serve_http(query, options, lambda line: click.echo(f"smem: {line}", err=True), _warn,
                   LivePage(query, min_interval, _warn))


def _listen(text):
    """--listen HOST:PORT or [IPV6]:PORT: (host, port)."""
    from .sources.tcp import parse_address
    return parse_address(text, "--listen", 9464)


def _terminal_columns():
    """-a's width: COLUMNS, else the terminal of stdout; None off a terminal (the whole names)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isascii() and columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns if sys.stdout.isatty() else None
    except (OSError, ValueError, AttributeError):
        return None


def _note(message):
    click.echo(f"smem: {message}", err=True)


def _warn(message):
    click.echo(f"smem: warning: {message}", err=True)


def _write(text):
    _write_bytes(text.encode("utf-8", "surrogateescape"))


def _write_bytes(data):
    if sys.stdout is None:  # started with stdout closed (smem >&-)
        raise SmemError("cannot write the report: standard output is closed")
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()  # here, not at exit: a full disk is reported, a closed pipe quiet
    except BrokenPipeError:
        _quiet_broken_pipe()
    except OSError as e:
        raise SmemError(f"cannot write the report: {e.strerror}") from None


def _silence_stdout():
    """Point stdout at /dev/null, so that the flush at exit does not meet the closed pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _quiet_broken_pipe():
    """A report read by ``head``: the reader has what it wanted, so the end is quiet."""
    _silence_stdout()
    sys.exit(0)


def _fail(message, code):
    if sys.stderr is not None:
        click.echo(f"smem: {message}", err=True)
    sys.exit(code)


def _terminated(signum, frame):
    """SIGTERM and SIGHUP unwind like an exception, so no temporary file outlives us."""
    raise SystemExit(128 + signum)


def main(argv=None):
    """The ``smem`` command: run it, and map every error to one line and an exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    if argv is None:
        import signal
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _terminated)
    if args and not args[0].startswith("-") and args[0] not in cli.commands and "_SMEM_COMPLETE" not in os.environ:
        visible = [name for name, command in cli.commands.items() if not command.hidden]
        _fail(f"no command {args[0]!r}{command_suggestion(args[0], visible)} (see 'smem --help')", 2)
    # the report runs as "smem" itself, so its usage and errors read "smem [OPTIONS]" as smem 1.5's
    command = cli if (args and args[0] in cli.commands) or "_SMEM_COMPLETE" in os.environ else report
    try:
        command.main(args=args, prog_name="smem", standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.NoSuchOption as e:
        _fail(f"no such option {e.option_name}{option_suggestion(e)} (see '{_command_path(e.ctx)} --help')", 2)
    except click.UsageError as e:
        _fail(f"{usage_message(e)} (see '{_command_path(e.ctx)} --help')", 2)
    except click.ClickException as e:
        _fail(one_line(e.format_message()), e.exit_code)
    except click.exceptions.Abort:
        sys.exit(130)
    except SmemError as e:
        _fail(str(e), e.exit_code)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except KeyboardInterrupt:
        sys.exit(130)
    if argv is None:  # the command itself, not a caller that goes on (a test)
        _leave_to_exit()
    sys.exit(0)


def _leave_to_exit():
    """Move what is left to the collector's permanent generation: the interpreter's collections
    at shutdown then skip it (measured: exit 12 ms -> 4 ms after a report of 1,500 processes).
    The output is written and flushed by now, and the exit frees the memory; what is lost is
    only the finalizer of an object in a reference cycle, which the exit would not wait for."""
    import gc
    gc.freeze()


def _command_path(ctx):
    return ctx.command_path if ctx is not None else "smem"
