"""Option-combination rules, one function per command, each raising the UsageError the user sees.

Every rule over what was typed together lives here, worded in the command line's flags: the
library below (app.py and the layers it calls) takes already-valid frozen options and checks
none of them again.  Each function takes the command's option values as click names them (the
ones a rule reads are its keyword arguments; the rest pass through ``**_``), before the values
are parsed into smem.options; a rule that depends on the chosen view reads its traits from the
view registry (imported here, not at the command line's start: --help and completion stay light).
"""

import os
import stat

from .errors import UsageError
from .options import DEFAULT_FORMAT, LIVE, MAX_SECONDS

__all__ = ["report", "diff", "capture", "html", "record", "serve"]


def report(view, *, pie, bar, output, force, interval, count, delta, speed, all_frames, max_staleness,
           recommend, exact, wss, source, at, fmt, timeout=None, **selection):
    """The main command: its chart, watch, system, --exact and --wss options against each other
    and against ``view`` (the name the view flags chose)."""
    _named(output)
    _chart(pie, bar, output, force, fmt)
    _output_read_from(output, force, (source,))
    _over_tcp(timeout, (source,), "-S tcp://HOST:PORT")
    _frame_chosen(source, at, "--at")
    watching = _watch(interval, count, delta, speed, all_frames, max_staleness)
    chosen = _registered(view)
    _takes_selection(chosen, **selection)
    if watching:
        chosen = _watched(chosen, interval, speed, all_frames, source, at, fmt, exact,
                          charted=pie is not None or bar is not None, since=delta or "first")
    if chosen.accounting.requires_exact and not (selection["processfilter"] or selection["userfilter"] or selection["pids"]):
        raise UsageError("--shared-with needs a selection: -P, -U or --pid")
    if wss is not None:
        _working_set(chosen, wss, source, watching)
    from .views.columns import Sizing
    if recommend is not None and chosen.reads.sizing is Sizing.NEVER:
        raise UsageError("--recommend sizes RAM for the whole system: use it with -w")
    if selection.get("kernel") is not None and chosen.reads.sizing is Sizing.NEVER:  # (-R is -p's RAM too)
        raise UsageError("-K sizes the kernel image for the whole system: use it with -w")
    if recommend is not None and watching:  # (a watched table compares frames: it has no notes)
        watched_by = "--interval" if interval is not None else "--speed" if speed is not None else "--all-frames"
        raise UsageError(f"--recommend sizes RAM from one reading: not with {watched_by}")
    if exact and not chosen.accounting.process_groups and not chosen.accounting.requires_exact:
        raise UsageError("--exact accounts processes: use it with the process, -u, -g or --cgroup views")


def diff(view, *, old, new, from_=None, to=None, timeout=None, **selection):
    """smem diff: OLD alone is a recording, --from and --to choose frames of recordings, and
    ``view`` (as the view flags chose it) has rows to match between two readings."""
    _over_tcp(timeout, (old, new), "OLD or NEW tcp://HOST:PORT")
    if old == new == "-":  # (the second read of standard input found it empty: "no capture")
        raise UsageError("OLD and NEW cannot both be standard input (-): it is read once; name one of them a file")
    if new is None:
        from .sources.recorded import is_recording
        if not is_recording(old):
            raise UsageError(_not_a_recording(str(old)))
    _frame_chosen(old, from_, "--from")
    _frame_chosen(old if new is None else new, to, "--to")
    chosen = _registered(view)
    _comparable(chosen, False, "smem diff")
    from .views.diff import diff_view
    _takes_selection(diff_view(chosen), **selection)


def _frame_chosen(source, at, option):
    """--at (smem diff's --from and --to) chooses a frame: of a recording, a directory holding its
    index; not of this machine, a stream or a capture.  A path that cannot be read is left to the
    source, which says why."""
    if at is None:
        return
    if source is None or source in ("", "-", LIVE) or "://" in source:
        raise UsageError(f"{option} chooses a frame of a recording: use it with "
                         + ("-S RECORDING" if option == "--at" else "a recording"))
    from .sources.recorded import is_recording
    if is_recording(source):
        return
    try:
        mode = os.stat(source).st_mode
    except (OSError, ValueError):  # (ValueError: a NUL in the path, which the source refuses)
        return
    kind = "a capture directory" if stat.S_ISDIR(mode) else "a capture"
    raise UsageError(f"{option} chooses a frame of a recording: {source} is {kind}")


