"""``smem record``: frames of this machine on a schedule, or of a target that pushes captures.

This machine: a capture every ``interval`` seconds (the smaps read only for a key frame, the
smaps_rollup otherwise), made a frame (smem.recording.frames) and added to the recording; a
signal that stops it takes one last key frame first (smem.recording.stopping).
A target: each capture pushed to the listener (smem.sources.tcp) is read whole (so a bad one
is refused with its line, and the next one is still taken), then made a frame; the frame's time
is when it arrived (a target's clock is often wrong).  A signal stops it at once (the capture
under way, if any, dropped), saying what the recording holds: there is no capture of the target
to take, and the last one received was written already without its smaps (written again as a
key frame, it would be a second frame of one instant).
"""

import io
import itertools
import time

from ..errors import CaptureError
from .stopping import Stopped, StopSignals
from .store import DEFAULT_SMAPS_EVERY, RecordingWriter

__all__ = ["record_this_machine", "record_pushed", "DEFAULT_INTERVAL"]

#: seconds between two frames of this machine
DEFAULT_INTERVAL = 10.0


def _resumed_line(writer):
    return f" (resumed at frame {writer.next_number})" if writer.resumed else ""


def _said_ignored(said, stop):
    line = stop.ignored_line()
    if line is not None:
        said(line)


def record_this_machine(path, interval=DEFAULT_INTERVAL, count=None, duration=None,
                        smaps_every=DEFAULT_SMAPS_EVERY, said=None, warn=None):
    """Record this machine into ``path``: ``count`` frames, or for ``duration`` seconds (the frames
    written), or until stopped by SIGINT (Ctrl-C), SIGTERM or SIGHUP: then, after one last key
    frame, Stopped is raised (smem.cli exits with its status).  The processes the first frame left
    out (not readable, or hidden: not root) are ``warn``-ed, as smem capture says them: once, for a
    recorder's log is read at its start and the next frames leave out the same.  A usual frame (not
    a key frame, slower by its smaps) that takes longer than ``interval`` is ``warn``-ed once: the
    frames are then as far apart as they take, not ``interval``."""
    written = 0
    with StopSignals() as stop, RecordingWriter(path, smaps_every, hold=stop.held) as writer:
        try:
            if said is not None:
                said(f"recording this machine into {path} every {interval:g} s{_resumed_line(writer)}")
                _said_ignored(said, stop)
            slow_said = False
            for last in _schedule(interval, count, duration):
                stop.check()  # (a signal whose Stopped was lost where it was raised stops it now)
                # (the last of a --count or --duration run keeps its smaps too: the page and -m of
                # the recording's end are then of its end, not of the key frame up to an hour before)
                number, key, started = writer.next_number, writer.wants_smaps() or last, time.monotonic()
                left_out = _add_frame(writer, key)
                took = time.monotonic() - started
                if not written and warn is not None:
                    for warning in left_out:
                        warn(warning)
                if took > interval and not slow_said and warn is not None and (not key or smaps_every == 1):
                    seconds = f"{took:.1f}" if took >= 1 else f"{took:.2g}"
                    warn(f"frame {number} took {seconds} s, longer than --interval {interval:g} s: "
                         "the frames are as far apart as they take")
                    slow_said = True
                written += 1
        except Stopped as first:  # (the frame under way, if any, is dropped: never named in the index)
            _last_key_frame(writer, stop, first, said)
            raise first from None
    return written


def _add_frame(writer, key):
    """A capture of this machine now added to the recording (with every smaps if ``key``); the
    warnings of the processes it left out."""
    from ..capture_command import left_out
    from ..capture_writer import write_capture
    from ..sources import open_source
    buffer = io.BytesIO()
    taken = time.time()
    source = open_source(None)
    try:
        written = write_capture(source, buffer, compression=None, with_smaps=key)
        hidden = source.hidden()
    finally:
        source.close()
    buffer.seek(0)
    writer.add(buffer, taken, key)
    return left_out(written.skipped, hidden, True, " of the recording", "record", written.no_smaps)


def _last_key_frame(writer, stop, first, said):
    """After the ``first`` stopping signal: a key frame of the machine now, so that the recording's
    end (where a page of it opens, what -m of it reads) is the machine's when it was stopped, not
    the key frame before; a second signal drops it.  Each step said."""
    def say(message):
        _said_quietly(said, message)
    number = writer.next_number
    try:
        stop.resume()  # (a second signal received since the first is raised here)
        say(f"{first.name}: taking a last frame with every smaps before stopping (a second signal stops at once)")
        _add_frame(writer, True)
        stop.pause()
    except Stopped as second:
        if writer.next_number == number:  # (else it came as the frame was named in the index: it is whole)
            again = f"{second.name} again" if second.signum == first.signum else f"{second.name} after {first.name}"
            say(f"{again}: stopped without the last frame; the recording ends at frame {number - 1}"
                if number > 1 else f"{again}: stopped before any frame was written")
            return
    say(f"stopped by {first.name}: frame {number}, the recording's last, keeps every smaps")


