"""The command line's options: click decorators in bundles, and what gathers their values.

A bundle is the options that belong together (which processes, how the rows are laid out, the
chart, watching over time, ...), declared once and put on every command that takes them, as
sqlite-utils' cli.py does.  Beside the bundles, the functions that turn the values click hands
a command into smem.options' frozen records: parsing sizes, columns and pids (the rules over
which options go together are smem.validate's, checked before).
"""

import os
import sys

import click

from .cli_output import note
from .cli_words import DIRECTORY, GIVEN_SIZE, PATH, SIZE, Choice, FiniteRange, Percent, seconds
from .compression import DEFAULT_WRITTEN, WRITTEN, WRITTEN_ALIASES
from .errors import UsageError
from .formats import FORMATS, TABLE_FORMATS
from .options import (DEFAULT_FORMAT, ChartOptions, Query, ReportRequest, ServeOptions, SystemOptions, TableOptions,
                      WatchOptions)
from .report import parse_columns


def bundle(*decorators):
    """One decorator applying several click options, in the order given (--help lists them so)."""
    def decorate(command):
        for decorator in reversed(decorators):
            command = decorator(command)
        return command
    return decorate


def output_options(what):
    """--force, for commands that write -o FILE (``what``: what the file holds)."""
    return click.option("--force", is_flag=True, help=f"Let -o replace an existing file that does not hold a {what}.")


def timeout_option(where):
    """--timeout: how long a sender pushing a capture over TCP may be silent (``where``: the
    command's own way of taking one, which its help names)."""
    return click.option(
        "--timeout", type=seconds(min_open=True), metavar="S",
        help=f"With {where}: give up on a connected sender silent for S seconds once it has sent "
             "something, or not done after 10 x S (its first byte may take that long: the capture script "
             "sends once it has copied every process; default 60).")

#: which processes and mappings are read
selection_options = bundle(
    click.option("-P", "--processfilter", metavar="REGEX", help="Process filter regex (name or command line)."),
    click.option("-M", "--mapfilter", metavar="REGEX", help="Mapping filter regex."),
    click.option("-U", "--userfilter", metavar="REGEX", help="User filter regex (one naming a colon also matches -u's name:uid labels)."),
    click.option("--pid", "pids", metavar="PID[,PID...]", help="Only these processes (in every view but plain -w)."),
    click.option("--jobs", "-j", type=click.IntRange(min=0), metavar="N",
                 help="Read processes in N processes (0: one per CPU; default: one per CPU from 200 "
                      "processes up, else 1; a streamed capture: at most 2)."),
    click.option("--max-rss", metavar="SIZE", type=SIZE,
                 help="Skip (and list) processes with more than SIZE resident (e.g. 64G): reading a huge "
                      "process's smaps stalls it."),
)


def table_options(complete_fields):
    """How the rows are laid out; ``complete_fields`` completes -c and -s (the command line knows
    the view the words before chose)."""
    return bundle(
        click.option("-H", "--no-header", is_flag=True, help="Disable the header line."),
        click.option("-c", "--columns", metavar="COLUMNS", shell_complete=complete_fields,
                     help='Columns to show, e.g. "pid user pss" or pid,user,pss; "all"; "help" lists them.'),
        click.option("-t", "--totals", is_flag=True, help="Show totals."),
        click.option("-a", "--autosize", is_flag=True, help="Size columns to fit the terminal."),
        click.option("-F", "--format", "fmt", type=Choice(list(FORMATS)), default=DEFAULT_FORMAT, metavar="FORMAT",
                     help=f"Output format: {', '.join(k for k in FORMATS if k not in TABLE_FORMATS)}, or a table "
                          f"style of tabulate ({', '.join(TABLE_FORMATS[:5])}, ...; all in man smem). json and csv "
                          "carry raw KiB (-k/-p only if given); openmetrics always bytes."),
        click.option("-n", "--numeric", is_flag=True, help="Show user IDs instead of names."),
        click.option("-s", "--sort", metavar="FIELD", shell_complete=complete_fields,
                     help="Field to sort on (default: the view's, pss for processes; -c help names it), "
                          "smallest first: the largest is last, beside the totals."),
        click.option("-r", "--reverse", is_flag=True, help="Reverse the sort: the largest first (smem -r | head)."),
        click.option("-p", "--percent", is_flag=True, help="Show amounts as percentages (of RAM; swap of swap)."),
        click.option("-k", "--abbreviate", is_flag=True, help="Show amounts with unit suffixes."),
    )


