"""The command line: options in, calls out.  No parsing or arithmetic here.

``smem`` is a click group whose default command is ``report`` (so ``smem -t -k``
is ``smem report -t -k``, as smem 1.5 is used), with ``diff``, ``capture``, ``record``,
``serve`` and ``html`` beside it.  Each command is a few lines: its options come in
bundles (smem.cli_options), their combinations are checked by smem.validate, their
values gathered into frozen options (smem.options), and one library function is
called; :func:`main` turns smem's exceptions into one line on stderr and an exit status.
"""

import functools
import os
import sys

import click

from . import __version__, validate
from .cli_options import (bundle as _bundle, capture_options, chart_options, exact_options, html_options, query_from,
                          record_options, report_request, selection_options, serve_from, serve_options, source_options,
                          system_options, table_from, time_options, timeout_option, watched_since, wraps)
from .cli_options import table_options as _table_options
from .cli_output import (binary_stdout, note, printable, quiet_broken_pipe, silence_stdout, warn, write, write_bytes,
                         write_whole)
from .cli_words import PATH, Choice, DefaultGroup, command_suggestion, one_line, option_suggestion, usage_message
from .errors import SmemError, UsageError
from .options import ReportRequest
from .sigint_ignored import sigint_ignored_line
from .views import chosen_view, view_flags

__all__ = ["cli", "main"]


CONTEXT = dict(help_option_names=["-h", "--help"], max_content_width=100)

EPILOG = """\
\b
Examples:
  smem -t -k                 processes, with totals and unit suffixes
  smem -u -p                 memory per user, as a share of RAM
  smem -m -P firefox         the mappings of processes matching "firefox"
  smem -w -R 2G -K vmlinux   the whole system of a device with 2 GiB of RAM
  smem -w --breakdown        where all of MemTotal goes, with sources
  smem --shm -t              shared memory (tmpfs, SysV, memfd), who maps it
  smem -S box.tgz            a capture: made by smem capture -o box.tgz or,
                             on a host without Python, by
                             smem capture --script | ssh box sh > box.tgz
  smem -c "pid name pss" -s name -r
  smem --interval 2 -s dpss  every 2 s, redrawn; the largest growth last
  smem -u --interval 5 --count 12 -F csv > log.csv

\b
Other commands (each with its --help: smem diff --help, ...):
  smem diff OLD NEW          what changed between two captures (or live)
  smem capture               write a capture of /proc, for smem -S
  smem record -o DIR         record this machine over time, for -S DIR
  smem serve                 metrics for Prometheus or node_exporter
  smem html -o FILE          an offline interactive page of the memory

\b
Exit status: 0 on success, 1 when a source, file or address to listen on
cannot be used, 2 for a wrong option or field.
"""


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
    from click.shell_completion import CompletionItem  # (as click imports it: only for <Tab>)
    return [CompletionItem(done + w) for w in words if w.startswith(last)]


def _version_message():
    """smem's version, where it runs from (Debian's smem 1.5 may come first on PATH, or another
    environment's smem), and which smaps parser it runs (the C one is optional)."""
    from .parsers.smaps import IMPLEMENTATION
    where = os.path.dirname(os.path.abspath(__file__)).replace("%", "%%")
    return f"%(prog)s %(version)s from {where} (smaps parser: {IMPLEMENTATION})"


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

table_options = _table_options(_complete_fields)


def _asked_field_help(o, view, compared=False, watched=None):
    """-c help: print the fields of the view (compared, or watched since ``watched``: no --pie or --bar
    then), with what each is, and its default columns and sort (which -s's help cannot name for all)."""
    if (o["columns"] or "").strip() != "help":
        return False
    from .report import field_help
    from .views import VIEWS
    chosen = _fields_of(VIEWS[view], compared, watched)
    columns = " ".join(chosen.default_columns_for(o.get("exact") or False, o.get("wss") is not None))
    write(f"Fields of the {chosen.name} view (-c, -s{'' if compared or watched is not None else ', --pie, --bar'}):\n"
          f"{field_help(chosen)}By default: -c '{columns}' -s {chosen.default_sort}\n")
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


def _run(request):
    from .app import run_report  # the model and views: not for --help or completion
    result = run_report(request)
    for warning in result.warnings:
        warn(warning)
    if result.text is not None:
        write(result.text)
    if result.chart is not None:
        write_whole(result.chart, "the chart")
    for line in result.notes:
        note(line)


@click.group(cls=DefaultGroup, context_settings=CONTEXT, invoke_without_command=False)
def cli():
    """smem: memory reporting that accounts for shared pages (USS, PSS)."""