def _schedule(interval, count, duration):
    """Yield at each frame's time: now, then every ``interval`` seconds (a slow frame delays the
    next), ``count`` times or until ``duration`` seconds have passed; whether it is the last frame
    (as far as a schedule knows: a signal may end it sooner).  A frame (or a wait: a machine
    suspended, a recorder stopped) that runs past the duration when the frame was not known as
    the last is followed by one more, the last, so that the recording still ends on one."""
    start = next_at = time.monotonic()
    last = False
    for number in itertools.count(1) if count is None else range(1, count + 1):
        if number > 1:
            time.sleep(max(next_at - time.monotonic(), 0.0))
            if duration is not None and time.monotonic() - start >= duration:
                if not last:
                    yield True
                return
        last = number == count or (duration is not None and next_at + interval - start >= duration)
        yield last
        next_at = max(next_at + interval, time.monotonic())


def record_pushed(path, address, timeout=None, count=None, duration=None, smaps_every=DEFAULT_SMAPS_EVERY,
                  said=None, warn=None):
    """Record the captures pushed to ``address`` (HOST:PORT) into ``path``, one frame each; a bad
    capture is ``warn``-ed and the next one awaited.  Stops after ``count`` frames, ``duration``
    seconds (the frames written), or when stopped by SIGINT, SIGTERM or SIGHUP: then, what the
    recording holds said, Stopped is raised (smem.cli exits with its status)."""
    from ..sources.tcp import DEFAULT_TIMEOUT, Listener
    with StopSignals() as stop, Listener(address, timeout or DEFAULT_TIMEOUT) as listener, \
            RecordingWriter(path, smaps_every, hold=stop.held) as writer:
        first = writer.next_number
        try:
            if said is not None:
                said(f"listening on {listener.address} for captures to record into {path}"
                     f"{_resumed_line(writer)} (on the target: {listener.target_loop()})")
                _said_ignored(said, stop)
            return _receive_frames(listener, writer, count, duration, warn, said)
        except Stopped as stopped:  # (a frame named in the index is whole: StopSignals.held)
            _said_quietly(said, _pushed_stop_line(stopped, writer, first))
            raise stopped from None


def _receive_frames(listener, writer, count, duration, warn, said=None):
    """Each capture received made a frame, until ``count`` or ``duration``; the frames written.
    The first frame is ``said`` (the target reaches us); later ones are not (a daemon's log would
    grow a line every interval), only the captures refused."""
    written = 0
    started = time.monotonic()
    while count is None or written < count:
        wait = None if duration is None else started + duration - time.monotonic()
        if wait is not None and wait <= 0:
            break
        try:
            received = listener.capture(wait)
        except CaptureError as e:
            if warn is not None:
                warn(f"{e}; waiting for the next capture")
            continue
        if received is None:
            break
        source, spool = received
        source.close()
        with spool:
            try:  # a capture smem reads but will not keep as a frame (larger than one may be) costs only itself
                writer.add(spool, time.time())
            except CaptureError as e:
                if warn is not None:
                    warn(f"{e}; waiting for the next capture")
                continue
        written += 1
        if written == 1 and said is not None:
            said(f"recorded frame {writer.next_number - 1} from {listener.peer}; later frames are "
                 "recorded silently, a capture refused is said")
    return written


def _said_quietly(said, line):
    """``said(line)``, best effort: SIGHUP is often the terminal gone, and stderr with it."""
    if said is not None:
        try:
            said(line)
        except OSError:
            pass


def _frames(first, last):
    return f"frame {first}" if first == last else f"frames {first} to {last}"


def _pushed_stop_line(stopped, writer, first):
    """What a recording of a target holds when a signal stopped it: no last key frame is taken
    (there is no capture of the target to take), so the line names the last that keeps every smaps."""
    last = writer.next_number - 1
    received = writer.next_number - first
    if not received:
        holds = f"holds {_frames(1, last)}, as before" if last else "holds no frame"
        return f"stopped by {stopped.name} before any capture came: the recording {holds}"
    holds = f"the recording holds {_frames(1, last)} ({received} received by this run)"
    if writer.last_key == last:
        return f"stopped by {stopped.name}: {holds}; frame {last}, its last, keeps every smaps"
    return (f"stopped by {stopped.name}: {holds}; its last with every smaps is frame {writer.last_key} "
            f"(a target's recording takes no last frame: there is no capture of it to take)")