#: the whole system (-w): installed RAM, the kernel image and the recommendation
system_options = bundle(
    click.option("-R", "--realmem", metavar="SIZE", type=GIVEN_SIZE, help="RAM installed in the machine measured (e.g. 2G, 512M, 1.5GiB; a bare number is bytes)."),
    click.option("-K", "--kernel", metavar="PATH", type=PATH,
                 help="Path to the kernel image (vmlinux, bzImage, vmlinuz; an arm64 or RISC-V Image or Image.gz, "
                      "by its header's image_size)."),
    click.option("--recommend", type=Percent(min=0, max=1000), is_flag=False, flag_value=0.0, default=None,
                 metavar="[PCT]",
                 help="With -w: the RAM size that holds what cannot be reclaimed, plus PCT percent headroom."),
)

#: page-by-page accounting with pagemap
exact_options = bundle(
    click.option("--exact", is_flag=True,
                 help="Account page by page with pagemap (root): group USS (guss) and PSS, true totals."),
)


def chart_options(complete_fields):
    """--pie or --bar, and the file it is saved to."""
    return bundle(
        click.option("--pie", metavar="FIELD", shell_complete=complete_fields,
                     help="Show a pie chart of the sort field, labelled by FIELD."),
        click.option("--bar", metavar="FIELD", shell_complete=complete_fields,
                     help="Show a bar chart, labelled by FIELD."),
        click.option("-o", "--output", metavar="FILE", type=PATH,
                     help="Save the chart (--pie/--bar) to FILE; the format follows the extension (png, svg, "
                          "pdf, ...); -o - writes a PNG to standard output (a pipe or a file, not a terminal)."),
        output_options("chart"),
    )


#: where the report reads from: this machine, a capture, a host, a recording's frame
source_options = bundle(
    click.option("-S", "--source", metavar="SOURCE", type=PATH,
                 help="Data source: a capture (.tar, .tgz, ...), a directory, - for stdin, ssh://[user@]host[:port], "
                      "or tcp://HOST:PORT (wait there for one capture a target pushes with nc: smem capture "
                      "--script), or a recording (smem record): its last frame."),
    timeout_option("-S tcp://HOST:PORT"),
    click.option("--at", metavar="TIME", help="With -S RECORDING: the frame taken at TIME (2026-12-04T16:05, 16:05, "
                 "+10m after the first, -10m before the last) or frame number N."),
)

#: reports over time: watching this machine, playing a recording back, and --wss's wait
time_options = bundle(
    click.option("--speed", type=FiniteRange(min=0.001, max=1e6), metavar="X",
                 help="With -S RECORDING: play it back as watch mode, at X times its pace (a gap while the "
                      "recorder was stopped played as one usual spacing, and said)."),
    click.option("--all-frames", is_flag=True,
                 help="With -S RECORDING: every frame at once, as watch mode writes them (-F json: JSON Lines, "
                      "-F csv: one CSV), each row with its time."),
    click.option("--interval", type=float, metavar="SECONDS",
                 help="Watch: a report every SECONDS, with the change of each amount (dpss, duss, ...) and "
                      "new/gone marks. On a terminal redrawn in place (q quits, s sorts by the next column, "
                      "r reverses, p pauses); else each report after a '# TIME' line, or one JSON Lines / "
                      "CSV stream with -F json / csv."),
    click.option("--count", type=click.IntRange(min=1), metavar="N",
                 help="With --interval (or --speed, --all-frames): stop after N reports."),
    click.option("--wss", type=float, metavar="SECONDS",
                 help="Working set (root): mark the processes' pages idle (idle page tracking, else clear_refs), "
                      "wait SECONDS, then report what each referenced meanwhile (wss, and wsspss with shared pages "
                      "split) beside the defaults."),
    click.option("--delta", type=Choice(["first", "previous"]), metavar="first|previous",
                 help="With --interval (or --speed, --all-frames): changes since the first report (default) or "
                      "the previous one."),
    click.option("--max-staleness", "max_staleness", type=seconds(), metavar="SECONDS",
                 help="With --interval: re-read only the processes that changed (or whose sharers did), and every "
                      "process at least every SECONDS (default 60; 0: every process at every report)."),
)

