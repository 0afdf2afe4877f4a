"""Option-combination rules, one function per command, each raising the UsageError the user sees.

cli.py calls these with the raw option values before it builds the frozen options; keeping the
rules here means a rule and its message live in one place. app.py still checks the rules a
library caller (a ReportRequest built without the CLI) can break: --breakdown, --wss, --exact,
--shared-with, --recommend and the watch interval.
"""

from .errors import UsageError


def report_chart(pie, bar, output, force):
    """The main command's chart options: one chart, and -o/--force only with one."""
    if pie is not None and bar is not None:
        raise UsageError("choose one chart: --pie or --bar")
    if output is not None and pie is None and bar is None:
        raise UsageError("-o/--output saves a chart: use it with --pie or --bar")
    if force and output is None:
        raise UsageError("--force lets -o replace a file: use it with -o")


def watch(interval, count, delta, speed, all_frames, max_staleness):
    """Watch mode's options: a recording's playback (--speed, --all-frames) or this machine's
    (--interval, --max-staleness), and --count/--delta only with one of them."""
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


def serve(textfile, listen, interval, count, source):
    """smem serve: --textfile or --listen, its pacing only with --textfile, a source read again."""
    if textfile is None and (interval is not None or count is not None):
        raise UsageError("--interval and --count say how often --textfile writes: use them with --textfile")
    if textfile is not None and listen is not None:
        raise UsageError("choose one: --listen serves HTTP, --textfile writes a file")
    if source == "-":
        raise UsageError("smem serve reads its source again at every collection: -S - (standard input) "
                         "cannot be read twice; name a capture file or directory")


def html(force, output, source, old):
    """smem html: --force only over a named file, captures read by name."""
    if force and output == "-":
        raise UsageError("--force lets -o replace a file: not with -o -")
    if "-" in (source, old):
        raise UsageError("smem html reads captures by name: -S - and --compare - are not supported")


def record(count, duration, listen, interval, timeout):
    """smem record: one end, and this machine's pace or a target's (--listen, --timeout)."""
    if count is not None and duration is not None:
        raise UsageError("choose one end: --count N or --duration T")
    if listen is not None and interval is not None:
        raise UsageError("--interval paces this machine's frames: with --listen the target's loop sets the pace")
    if listen is None and timeout is not None:
        raise UsageError("--timeout bounds a sender over TCP: use it with --listen")


def capture(output, force, host, compression, exact, script, listen, timeout):
    """smem capture: --listen, --script and ssh (--host) each take only their own options."""
    if listen is not None:
        given = [name for name, value in (("--host", host), ("--exact", exact), ("--script", script),
                                          ("--compression", compression != "gz")) if value]
        if given:
            raise UsageError(f"--listen writes the capture as the target sent it: it takes no {' or '.join(given)}")
    elif timeout is not None:
        raise UsageError("--timeout bounds a sender over TCP: use it with --listen")
    if script:
        given = [name for name, value in (("-o", output), ("--host", host), ("--exact", exact),
                                          ("--force", force), ("--compression", compression != "gz")) if value]
        if given:
            raise UsageError(f"--script prints the capture script to standard output: "
                             f"it takes no {' or '.join(given)}")
        return
    if force and output is None:
        raise UsageError("--force lets -o replace a file: use it with -o")
    if exact and host:
        raise UsageError("--exact cannot capture over ssh: the shell script cannot read pagemap; "
                         "run 'smem capture --exact' on the host")