@cli.command(context_settings=CONTEXT, epilog=EPILOG, hidden=True)  # "smem -t" is "smem report -t"
@table_options
@system_options
@view_options
@exact_options
@selection_options
@chart_options(_complete_fields)
@source_options
@time_options
@click.version_option(__version__, "--version", prog_name="smem", message=_version_message())
def report(**o):
    """Report memory usage by process, mapping, user or for the whole system,
    accounting for shared pages (USS, PSS) as well as RSS, VSS and swap.

    With --interval, watch: the report again every SECONDS, with what changed.
    """
    view = chosen_view(o)
    if _asked_field_help(o, view, watched=watched_since(o)):
        return
    validate.report(view, **o)
    if o["output"] == "-":  # (a chart's PNG: validate lets -o be given with --pie or --bar only)
        binary_stdout("chart")
    if o["source"] == "-" and sys.stdin is not None and sys.stdin.isatty():
        raise UsageError("-S - reads a capture from standard input, which is a terminal: "
                         "pipe one in (smem capture --script | ssh box sh | smem -S -) or name a file")
    request = report_request(o, view)
    if request.watch is not None and request.watch.replay == float("inf"):
        from .watch import run_watch
        run_watch(request, write, warn)  # every frame at once: a stream, never a screen redrawn
    elif request.watch is not None:
        _watch_run(request)
    else:
        _run(request)


def _watch_run(request):
    """Watch mode: on a terminal (stdout) a screen redrawn in place, keys from stdin if it is one."""
    from .terminal import Screen
    from .watch import run_watch
    if sys.stdout is None:
        raise SmemError("cannot write the report: standard output is closed")
    ignored = sigint_ignored_line("watching")
    if ignored is not None:
        note(ignored)
    screen = None
    if sys.stdout.isatty():
        keys = sys.stdin.fileno() if sys.stdin is not None and sys.stdin.isatty() else None
        screen = Screen(write, sys.stdout.fileno(), keys)
    run_watch(request, write, warn, screen)


@cli.command(context_settings=CONTEXT)
@click.argument("old", metavar="OLD", type=PATH)
@click.argument("new", metavar="[NEW]", required=False, type=PATH)
@compared_view_options
@selection_options
@table_options
@timeout_option("OLD or NEW tcp://HOST:PORT")
@click.option("--from", "from_", metavar="TIME", help="The frame of OLD, a recording, to compare (default: its first "
              "when NEW is not given, else its last); TIME as smem --at takes it: 2026-12-04T16:05, 16:05, "
              "+10m after the first, -10m before the last, or a frame number.")
@click.option("--to", metavar="TIME", help="The frame of NEW (or of OLD alone), a recording (default: its last).")
def diff(old, new, timeout, from_, to, **o):
    """Compare two captures (or directories; 'live' is this machine now): for each process, user,
    program, cgroup, mapping, system area or shared memory object (--shm), its memory in OLD, in
    NEW and the change.

    Processes are the same process when pid and start time match (a reused pid is another
    process); a tmpfs file or memfd is the same object by device and inode, a SysV segment by
    shmid, a mount by mount point and device. A recording alone (smem diff REC) compares its first
    and last frames, or --from and --to. Rows only in NEW are marked new, rows only in OLD
    gone. -t totals are NEW's total minus OLD's (--shm: files counted in their mount). Default columns: old and new PSS and the change of each amount and count
    (dcount: a group's processes); -c takes the base view's fields, old_FIELD and dFIELD.
    """
    view = chosen_view(o)
    if _asked_field_help(o, view, compared=True):
        return
    validate.diff(view, old=old, new=new, from_=from_, to=to, timeout=timeout, **o)
    if new is None:
        new, from_ = old, from_ or "first"
    _run(ReportRequest(query=query_from(o, view, source=new, old_source=old, timeout=timeout,
                                       at=to, old_at=from_),
                       table=table_from(o, wraps=wraps(view), flows=True)))


def _capture_compression(given, output):
    """--compression as given, else the one -o's name says (box.tar.xz was written as gzip)."""
    from .compression import DEFAULT_WRITTEN, named_by
    return given or (named_by(output) if output is not None else None) or DEFAULT_WRITTEN


@cli.command(context_settings=CONTEXT)
@capture_options
def capture(**o):
    """Write a capture of /proc (this machine's, or a remote host's) for smem -S."""
    validate.capture(**o)
    if o["script"]:
        from .sources.remote import capture_script
        write_bytes(capture_script())
        return
    output = None if o["output"] == "-" else o["output"]  # -o -: standard output, as smem html's
    if output is None:
        binary_stdout("capture")
    from .capture_command import run_capture, run_receive
    stream = sys.stdout.buffer if output is None else None
    try:
        warnings = (run_receive(o["listen"], output, stream, timeout=o["timeout"], force=o["force"], said=note)
                    if o["listen"] is not None else
                    run_capture(output, stream, host=o["host"], exact=o["exact"], force=o["force"],
                                compression=_capture_compression(o["compression"], output)))
    except BrokenPipeError:  # a reader that stops early (head, a dropped ssh or nc) has half a capture
        silence_stdout()
        raise SmemError("the capture was cut off: standard output was closed before the end "
                        "(broken pipe); what was written is not a whole capture") from None
    for warning in warnings:
        warn(warning)