#: smem capture's
capture_options = bundle(
    click.option("-o", "--output", metavar="FILE", type=PATH,
                 help="Write the capture to FILE (by default, or with -o -, to standard output, which must not be "
                      "a terminal)."),
    output_options("capture"),
    click.option("--host", metavar="ssh://[USER@]HOST[:PORT]", help="Capture a remote host over ssh instead."),
    click.option("--compression", type=Choice(WRITTEN, aliases=WRITTEN_ALIASES),
                 help=f"Compression of the tar archive; gzip, bzip2 and zstd name them too (zst needs "
                      f"smem[compression]). Default: the one -o FILE's extension names (.tar: none, .tgz, "
                      f".tar.bz2, .tar.xz, .tar.zst), else {DEFAULT_WRITTEN}."),
    click.option("--exact", is_flag=True,
                 help="Also store the page frames each process maps and their map counts (root), for --exact "
                      "offline."),
    click.option("--script", is_flag=True,
                 help="Print the capture shell script instead, for a host without Python: "
                      "smem capture --script | ssh box sh > box.tgz"),
    click.option("--listen", metavar="HOST:PORT",
                 help="Wait on HOST:PORT for one capture a target pushes (the script of --script, piped into nc "
                      "HOST PORT), check it is one, and write it (port 0: any free port, named on stderr). Not "
                      "authenticated or encrypted."),
    timeout_option("--listen"),
)

#: smem html's (then the selection)
html_options = bundle(
    click.option("-o", "--output", metavar="FILE", type=PATH, required=True,
                 help="Write the page to FILE (- for standard output: a pipe or a file, not a terminal)."),
    output_options("page smem html wrote"),
    click.option("-S", "--source", metavar="SOURCE", type=PATH,
                 help="Data source: a capture, a directory, ssh://[user@]host[:port], tcp://HOST:PORT (one capture "
                      "a target pushes) or a recording (smem record: its frames over time, with a slider) "
                      "(default: this machine)."),
    click.option("--compare", "old", metavar="OLD", type=PATH,
                 help="Show the change from OLD (as smem diff takes it) to the source."),
    click.option("--top-mappings", type=click.IntRange(min=1), default=12, show_default=True, metavar="N",
                 help="Per process, the N largest mappings; the rest of each kind is one box."),
)

#: smem record's
record_options = bundle(
    click.option("-o", "--output", metavar="DIR", type=DIRECTORY, required=True,
                 help="The recording's directory: made if absent, resumed if it holds a recording."),
    click.option("--interval", type=seconds(min_open=True), metavar="S",
                 help="Seconds between two frames of this machine (default 10)."),
    click.option("--count", type=click.IntRange(min=1), metavar="N", help="Stop after N frames."),
    click.option("--duration", metavar="T", help="Stop after T (seconds, or 90s, 10m, 24h, 2d)."),
    click.option("--smaps-every", type=click.IntRange(min=1), default=360, show_default=True, metavar="N",
                 help="Keep every process's smaps (for -m, -M) in the first frame and every Nth; the others keep "
                      "its smaps_rollup (1: every frame)."),
    click.option("--listen", metavar="HOST:PORT",
                 help="Record a target instead: each capture it pushes to HOST:PORT is a frame (on the "
                      "target, with smemcap.sh from smem capture --script > smemcap.sh: while :; do sh smemcap.sh | "
                      "nc HOST PORT; sleep 10; done). Not authenticated or encrypted."),
    timeout_option("--listen"),
)

#: smem serve's: where and how often (then the selection and -S)
serve_options = bundle(
    click.option("--listen", metavar="HOST:PORT",
                 help="Where to serve /metrics: HOST:PORT or [IPV6]:PORT (default 127.0.0.1:9464; port 0: any "
                      "free port, named on stderr)."),
    click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, metavar="N",
                 help="Per-process metrics for the N processes with the most PSS (0: none)."),
    click.option("--min-interval", type=seconds(), default=5, show_default=True, metavar="S",
                 help="A collection younger than S seconds answers a scrape again, so scrapers share it."),
    click.option("--textfile", metavar="DIR", type=DIRECTORY,
                 help="Write DIR/smem.prom for node_exporter's textfile collector instead of serving HTTP "
                      "(a temporary file renamed into place)."),
    click.option("--interval", type=seconds(min=0.1), metavar="S",
                 help="With --textfile: seconds between two writes (default 60)."),
    click.option("--count", type=click.IntRange(min=1), metavar="N",
                 help="With --textfile: stop after N writes (--count 1 from cron; default: until stopped)."),
    click.option("--max-staleness", "max_staleness", type=seconds(), default=60, show_default=True,
                 metavar="S", help="Re-read only the processes that changed (or whose sharers did) since the last "
                                   "collection, and every process at least every S seconds (0: every process at "
                                   "every collection)."),
)


