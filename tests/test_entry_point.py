"""`python -m smem` as a separate process prints what the tests' in-process runs capture.

Most tests run the command line in the pytest process (conftest.run_smem); this
checks that assumption against the real entry point, byte for byte: stdout,
stderr and exit status, for reports, errors, help and a capture on stdin.
"""

import gzip

import pytest

from conftest import FIXTURES, run_smem, run_smem_process

pytestmark = pytest.mark.process

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"

CASES = [
    ["-S", CAPTURE],
    ["-S", CAPTURE, "-m", "-t", "-k"],
    ["-S", CAPTURE, "-u", "-p"],
    ["-S", CAPTURE, "-w"],
    ["-S", CAPTURE, "-a", "-c", "pid command"],     # the terminal width: none, behind a pipe
    ["-S", CAPTURE, "-F", "json", "-c", "pid pss"],
    ["-S", CAPTURE, "-c", "pid bogus"],             # exit 2, the known fields on stderr
    ["-S", FIXTURES / "no-such-capture.tgz"],       # exit 1, one line
    ["--no-such-option"],
    ["--help"],
    ["capture", "--help"],
    ["--version"],
]


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(str(x) for x in a).replace(str(FIXTURES), ""))
def test_in_process_runs_are_the_commands_output(args):
    command, in_process = run_smem_process(*args), run_smem(*args)
    assert (command.returncode, command.stdout, command.stderr) == (
        in_process.returncode, in_process.stdout, in_process.stderr)


@pytest.mark.uses("cpu")
def test_a_capture_on_stdin_too():
    data = gzip.compress(gzip.decompress(CAPTURE.read_bytes()))
    command = run_smem_process("-S", "-", "-w", input=data)
    assert command.returncode == 0 and command.stdout
    assert command.stdout == run_smem("-S", "-", "-w", input=data).stdout


#: Python that delivers a real SIGINT to itself as the command line's module starts to import,
#: then starts smem as its console script does
INTERRUPTED_START = """import os, signal, sys
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "smem.cli":
            os.kill(os.getpid(), signal.SIGINT)
sys.meta_path.insert(0, Interrupt())
from smem.entry_point import main
sys.exit(main())
"""


def test_ctrl_c_while_smem_starts_is_exit_130_and_nothing_else():
    """A Ctrl-C in the tenth of a second smem takes to import printed Python's traceback; it is
    exit 130 and nothing on stderr, as it is once the command runs."""
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-c", INTERRUPTED_START, "--version"], capture_output=True,
                          stdin=subprocess.DEVNULL, cwd=FIXTURES.parent.parent, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (130, b"", b"")
