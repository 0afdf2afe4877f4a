"""A SIGINT that what started smem left ignored stays ignored, and a long-running command says so.

A shell without job control (a script's ``smem record ... &``, ``smem serve ... &``) starts its
background jobs with SIGINT ignored, so that the script's Ctrl-C does not reach them; a program
keeps it so, as every program does.  Ctrl-C and ``kill -INT`` then do nothing, which looked like
a hang: each command that runs until stopped (record, capture --listen, -S tcp://, serve, watch)
says it once at its start, in these words, and how to stop it instead.
"""

import signal

__all__ = ["sigint_ignored", "sigint_ignored_line"]


def sigint_ignored():
    """Whether SIGINT is ignored now (what started smem left it so: nothing in smem ignores it)."""
    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def sigint_ignored_line(what):
    """The line said where SIGINT is ignored (``what``: what it does not stop, "this recording"),
    None where it is not."""
    if not sigint_ignored():
        return None
    return (f"SIGINT is ignored, as what started smem left it (a script's &): Ctrl-C and kill -INT "
            f"do not stop {what}; SIGTERM does")