def report_request(o, view):
    """The main command's values (``o``, as click names them; valid together) as a ReportRequest
    of ``view``."""
    pie, bar, realmem = o["pie"], o["bar"], o["realmem"]
    return ReportRequest(
        query=query_from(o, view, source=o["source"], exact=o["exact"], wss_seconds=o["wss"],
                         timeout=o["timeout"], at=o["at"]),
        table=table_from(o, wraps=wraps(view), flows=fits_terminal(view))._replace(
            working_set=o["wss"] is not None),
        chart=(ChartOptions("pie" if pie is not None else "bar", pie if pie is not None else bar, o["output"],
                            o["force"]) if pie is not None or bar is not None else None),
        system=SystemOptions(realmem_bytes=realmem.bytes if realmem else None,
                             realmem_bare=bool(realmem and realmem.bare),
                             kernel_path=o["kernel"], recommend=o["recommend"]),
        watch=watch_from(o),
    )


def watched_since(o):
    """What watch mode's d columns compare with ("first" or "previous"), or None for one report."""
    watching = o["interval"] is not None or o["speed"] is not None or o["all_frames"]
    return (o["delta"] or "first") if watching else None


def watch_from(o):
    """--interval (or --speed, --all-frames over a recording), --count, --delta, --max-staleness:
    the WatchOptions, or None for one report."""
    since = watched_since(o)
    if since is None:
        return None
    if o["speed"] is not None or o["all_frames"]:
        return WatchOptions(interval=1.0, count=o["count"], since=since,
                            replay=float("inf") if o["all_frames"] else o["speed"])
    more = {} if o["max_staleness"] is None else {"max_staleness": o["max_staleness"]}
    return WatchOptions(interval=o["interval"], count=o["count"], since=since, **more)


def wraps(view):
    """Whether ``view`` (a name) has a column that wraps to the terminal (a breakdown's Source), in
    its report and in a comparison of it alike."""
    from .views import VIEWS
    return any(c.wraps for c in VIEWS[view].columns.values())


def fits_terminal(view):
    """Whether ``view``'s report fits a terminal's width, as a comparison does: its last column is
    a list cut at words with +N (--shm's Processes; no smem 1.5 table to keep)."""
    from .views import VIEWS
    return any(c.cut_words for c in VIEWS[view].columns.values())


def table_from(o, wraps=False, flows=False):
    """The table bundle's values as TableOptions; ``wraps``: the view has a column that wraps to
    the terminal (so its width is wanted without -a); ``flows``: on a terminal, the name column
    takes the width the others leave (smem diff, as a watch screen: no smem 1.5 table to keep)."""
    if o["columns"] is not None and not parse_columns(o["columns"]):
        raise UsageError("-c/--columns is empty: name the fields to show, e.g. -c 'pid name pss'")
    return TableOptions(columns=parse_columns(o["columns"]) if o["columns"] else None, sort=o["sort"],
                        reverse=o["reverse"], totals=o["totals"], no_header=o["no_header"],
                        autosize=o["autosize"], abbreviate=o["abbreviate"], percent=o["percent"],
                        numeric=o["numeric"], format=o["fmt"],
                        terminal_columns=_terminal_columns() if o["autosize"] or wraps or (flows and _on_terminal())
                        else None)


def query_from(o, view, **more):
    """The selection bundle's values as the Query of ``view`` (``more``: its other fields)."""
    max_rss = o["max_rss"]
    return Query(view=view, process_filter=o["processfilter"], user_filter=o["userfilter"],
                 map_filter=o["mapfilter"], max_rss_kib=max_rss // 1024 if max_rss is not None else None,
                 jobs=o["jobs"], pids=_pids(o["pids"]), said=note, **more)


def serve_from(o):
    """smem serve's values as ServeOptions."""
    from .sources.tcp import parse_address
    host, port = parse_address(o["listen"] if o["listen"] is not None else "127.0.0.1:9464", "--listen", 9464)
    return ServeOptions(host=host, port=port, top=o["top"], min_interval=o["min_interval"], textfile=o["textfile"],
                        interval=o["interval"] if o["interval"] is not None else 60.0, count=o["count"],
                        max_staleness=o["max_staleness"])


def _pids(text):
    """--pid 12,34 (or "12 34"): the process ids, each a positive number."""
    if text is None:
        return None
    words = text.replace(",", " ").split()
    if not words or not all(w.isascii() and w.isdigit() and 0 < len(w) <= 10 and int(w) > 0 for w in words):
        raise UsageError(f"--pid takes process ids, e.g. --pid 1234 or --pid 1234,5678 (not {text[:40]!r})")
    return tuple(int(w) for w in words)


def _on_terminal():
    try:
        return sys.stdout is not None and sys.stdout.isatty()
    except ValueError:  # (closed)
        return False


def _terminal_columns():
    """-a's width: COLUMNS, else the terminal of stdout; None off a terminal (the whole names)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isascii() and columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns if sys.stdout.isatty() else None
    except (OSError, ValueError, AttributeError):
        return None
