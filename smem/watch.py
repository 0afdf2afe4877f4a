"""Watch mode: ``smem --interval SECONDS [--count N]``, any view, the report again and again.

One interpreter, one plan (smem.app.plan: what the view, its columns and the
sort read; smem.validate checked the options before), then per frame one
snapshot read as that plan says (smem.app.read_snapshot) and the table of the
watch view (smem.views.diff.watch_view: the comparison of ``smem diff``
between the first frame, or the previous one with ``--delta previous``, and
this one).  So every view, filter, column and format works as in a report, and
``dpss``, ``duss``, ... and the new/gone marks come from the same code as
``smem diff``'s.

On a terminal a table is redrawn in place (smem.terminal) with a status line,
and keys act at once on the frame shown: ``q`` quits, ``s`` sorts by the next
column shown, ``r`` reverses, ``p`` pauses.  Elsewhere (a pipe, a file) each
frame is written whole and flushed as its format streams it
(smem.formats.streams).  Frames start every SECONDS, counted from the first;
a frame that takes longer delays the next rather than piling up.  Ctrl-C ends
watch mode like ``q``, with status 0: it is how an endless watch is stopped.

Over a recording (``-S RECORDING --speed X`` or ``--all-frames``) the frames are its frames, in
order, each at its recorded time: the waits between them are the recording's divided by X, or
none at all, and each frame's time is when it was recorded.  A gap (the recorder stopped for an
hour, then resumed) is played as one usual spacing, and said with the frame after it: replayed
at its length, it was a screen frozen for an hour / X, like a hang.

Watching this machine, each frame re-reads only the processes that changed, whose sharers did, or
whose figure is ``--max-staleness`` old (smem.incremental.Refresher; 0 reads every process every
frame).

Started with SIGINT ignored (a script's ``smem --interval 1 &``), Ctrl-C does not stop it: the line
that says so, and that SIGTERM does, is on stderr before the screen is drawn over it, and under
each frame drawn.

Processes are read serially unless ``--jobs`` or ``SMEM_JOBS`` says otherwise:
worker processes (smem.collect) save wall time, which a frame a second does
not need, and cost CPU, which a watch spends every second (docs/benchmarks.md).
"""

import gc
import itertools
import os
import time

from .app import pids_not_found, plan, read_snapshot
from .errors import CaptureError
from .formats import FORMATS, Frame, Rendering
from .incremental import Refresher
from .report import format_value, make_table
from .sigint_ignored import sigint_ignored_line
from .sources.recorded import without_frame
from .table_memo import RowMemo

__all__ = ["run_watch"]

KEYS_HELP = "q quit  s sort  r reverse  p pause"

#: reports a row marked gone stays on (--delta first) before it is folded into one line
GONE_KEPT = 5

#: a recording's spacing longer than this many usual ones (and than GAP_LEAST s) is a gap, which
#: --speed plays as one usual spacing: the recorder was stopped, not the machine idle
GAP_SPACINGS = 5
GAP_LEAST = 60.0


def run_watch(request, write, warn, screen=None):
    """Watch ``request`` (its ``watch`` set): frames written with ``write`` (text), warnings
    given to ``warn`` once each, or, with ``screen`` (a smem.terminal.Screen) and a table
    format, drawn on it.  Its options are valid together (smem.validate refused the rest before
    the screen was touched)."""
    if request.query.jobs is None and not os.environ.get("SMEM_JOBS", "").strip():
        request = request._replace(query=request.query._replace(jobs=1))
    the_plan = plan(request)
    options = request.table._replace(exact=False)
    try:
        if screen is not None and FORMATS[options.format].redraws:
            with screen:
                _on_screen(request, the_plan, options, screen)
        else:
            _streamed(request, the_plan, options, write, warn)
    except KeyboardInterrupt:
        pass  # Ctrl-C: the end of watching, not a failure (each frame went out whole)


