"""What starting a plain report imports: only what it uses.  Every run of `smem` pays for each
module imported at start (`bench/run.py --only startup`); the modules below serve other options
(--wss, a device column, <Tab> completion, a page's host) and were imported by every report until
they were made lazy.  One import moved back to a module's top would undo that without a word."""

import os
import subprocess
import sys

from conftest import FIXTURES, TESTS

CHECKOUT = TESTS.parent

#: modules a plain report of a capture or of this machine has no use for
NOT_AT_START = ("smem.working_set", "smem.parsers.drm_fdinfo", "smem.parsers.dmabuf_fdinfo",
                "smem.parsers.dmabuf_buffers", "click.shell_completion", "socket", "mmap")

_RUN = """
import sys
from smem.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("\\n" + " ".join(sorted(m for m in {names!r} if m in sys.modules)), file=sys.stderr)
"""


def _imported(*args):
    code = _RUN.format(names=NOT_AT_START)
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, cwd=CHECKOUT,
                          stdin=subprocess.DEVNULL, timeout=120, env=dict(os.environ, PYTHONPATH=str(CHECKOUT)))
    assert proc.stdout, proc.stderr  # (the report was printed: it ran to its end)
    return proc.stderr.decode().splitlines()[-1].split()


def test_a_report_of_a_capture_imports_none_of_them():
    assert _imported("-S", str(FIXTURES / "captures" / "faithful.tar.gz"), "-t", "-k") == []


def test_a_report_of_this_machine_imports_none_of_them():
    assert _imported("--pid", str(os.getpid())) == []