def _named(output):
    """-o '' names nothing: a chart was then shown in a window (as with no -o), and the others said
    "cannot write : a directory"."""
    if output == "":
        raise UsageError("-o takes the name of a file (or - for standard output): '' names none")


def _output_read_from(output, force, sources):
    """-o names no file a source is read from: the capture itself, or with --force a file of a
    capture's or a recording's directory.  --force lets -o replace a file that holds no chart (no
    page), and the chart (page) would be written over the capture it is made from, lost once read
    (without it, a chart or page of its own in the directory may be written again)."""
    if output is None or output == "-":
        return
    try:
        written = os.stat(output)
    except (OSError, ValueError):  # (not there yet: nothing to lose; a NUL: -o says it)
        return
    for source in sources:
        if source is None or source in ("", LIVE) or "://" in source:
            continue
        try:
            read = os.fstat(0) if source == "-" else os.stat(source)  # (-S -: the file on standard input)
        except (OSError, ValueError):
            continue
        if os.path.samestat(written, read):
            named = "on standard input (-)" if source == "-" else source
            raise UsageError(f"-o {output} is the source {named} itself: it would be replaced by what is read "
                             "from it; name another file")
        if force and stat.S_ISDIR(read.st_mode) and _inside(output, read):
            raise UsageError(f"-o {output} is a file of the source {source} (a capture's or recording's "
                             "directory): --force would replace it; name a file outside it")


def _inside(path, directory):
    """Whether ``path`` (an existing file, links followed as a write follows them) lies under
    ``directory`` (an os.stat result)."""
    parent = os.path.dirname(os.path.realpath(path))
    while True:
        try:
            if os.path.samestat(os.stat(parent), directory):
                return True
        except OSError:
            return False
        if parent == os.path.dirname(parent):
            return False
        parent = os.path.dirname(parent)


def _over_tcp(timeout, sources, how):
    """--timeout only where a source is received over TCP (it bounds nothing else)."""
    if timeout is not None and not any(str(s).startswith("tcp://") for s in sources if s is not None):
        raise UsageError(f"--timeout bounds a sender over TCP: use it with {how}")


def _not_a_recording(old):
    """OLD alone, not a recording: the command that compares it with now where that is the usual
    meaning (a capture), not where it would fail too (a path not there) or mean nothing (live)."""
    import shlex
    from .errors import SourceError
    said = f"smem diff compares OLD and NEW, or the first and last frames of a recording: {old} is not a recording"
    if old == "live":
        return said + ": it is this machine now; give a capture or recording to compare with it, then live"
    if "://" in old:
        return said
    if old == "-":  # (not a path: "cannot read -: No such file or directory" said nothing of it)
        return said.replace(f"{old} is not", "standard input (-) is not") + "; a capture on it compares with " \
            "this machine now: smem diff - live"
    try:
        os.stat(old)
    except OSError as e:
        raise SourceError(f"cannot read {old}: {e.strerror}") from None
    return said + f"; against this machine now: smem diff {shlex.quote(old)} live"


def _chart(pie, bar, output, force, fmt=DEFAULT_FORMAT):
    """One chart, and -o/--force only with one; -F (a table's format) not with one."""
    if pie is not None and bar is not None:
        raise UsageError("choose one chart: --pie or --bar")
    if (pie is not None or bar is not None) and fmt != DEFAULT_FORMAT:
        raise UsageError(f"-F {fmt} formats a table, and --pie and --bar draw a chart: choose one "
                         "(-o FILE.png, .svg or .pdf chooses the chart's format)")
    if output is not None and pie is None and bar is None:
        raise UsageError("-o/--output saves a chart: use it with --pie or --bar")
    if force and output is None:
        raise UsageError("--force lets -o replace a file: use it with -o")
    if force and output == "-":
        raise UsageError("--force lets -o replace a file: not with -o -")


