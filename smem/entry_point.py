"""The ``smem`` command's entry point (pyproject's script, ``python -m smem``).

Importing the command line takes a tenth of a second; a Ctrl-C in it (someone who typed smem
and thought better of it) printed Python's traceback.  Here it exits 130 quietly, as a Ctrl-C
does once smem.cli.main runs."""

import sys

__all__ = ["main"]


def main():
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        sys.exit(130)
    return run()
