#!/usr/bin/env python3
"""The test suite's time (issue 25: ``python -m pytest -q`` in at most 60 s on 2 cores), with the
host's speed measured beside it.

    python3 bench/suite.py                 # 3 runs of the README's test command
    python3 bench/suite.py --runs 5 --markdown

On a virtual machine the host's speed moves: the same commit's suite has taken 66 s and 89 s
within the hour.  So each run is bracketed by a probe, a fixed piece of work of the kinds the
suite does (Python, starting interpreters, reading /proc), and the table gives the suite's CPU
in probe units beside its wall time.  A change of the code moves that figure; a slower host
moves the probe and the suite together and leaves it.  Each run waits (``--quiet-wait``) for
the machine to be quiet first, as bench/run.py's rounds do.  Not a test: nothing here runs
under pytest.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

from measuring import QUIET, wait_for_quiet  # noqa: E402

#: the README's test command
COMMAND = [sys.executable, "-m", "pytest", "-q"]
TARGET = 60.0

#: the probe: pure Python, 20 interpreters started and ended, 4,000 reads of /proc files
PROBE = ("import subprocess, sys\n"
         "s = 0\n"
         "for i in range(3_000_000):\n"
         "    s += i\n"
         "for _ in range(20):\n"
         "    subprocess.run([sys.executable, '-c', 'pass'], check=True)\n"
         "for _ in range(2000):\n"
         "    for name in ('/proc/self/smaps_rollup', '/proc/self/stat'):\n"
         "        with open(name, 'rb') as f:\n"
         "            f.read()\n")


def cpu_of(argv, **kwargs):
    """(wall s, CPU s of the command and every process it waited for, exit status)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, **kwargs)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.monotonic() - start, usage.ru_utime + usage.ru_stime, proc.returncode


def probe():
    return cpu_of([sys.executable, "-c", PROBE], stdout=subprocess.DEVNULL)[1]


def suite_run(out):
    """(wall s, CPU s, exit status, pytest's last line)."""
    with open(out, "wb") as f:
        wall, cpu, status = cpu_of(COMMAND, cwd=REPO, stdout=f, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
    lines = [line for line in Path(out).read_text(errors="replace").splitlines() if line.strip()]
    summary = next((line for line in reversed(lines) if re.search(r"\d+ (passed|failed)", line)), "(no summary)")
    failed = [line.split(" - ")[0] for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return wall, cpu, status, "; ".join([summary.strip("= "), *failed])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quiet-wait", type=float, default=20.0,
                    help="seconds each run may wait for the machine to be quiet (0: never waits)")
    ap.add_argument("--markdown", action="store_true", help="a markdown table, as in docs/benchmarks.md")
    args = ap.parse_args(argv)
    QUIET["max_wait"] = args.quiet_wait
    log = lambda *a, **k: print(*a, file=sys.stderr, flush=True, **k)  # noqa: E731
    rows = []
    with tempfile.TemporaryDirectory(prefix="smem-bench-suite-") as tmp:
        for n in range(1, args.runs + 1):
            if args.quiet_wait:
                wait_for_quiet(log)
            before = probe()
            log(f"run {n}/{args.runs}: {' '.join(COMMAND[1:])} ...")
            wall, cpu, status, summary = suite_run(os.path.join(tmp, f"run{n}.out"))
            after = probe()
            rows.append((n, wall, cpu, before, after, cpu / statistics.mean((before, after)), status, summary))
            log(f"  {wall:.1f} s wall, {cpu:.1f} s CPU, probe {before:.2f} / {after:.2f} s: {summary}")
    head = ["run", "wall s", "CPU s (user + sys)", "probe before / after, CPU s", "suite CPU in probes",
            "exit", "pytest says"]
    body = [[str(n), f"{wall:.1f}", f"{cpu:.1f}", f"{before:.2f} / {after:.2f}", f"{units:.0f}", str(status), summary]
            for n, wall, cpu, before, after, units, status, summary in rows]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in body:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
        for row in [head] + body:
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    walls = [r[1] for r in rows]
    median = statistics.median(walls)
    print(f"\nmedian wall {median:.1f} s (target {TARGET:.0f} s: {'met' if median <= TARGET else 'NOT met'}); "
          f"median CPU {statistics.median(r[2] for r in rows):.1f} s; "
          f"median suite CPU in probes {statistics.median(r[5] for r in rows):.0f}; "
          f"{os.cpu_count()} CPUs; runs started busy: {QUIET['busy_rounds']} of {QUIET['rounds']}")
    return 0 if all(r[6] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