def _watch(interval, count, delta, speed, all_frames, max_staleness):
    """Watch mode's options: a recording's playback (--speed, --all-frames) or this machine's
    (--interval, --max-staleness), and --count/--delta only with one of them; whether it watches."""
    replaying = speed is not None or all_frames
    if speed is not None and all_frames:
        raise UsageError("choose one: --speed X plays a recording back at a pace, --all-frames all at once")
    if replaying and interval is not None:
        raise UsageError("--interval watches this machine: a recording is played back at its own pace (--speed)")
    if replaying and max_staleness is not None:
        raise UsageError("--max-staleness is for watching this machine (--interval): a recording's frames are as recorded")
    if not replaying and interval is None:
        for given, name in ((count, "--count N"), (delta, "--delta"), (max_staleness, "--max-staleness")):
            if given is not None:
                raise UsageError(f"{name} is for watch mode: use it with --interval SECONDS")
    return replaying or interval is not None


def _registered(view):
    """The registered view named ``view`` (the view flags chose it: smem.views.choice)."""
    from .views import VIEWS
    return VIEWS[view]


def _takes_selection(view, *, processfilter, userfilter, mapfilter, pids, **_):
    """A view that attributes memory to every process takes no -P/-U/-M/--pid, nor one that reads
    no process (plain -w: they were taken and selected nothing, the report the same without them)."""
    given = [o for o, v in (("-P", processfilter), ("-U", userfilter), ("-M", mapfilter), ("--pid", pids)) if v]
    if not given:
        return
    if not view.reads.selection:
        raise UsageError(f"the {view.title} view attributes memory to every process: "
                         f"it takes no {' or '.join(given)}")
    if not view.reads.processes:
        raise UsageError(f"-w reads no process: {' or '.join(given)} would select nothing in it "
                         f"(-w --breakdown, which splits the processes' memory, takes them)")


def _comparable(view, exact, command):
    """``view`` has rows to match between two readings, and no page-by-page accounting."""
    if exact or view.accounting.requires_exact:
        raise UsageError(f"{command} does not combine with --exact or --shared-with")
    if view.comparison.row_key is None:
        raise UsageError(f"{command} compares processes, users, programs, cgroups, mappings, the "
                         f"system or shared memory objects, not the {view.title} view")


def _watched(view, interval, speed, all_frames, source, at, fmt, exact, charted, since):
    """Watch mode over ``view``: this machine every --interval, or a recording played back; the
    view it shows."""
    if speed is None and not all_frames:
        if not 0 < interval <= MAX_SECONDS:
            raise UsageError(f"--interval takes a number of seconds above 0, at most {MAX_SECONDS} (not {interval:g})")
        if source is not None:
            raise UsageError("--interval watches this machine: a capture (-S) is one instant (a recording is "
                             "played back with --speed or --all-frames); on a remote host run smem --interval there")
    else:
        from .sources.recorded import is_recording
        if source is None or not is_recording(source):
            raise UsageError("--speed and --all-frames play a recording back: use them with -S RECORDING")
        if at is not None:
            raise UsageError("--at chooses one frame: --speed and --all-frames play them all")
    watched_by = "--interval" if speed is None and not all_frames else "--speed" if speed is not None else "--all-frames"
    if charted:
        raise UsageError(f"{watched_by} redraws a report: it does not combine with --pie or --bar")
    _comparable(view, exact, watched_by)
    from .formats import FORMATS
    if FORMATS[fmt].stream is None:
        raise UsageError(f"-F {fmt} is one document, not a stream: watch mode writes json (JSON Lines), csv or a table")
    from .views.diff import watch_view
    return watch_view(view, since)


def _working_set(view, seconds, source, watching):
    """--wss: this machine's processes, as root, once, in a view with a wss column."""
    if source is not None:
        raise UsageError("--wss measures this machine's processes over time: not a capture or another host")
    if not 0 < seconds <= MAX_SECONDS:
        raise UsageError(f"--wss takes a number of seconds above 0, at most {MAX_SECONDS} (not {seconds:g})")
    from .working_set import asked_method  # only for --wss
    asked_method()
    if os.geteuid() != 0:
        raise UsageError("--wss marks each process's pages (idle page tracking, or /proc/PID/clear_refs): "
                         "run it as root")
    if "wss" not in view.columns:
        raise UsageError(f"--wss measures processes' working set: the {view.title} view has no wss column")
    if watching:
        raise UsageError("--wss measures once: it does not combine with --interval")