class _Frames:
    """The snapshots read so far that matter: the one deltas are taken against, and the newest."""

    def __init__(self, request, the_plan):
        self.request = request
        self.plan = the_plan
        self.since_first = request.watch.since == "first"
        self.baseline = None
        self.current = None
        self.warnings = []
        self.frame = None
        self.first = None   # the first Frame
        self.count = request.watch.count
        self.refresher = Refresher(request.watch.max_staleness)
        self.gone_at = {}   # row key -> the number of the first report that marked it gone
        self.memo = RowMemo()  # the cells of the last table's rows (those unchanged are not computed again)
        self.gaps = {}      # a recording's frame after a gap -> (seconds not waited, the line that says so)

    def read(self, number, recorded=None):
        """Read frame ``number``: this machine now (re-reading only what changed), or the
        recording's frame ``recorded`` (a FrameEntry), read whole."""
        started = time.time() if recorded is None else recorded.time
        if recorded is None:
            snapshot, self.warnings = read_snapshot(self.request, self.plan, load=self.refresher.load)
        else:
            snapshot, self.warnings = read_snapshot(self.request, self.plan, at=str(recorded.number))
            if recorded.number in self.gaps:
                self.warnings = [*self.warnings, self.gaps[recorded.number][1]]
        if self.current is None:
            self.baseline = snapshot          # the first frame is its own baseline: changes are 0
            if self.request.query.pids is not None:  # none of them there is an error, as in one report
                self.warnings = [*self.warnings, *pids_not_found(self.request.query, snapshot)]
        elif not self.since_first:
            self.baseline = self.current
        self.current = snapshot
        if self.first is None:
            # what the first frame made stays (the baseline, the figures kept): the collector
            # need not walk it again at every frame (docs/benchmarks.md, issue #26 item 2)
            gc.freeze()
        self.frame = Frame(started, number, self.count)
        self.first = self.first or self.frame

    def table(self, options):
        table = make_table([self.baseline, self.current], self.plan.view, options, self.request.system,
                           memo=self.memo)
        return self._folded(table, options) if self.since_first else table

    def _folded(self, table, options):
        """Rows gone for more than GONE_KEPT reports folded into one line under the table: on a
        busy machine those since the first report would grow without bound.  The totals (-t)
        still count them: they are this report's minus the first's."""
        number = self.frame.number
        gone = {row.key for row in table.rows if row.status == "gone"}
        self.gone_at = {key: self.gone_at.get(key, number) for key in gone}
        folded = {key for key, at in self.gone_at.items() if number - at >= GONE_KEPT}
        if not folded:
            return table
        kept = [i for i, row in enumerate(table.rows) if row.key not in folded]
        line = f"{len(folded)} more gone since {_clock(self.first.time)}"
        change = table.view.columns.get(f"d{table.view.charting.measure}")
        if change is not None:
            total = sum(change.getter(row) or 0 for row in table.rows if row.key in folded)
            line += f": {change.header} {format_value(change, total, options, table)}"
        return table._replace(values=[table.values[i] for i in kept], rows=[table.rows[i] for i in kept],
                              sort_values=[table.sort_values[i] for i in kept], notes=[*table.notes, line])


def _clock(t):
    return time.strftime("%H:%M:%S", time.localtime(t))


def _streamed(request, the_plan, options, write, warn):
    frames = _Frames(request, the_plan)
    fmt = FORMATS[options.format]
    said = set()
    damaged = _Damaged()
    for number, recorded, due in _schedule(request, frames):
        time.sleep(max(due - time.monotonic(), 0.0))
        if not damaged.read(frames, number, recorded):
            continue
        for warning in frames.warnings:
            if without_frame(warning) not in said:  # (a recording's frames: the same warning each)
                said.add(without_frame(warning))
                warn(warning)
        write(fmt.stream(Rendering(frames.table(options), options, frames.current, frame=frames.frame,
                                   memo=frames.memo)))
    damaged.said()