@cli.command(context_settings=CONTEXT)
@html_options
@selection_options
def html(**o):
    """Write one self-contained interactive HTML page of where the memory went: MemTotal broken
    down, a zoomable picture of users (or cgroups, programs), processes and mappings by PSS, USS,
    RSS or swap PSS, sortable tables and who shares what; --compare shows the change from OLD.
    Opens offline (nothing is fetched). Needs smem[html] (plotly).
    """
    validate.html(**o)
    from .page.command import run_html
    from .page.data import PageRequest
    request = PageRequest(query_from(o, "process", source=o["source"], old_source=o["old"]),
                          top_mappings=o["top_mappings"])
    output = o["output"]
    if output == "-":  # said before the source is read, as smem capture says it: closed, or a terminal
        binary_stdout("page")
    for warning in run_html(request, output, functools.partial(write_whole, what="the page"), o["force"]):  # (for -o -)
        warn(warning)


@cli.command(context_settings=CONTEXT)
@record_options
def record(output, interval, count, duration, smaps_every, listen, timeout):
    """Record this machine's memory over time into a directory of frames (or a target's, pushed over
    TCP), for -S DIR [--at TIME], smem diff DIR and --all-frames. Until --count, --duration, SIGTERM
    or Ctrl-C, which take one last frame with every smaps of this machine (a second signal stops
    at once); every frame written is kept whole. Needs smem[compression] (zstandard).
    """
    from .sources.recorded import parse_duration
    validate.record(output=output, count=count, duration=duration, listen=listen, interval=interval, timeout=timeout)
    seconds = parse_duration(duration, "--duration") if duration is not None else None
    from .recording.record import DEFAULT_INTERVAL, record_pushed, record_this_machine
    from .recording.stopping import Stopped
    try:
        if listen is not None:
            record_pushed(output, listen, timeout, count, seconds, smaps_every, said=note, warn=warn)
        else:
            record_this_machine(output, interval or DEFAULT_INTERVAL, count, seconds, smaps_every, said=note,
                                warn=warn)
    except KeyboardInterrupt:
        pass  # (a Ctrl-C before the recorder's own handlers were set: nothing was written)
    except Stopped as e:  # this machine's after its last key frame, a target's at once; each said
        if e.exit_status:
            sys.exit(e.exit_status)


@cli.command(context_settings=CONTEXT)
@serve_options
@selection_options
@click.option("-S", "--source", metavar="SOURCE", type=PATH,
              help="Read a capture, a directory, ssh://host or a recording (its last frame) instead of this "
                   "machine's /proc, again at every collection.")
def serve(**o):
    """Export memory for Prometheus: per program, user and cgroup, the system's areas (-w), and the
    --top N processes by PSS, in bytes (USS, PSS, swap PSS, RSS, swap), each cgroup's memory
    pressure stall time (cgroup v2 PSI) and the machine's, with smem's own figures
    (smem_collection_*). Serves http://HOST:PORT/metrics until SIGTERM or Ctrl-C (exit 0), and at /
    the page of smem html, refreshed in place every --min-interval (with smem[html]); or with
    --textfile writes DIR/smem.prom for node_exporter's textfile collector. Processes are read
    in one process unless -j says otherwise. Needs smem[metrics] (prometheus_client).
    """
    validate.serve(**o)
    options = serve_from(o)
    query = query_from(o, "process", source=o["source"])
    if query.jobs is None:  # a daemon beside the work it watches: one core, and no fork from a server thread
        query = query._replace(jobs=1)
    from .serve import serve_http, unfailing, write_textfiles
    if options.textfile is not None:
        if write_textfiles(query, options, warn, note):
            sys.exit(1)  # what went wrong is said already (a warning); cron should see it failed
    else:
        from .page.live import LivePage  # the page at /: smem html's, read at most every --min-interval
        serve_http(query, options, note, warn, LivePage(query, options.min_interval, unfailing(warn)))


def _fail(message, code):
    if sys.stderr is not None:
        click.echo(f"smem: {printable(message)}", err=True)
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
    except (click.exceptions.Abort, KeyboardInterrupt):
        sys.exit(130)
    except SmemError as e:
        _fail(str(e), e.exit_code)
    except BrokenPipeError:
        quiet_broken_pipe()
    if argv is None:  # the command itself, not a caller that goes on (a test)
        _leave_to_exit()
    sys.exit(0)


def _leave_to_exit():
    """Move what is left to the collector's permanent generation: the interpreter's collections
    at shutdown then skip it (docs/benchmarks.md: "The exit leaves the report's objects to the kernel").
    The output is written and flushed by now, and the exit frees the memory; what is lost is
    only the finalizer of an object in a reference cycle, which the exit would not wait for."""
    import gc
    gc.freeze()


def _command_path(ctx):
    return ctx.command_path if ctx is not None else "smem"