"""The hostile corpus's runner itself: a case that exits, crashes or hangs is reported as such and
the cases after it still run; what a case changes does not reach the next; each peak is its own.

Why: the runner's children run many cases each, so a verdict is only worth what the runner's
isolation of one case from the next is worth.  smem.cli.main is replaced, in the runner before
it forks, by a command that misbehaves on purpose.
"""

import os
import pickle
import subprocess
import sys

import pytest

from conftest import TESTS

pytestmark = pytest.mark.uses("cpu")

DRIVER = """
import os, pickle, signal, sys, time, warnings
import hostile_runner, smem.cli

def main(argv):
    what = argv[0]
    if what == "exit":
        os._exit(3)
    if what == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if what == "hang":
        time.sleep(60)
    if what == "warn":
        warnings.warn("said each time")
    if what == "memory":
        block = bytearray(200 << 20)
        block[::4096] = b"x" * len(block[::4096])
    if what == "change":
        os.environ["LEFT"] = "1"
        os.umask(0o077)
        os.chdir("/")
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        warnings.simplefilter("ignore")
        sys.stdout = None
    if what == "state":
        print(os.environ.get("LEFT"), oct(os.umask(0o022)), os.path.basename(os.getcwd()),
              signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL, len(warnings.filters) > 0)
    sys.exit(int(argv[1]) if len(argv) > 1 else 0)

hostile_runner.TIMEOUT = float(sys.argv[3])
smem.cli.main = main
with open(sys.argv[1], "rb") as f:
    cases, workdir = pickle.load(f)
with open(sys.argv[2], "wb") as f:
    pickle.dump(hostile_runner.serve(cases, workdir), f)
"""


def _serve(argvs, tmp_path, timeout=1.0):
    """The runner's results for ``argvs``; a case is given up after ``timeout`` s (short, for the
    hang; long where a case does real work and a busy machine must not cut it short)."""
    requests, answers = tmp_path / "cases.pickle", tmp_path / "results.pickle"
    requests.write_bytes(pickle.dumps(([{"argv": argv} for argv in argvs], str(tmp_path))))
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS.parent), str(TESTS)]))
    subprocess.run([sys.executable, str(driver), str(requests), str(answers), str(timeout)], check=True, env=env,
                   cwd=tmp_path, timeout=120)
    return pickle.loads(answers.read_bytes())


def test_exits_crashes_and_hangs_are_reported_and_the_rest_still_run(tmp_path):
    argvs = [["ok", "2"], ["exit"], ["ok", "1"], ["segv"], ["ok"], ["hang"], ["ok", "4"]] + [["ok"]] * 6
    results = _serve(argvs, tmp_path)
    assert [r["code"] for r in results] == [2, 3, 1, -11, 0, -9, 4] + [0] * 6
    assert [r["timed_out"] for r in results] == [False] * 5 + [True] + [False] * 7


def test_what_a_case_changes_does_not_reach_the_next(tmp_path):
    results = _serve([["state"]] + [["warn"], ["change"], ["warn"], ["state"]] * 4, tmp_path)
    assert [r["code"] for r in results] == [0] * len(results), [r["stderr"] for r in results]
    fresh = results[0]["stdout"]
    assert fresh.startswith(b"None ") and fresh.endswith(b" True True\n"), fresh
    assert [r["stdout"] for r in results[4::4]] == [fresh] * 4
    assert all("UserWarning: said each time" in r["stderr"] for r in results[1::2])


def test_each_case_peak_is_its_own(tmp_path):
    # (each child has one; 200 MiB touched takes a second or more on a loaded machine)
    results = _serve([["ok"], ["memory"], ["memory"]] + [["ok"]] * 6, tmp_path, timeout=60)
    assert not [r for r in results if r["timed_out"]]
    assert min(results[1]["peak_mib"], results[2]["peak_mib"]) > 150
    assert max(r["peak_mib"] for r in results[:1] + results[3:]) < 30