class _Damaged:
    """The frames of a recording that could not be read: each costs only itself (the others are
    played), and the playback then ends with one error line naming the first and how many."""

    def __init__(self):
        self.errors = []

    def read(self, frames, number, recorded):
        """frames.read(number, recorded); False where it is a recording's frame that is damaged."""
        try:
            frames.read(number, recorded)
        except CaptureError as e:
            if recorded is None:
                raise
            self.errors.append(e)
            return False
        return True

    def said(self):
        if self.errors:
            more = len(self.errors) - 1
            raise CaptureError(f"{self.errors[0]}" + (f" (and {more} more frame{'s' * (more > 1)})" if more else "")
                               + ": skipped, the other frames played")


def _schedule(request, frames):
    """(number, recorded, due) of each frame: its number, the recording's FrameEntry (None: this
    machine now) and when it is due (time.monotonic()): now, then every ``watch.interval`` seconds
    after the last was read, ``watch.count`` times or for ever; or a recording's frames at its pace
    divided by ``watch.replay``.  Asked for the next frame once the last is read."""
    watch = request.watch
    if watch.replay is not None:
        yield from _replayed(request, frames)
        return
    next_at = time.monotonic()
    for number in itertools.count(1) if watch.count is None else range(1, watch.count + 1):
        yield number, None, next_at
        next_at = max(next_at + watch.interval, time.monotonic())


def _replayed(request, frames):
    from .sources.recorded import Recording
    with Recording(request.query.source) as recording:
        entries = recording.frames
    entries = entries[:request.watch.count] if request.watch.count is not None else entries
    if not entries:
        raise CaptureError(f"{request.query.source}: the recording has no frame yet")
    frames.count = len(entries)
    if request.watch.replay != float("inf"):  # (--all-frames waits for nothing: no gap to skip)
        frames.gaps = _gaps(entries)
    started, skipped = time.monotonic(), 0.0
    for number, entry in enumerate(entries, 1):
        skipped += frames.gaps.get(entry.number, (0.0, None))[0]
        yield number, entry, started + (entry.time - entries[0].time - skipped) / request.watch.replay


def _gaps(entries):
    """{frame number: (seconds not waited before it, the line that says so)} of the frames after a
    gap: a spacing of more than GAP_SPACINGS usual ones (and GAP_LEAST s), played as one usual."""
    from .sources.recorded import span, usual_spacing
    usual = usual_spacing(entries)
    gaps = {}
    for before, entry in zip(entries, entries[1:]):
        spacing = entry.time - before.time
        if spacing > max(GAP_SPACINGS * usual, GAP_LEAST):
            gaps[entry.number] = (spacing - usual, f"skipped a gap of {span(spacing)} at {_clock(before.time)} (no "
                                                   f"frame between frames {before.number} and {entry.number}): played "
                                                   f"as {usual:.3g} s, the recording's usual spacing")
    return gaps


def _on_screen(request, the_plan, options, screen):
    frames = _Frames(request, the_plan)
    watch = request.watch
    state = {"sort": options.sort, "reverse": options.reverse, "paused": False}
    upcoming = _schedule(request, frames)
    number, recorded, next_at = next(upcoming)
    drawn_at = None  # the terminal's size at the last drawing
    damaged = _Damaged()
    # said on stderr too, before the screen was drawn over it: the screen says it under each frame
    stop = sigint_ignored_line("watching")
    while True:
        if not state["paused"] and time.monotonic() >= next_at:
            if damaged.read(frames, number, recorded):
                drawn_at = _draw(screen, frames, options, state, watch, stop)
            following = next(upcoming, None)
            if following is None:
                damaged.said()
                return  # the last frame stays on the screen
            number, recorded, next_at = following
        if frames.current is None:  # (the first frames damaged: nothing to sort or draw yet)
            time.sleep(max(min(1.0, next_at - time.monotonic()), 0.0))
            continue
        # at least every second: a resized terminal is drawn again at its new size, paused or not
        keys = screen.keys(min(1.0, 3600.0 if state["paused"] else next_at - time.monotonic()))
        stale = screen.size() != drawn_at
        for key in keys:
            if key in "qQ":
                return
            stale = _press(key, state, frames, options) or stale
        if stale:
            drawn_at = _draw(screen, frames, options, state, watch, stop)


