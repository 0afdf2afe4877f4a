"""The terminal of watch mode: redrawn in place, keys read without waiting, given back as found.

Drawing uses ECMA-48 control sequences that every terminal since the VT100
understands: CSI H (cursor home), CSI K (erase to the end of the line), CSI J
(erase below), and DEC's CSI ?25l / CSI ?25h (hide / show the cursor).  Each
frame overwrites the one before line by line, without clearing first, so
nothing flickers; the last frame stays on the screen when smem ends, as top's
does.  Keys are read in cbreak mode (termios(3): no echo, no line editing; the
signal keys still work, so Ctrl-C interrupts) with select(2), and only when
standard input is a terminal.  The terminal's modes are restored however smem
ends: q, --count, Ctrl-C, SIGTERM or SIGHUP (smem.cli.main unwinds on those).
"""

import os
import select
import time
import unicodedata

__all__ = ["Screen", "cut_to_columns"]

HOME, ERASE_LINE, ERASE_BELOW, CLEAR = "\x1b[H", "\x1b[K", "\x1b[J", "\x1b[H\x1b[2J"
HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"


class Screen:
    """A terminal on ``out_fd`` written through ``write`` (text), with keys from ``keys_fd``
    (None: no keys, frames only).  A context manager: the terminal is set up on entry and
    restored on exit."""

    def __init__(self, write, out_fd, keys_fd=None):
        self._write = write
        self._out_fd = out_fd
        self._keys_fd = keys_fd    # None once the terminal hung up: no more keys
        self._restore_fd = keys_fd  # the terminal whose modes are put back on exit
        self._saved = None

    def __enter__(self):
        if self._keys_fd is not None:
            import termios
            import tty
            try:
                self._saved = termios.tcgetattr(self._keys_fd)
                tty.setcbreak(self._keys_fd, termios.TCSANOW)
            except termios.error:
                self._saved = self._keys_fd = self._restore_fd = None
        self._write(HIDE_CURSOR + CLEAR)
        return self

    def __exit__(self, *exc):
        try:
            self._write(SHOW_CURSOR + "\n")  # the prompt comes under the last frame
        finally:
            if self._saved is not None:
                import termios
                try:
                    termios.tcsetattr(self._restore_fd, termios.TCSADRAIN, self._saved)
                except (termios.error, OSError):
                    pass  # the terminal hung up: nobody is left to see its modes
        return False

    @property
    def has_keys(self):
        return self._keys_fd is not None

    def size(self):
        """(columns, lines) of the terminal now (it may have been resized), 80x24 where it
        cannot say (a pseudo-terminal nobody sized says 0x0)."""
        try:
            size = os.get_terminal_size(self._out_fd)
        except OSError:
            return 80, 24
        return size.columns or 80, size.lines or 24

    def draw(self, lines):
        """Show ``lines`` from the top, each cut to the width (one column spare: writing the last
        column leaves a wrap pending that erasing the line would act on) and as many as fit."""
        columns, rows = self.size()
        shown = [cut_to_columns(line, max(columns - 1, 1)) for line in lines[:rows]]
        self._write(HOME + (ERASE_LINE + "\n").join(shown) + ERASE_LINE + ERASE_BELOW)

    def keys(self, timeout):
        """The keys pressed, returning at the first within ``timeout`` seconds ("" if none)."""
        timeout = max(timeout, 0.0)
        if self._keys_fd is None:
            time.sleep(timeout)
            return ""
        ready, _, _ = select.select([self._keys_fd], [], [], timeout)
        if not ready:
            return ""
        data = os.read(self._keys_fd, 64)
        if not data:  # the terminal hung up: frames go on, without keys
            self._keys_fd = None
        return data.decode("latin-1")


def cut_to_columns(line, columns):
    """``line`` cut to what fits in ``columns`` terminal columns.  A wide character (CJK, most
    emoji: East Asian Width W or F) takes two, a combining mark or format character none; cut by
    characters, a name of wide ones was twice the width, wrapped, and scrolled the frame."""
    if line.isascii():
        return line[:columns]
    used = 0
    for i, c in enumerate(line):
        if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf"):
            continue
        used += 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
        if used > columns:
            return line[:i]
    return line
