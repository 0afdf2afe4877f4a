"""How a signal stops ``smem record`` of this machine: at once, then after one last key frame.

A recording is read at its end (a page of it opens there, ``-m`` of it reads it), and only a
key frame has every smaps: without a last one, a recording stopped by a signal opened on the
key frame before, up to an hour older.  So SIGINT (Ctrl-C), SIGTERM and SIGHUP raise
:class:`Stopped` wherever the recorder is (waiting, reading a capture, writing a frame's files
under temporary names: nothing the index names is touched), the frame under way is dropped,
and the recorder takes one last key frame of the machine now.  A second signal raises Stopped
again: that frame is dropped too, and what the index names is still whole.  Later ones are
ignored (the exit is under way).

Two places hold a signal instead of raising it: :meth:`StopSignals.held`, while a frame is
named in the index and counted (raised there, it could leave a line cut short, or a frame
numbered but not counted, before the last frame's line: an index the reader refuses), raised
as soon as that is done; and the stretch from one Stopped raised to :meth:`StopSignals.resume`
(the last frame begun), so that a second signal cannot land in the handling of the first.

Raised where it cannot leave (a ``__del__``, a generator closed by the collector: Python prints
"Exception ignored" and goes on), Stopped would be lost, and the recorder record on for ever;
:meth:`StopSignals.check`, at each frame, raises it again.
"""

import contextlib
import signal

from ..sigint_ignored import sigint_ignored_line

__all__ = ["Stopped", "StopSignals"]

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(BaseException):
    """A signal that stops the recording (a BaseException: no reader's ``except Exception`` keeps it)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self):
        return signal.Signals(self.signum).name

    @property
    def exit_status(self):
        """0 for Ctrl-C (the usual end of an open-ended recording, not a failure), else 128 + the
        signal's number, as smem.cli exits on SIGTERM and SIGHUP."""
        return 0 if self.signum == signal.SIGINT else 128 + self.signum


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP made :class:`Stopped` while in this context (one left ignored,
    by a script's ``&``, or SIGHUP by nohup, stays ignored); the handlers before restored after."""

    def __init__(self):
        self._received_count = 0
        self._holding = False
        self._paused = False
        self._pending = []  # (in the order received: two may come while one is held)
        self._unhandled = None  # the signal of the latest Stopped raised, until resume() says it was met
        self._before = {}
        self.ignored = []  # (those left ignored)

    def __enter__(self):
        for signum in SIGNALS:
            before = signal.getsignal(signum)
            if before == signal.SIG_IGN:
                self.ignored.append(signum)
                continue
            self._before[signum] = signal.SIG_DFL if before is None else before
            signal.signal(signum, self._received)
        return self

    def __exit__(self, *exc):
        for signum, before in self._before.items():
            signal.signal(signum, before)

    def _received(self, signum, frame):
        self._received_count += 1
        if self._received_count > 2:
            return
        if self._holding or self._paused:
            self._pending.append(signum)
        else:
            self._raise(signum)

    def _raise(self, signum):
        self._paused = True
        self._unhandled = signum
        raise Stopped(signum)

    def check(self):
        """Raise again a Stopped that never reached the recorder (see the module's docstring)."""
        if self._unhandled is not None:
            self._raise(self._unhandled)

    def _release(self):
        if self._pending and not self._paused:
            self._raise(self._pending.pop(0))

    @contextlib.contextmanager
    def held(self):
        """Signals received inside are raised once the body is done (not if it raised): the first
        then, a second at :meth:`resume`, each as the signal it was."""
        self._holding = True
        try:
            yield
        finally:
            self._holding = False
        self._release()

    def ignored_line(self):
        """The line a recorder says at its start where SIGINT was left ignored: Ctrl-C and ``kill
        -INT`` then do nothing, which looked like a hang; None otherwise (nohup's SIGHUP is meant)."""
        return sigint_ignored_line("this recording") if signal.SIGINT in self.ignored else None

    def resume(self):
        """Signals raised again: the next received since the last was raised, now."""
        self._paused = False
        self._unhandled = None
        self._release()

    def pause(self):
        """Signals held until :meth:`resume` (none comes: the exit is under way)."""
        self._paused = True