def serve(*, textfile, listen, interval, count, source, **_):
    """smem serve: --textfile or --listen, its pacing only with --textfile, a source read again."""
    if textfile is None and (interval is not None or count is not None):
        raise UsageError("--interval and --count say how often --textfile writes: use them with --textfile")
    if textfile is not None and listen is not None:
        raise UsageError("choose one: --listen serves HTTP, --textfile writes a file")
    if source == "-":
        raise UsageError("smem serve reads its source again at every collection: -S - (standard input) "
                         "cannot be read twice; name a capture file or directory")
    if source is not None and source.startswith("tcp://"):  # (each scrape would wait for a target's push)
        raise UsageError("smem serve reads its source again at every collection: -S tcp:// would wait for a "
                         "target's push at every scrape; record the target (smem record --listen HOST:PORT -o DIR) "
                         "and serve the recording's last frame (smem serve -S DIR)")


#: Extensions of pictures and documents that are not HTML: a page written under one of these names
#: opens in no viewer (the charts, which write such files, refuse an extension they cannot write).
NOT_A_PAGE = frozenset("png svg svgz pdf jpg jpeg gif webp bmp tif tiff eps ps avif ico "
                       "doc docx odt rtf".split())


def html(*, force, output, source, old, **_):
    """smem html: --force only over a named file, captures read by name, a name that says HTML."""
    _named(output)
    if force and output == "-":
        raise UsageError("--force lets -o replace a file: not with -o -")
    extension = os.path.splitext(output)[1][1:].lower() if output != "-" else ""
    if extension in NOT_A_PAGE:
        raise UsageError(f"-o {output}: the page is HTML, not a .{extension} file: name it .html (for a "
                         f"picture, open the page in a browser and screenshot it; smem --pie and --bar "
                         f"save charts as .png, .svg or .pdf)")
    if "-" in (source, old):
        raise UsageError("smem html reads captures by name: -S - and --compare - are not supported")
    _output_read_from(output, force, (source, old))


def record(*, output=None, count, duration, listen, interval, timeout, **_):
    """smem record: one end, and this machine's pace or a target's (--listen, --timeout)."""
    if output == "":
        raise UsageError("-o takes the name of the recording's directory: '' names none")
    if output == "-":
        raise UsageError("-o names the recording's directory: a recording is files, not a stream "
                         "for standard output (-o -)")
    if count is not None and duration is not None:
        raise UsageError("choose one end: --count N or --duration T")
    if listen is not None and interval is not None:
        raise UsageError("--interval paces this machine's frames: with --listen the target's loop sets the pace")
    if listen is None and timeout is not None:
        raise UsageError("--timeout bounds a sender over TCP: use it with --listen")


def _compression_named(output):
    """A capture is never written under a name that says a compression smem cannot write: gz in a
    .tar.lz4 (--compression's, the default's, or a target's over --listen) misleads every reader."""
    from .compression import unwritten_named_by
    what = unwritten_named_by(output) if output not in (None, "-") else None
    if what is not None:
        raise UsageError(f"-o {output} names {what}, which smem capture cannot write: it writes gz, bz2, xz, zst "
                         "or none, as -o's extension names it (.tgz, .tar.bz2, .tar.xz, .tar.zst, .tar) or "
                         "--compression chooses")


def capture(*, output, force, host, compression, exact, script, listen, timeout, **_):
    """smem capture: --listen, --script and ssh (--host) each take only their own options."""
    _named(output)
    if listen is not None:
        given = [name for name, value in (("--host", host), ("--exact", exact), ("--script", script),
                                          ("--compression", compression is not None)) if value]
        if given:
            raise UsageError(f"--listen writes the capture as the target sent it: it takes no {' or '.join(given)}")
    elif timeout is not None:
        raise UsageError("--timeout bounds a sender over TCP: use it with --listen")
    if script:
        given = [name for name, value in (("-o", output), ("--host", host), ("--exact", exact), ("--force", force),
                                          ("--compression", compression is not None)) if value]
        if given:
            raise UsageError(f"--script prints the capture script to standard output: "
                             f"it takes no {' or '.join(given)}")
        return
    if force and output is None:
        raise UsageError("--force lets -o replace a file: use it with -o")
    _compression_named(output)
    if exact and host:
        raise UsageError("--exact cannot capture over ssh: the shell script cannot read pagemap; "
                         "run 'smem capture --exact' on the host")