def _press(key, state, frames, options):
    """Act on ``key``; whether the screen must be drawn again."""
    if key == "s":
        shown = [c.key for c in frames.table(_sorted(options, state)).columns]
        current = state["sort"] or frames.plan.view.sort_for(frames.current.pss_missing)
        state["sort"] = shown[(shown.index(current) + 1) % len(shown)] if current in shown else shown[0]
    elif key == "r":
        state["reverse"] = not state["reverse"]
    elif key == "p":
        state["paused"] = not state["paused"]
    else:
        return False
    return True


def _sorted(options, state):
    return options._replace(sort=state["sort"], reverse=state["reverse"])


def _draw(screen, frames, options, state, watch, stop=None):
    """Draw the frame at the terminal's size now, ``stop`` (how to stop smem where Ctrl-C does not)
    under it; that size."""
    columns, rows = size = screen.size()
    # the name flows to the width, unless -a fits all (the screen's spare last column takes the
    # space that ends each line)
    options = _sorted(options, state)._replace(terminal_columns=columns)
    table = frames.table(options)
    of = f"/{frames.count}" if frames.count is not None else ""
    pace = f"every {watch.interval:g} s" if watch.replay is None else f"replayed at {watch.replay:g}x"
    since = f"since {_clock(frames.first.time)}" if watch.since == "first" else "since the previous frame"
    status = (f"smem {frames.plan.view.title} {_clock(frames.frame.time)}  frame {frames.frame.number}{of} "
              f"({pace})  changes {since}")
    state_line = f"sort {table.sort.key}{' reversed' if options.reverse else ''}"
    state_line += "  PAUSED" if state["paused"] else ""
    keys = f"  [{KEYS_HELP}]" if screen.has_keys else ""
    # the lines over the table wrap (the table's lines are cut): nothing said there is lost
    width = max(columns - 1, 20)
    head = _wrapped(status, width)
    warnings = [line for w in frames.warnings for line in _wrapped(f"smem: warning: {w}", width)]
    stop = _wrapped(f"smem: {stop}", width) if stop else []
    longest = len(_wrapped(f"{state_line}  (+{len(table.values)} rows off the screen){keys}", width))
    room = max(rows - len(head) - longest - len(warnings) - len(stop) - 1, 1)  # (the last line: the cursor)
    body, hidden = _fitted(table, options, frames, room)
    if hidden:
        state_line += f"  (+{hidden} rows off the screen)"
    screen.draw(head + _wrapped(state_line + keys, width) + warnings + body + stop)
    return size


def _wrapped(line, width):
    import textwrap
    return textwrap.wrap(line, width, subsequent_indent="  ", break_on_hyphens=False) or [""]


def _fitted(table, options, frames, room):
    """The table's lines, with as many rows as fit in ``room`` lines: the end that matters kept
    (smem puts the largest rows last; with -r, first), totals still over every row."""
    render = FORMATS[options.format].render
    keep = len(table.values)
    while True:
        shown = _rows_kept(table, keep, options.reverse)
        lines = render(Rendering(shown, options, frames.current, frame=frames.frame, memo=frames.memo)).splitlines()
        if len(lines) <= room or keep == 0:
            return lines, len(table.values) - keep
        keep = max(keep - (len(lines) - room), 0)


def _rows_kept(table, keep, reverse):
    if keep >= len(table.values):
        return table
    part = slice(0, keep) if reverse else slice(len(table.values) - keep, None)
    return table._replace(values=table.values[part], rows=table.rows[part], sort_values=table.sort_values[part])
