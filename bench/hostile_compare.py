"""One-off check that two hostile-corpus runners give the same answers: every case's exit status,
stdout (its start), stderr and verdict, on one corpus built once.

Why: the pooled runner runs many cases in one child; a state a case leaves behind in smem or
in the child (a cache, a warning shown once, a stream's buffer) would show as a difference here.

    python bench/hostile_compare.py OLD_RUNNER.py NEW_RUNNER.py [ROUNDS]

Runs OLD, NEW, OLD, NEW... ROUNDS times each (default 1), prints the differences and each run's
CPU (children's user + sys), and the largest peak_mib difference (peaks are not compared: a
case's RSS varies run to run).
"""

import os
import pickle
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests")
sys.path[:0] = [TESTS, os.path.dirname(TESTS)]

import hostile_corpus as hc  # noqa: E402
from test_hostile import _verdict  # noqa: E402


def run(runner, requests, workdir):
    answers = os.path.join(workdir, "results.pickle")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(TESTS), TESTS]))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, runner, requests, answers], check=True, env=env, cwd=workdir, timeout=900)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(answers, "rb") as f:
        results = pickle.load(f)
    return results, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main(argv):
    old, new = argv[0], argv[1]
    rounds = int(argv[2]) if len(argv) > 2 else 1
    workdir = tempfile.mkdtemp(prefix="hostile-compare-")
    cases = hc.make_cases(__import__("pathlib").Path(workdir))
    requests = os.path.join(workdir, "cases.pickle")
    with open(requests, "wb") as f:
        pickle.dump(([case for _, case in cases], workdir), f)
    names = [name for name, _ in cases]
    runs = {old: [], new: []}
    for _ in range(rounds):
        for runner in (old, new):
            results, cpu = run(runner, requests, workdir)
            runs[runner].append(results)
            print(f"{runner}: {len(results)} cases, children's CPU {cpu:.2f} s", flush=True)
    reference = runs[old][0]
    differences = 0
    for runner, results_list in runs.items():
        for k, results in enumerate(results_list):
            for name, a, b in zip(names, reference, results):
                for key in ("code", "stdout", "stderr", "timed_out"):
                    if a[key] != b[key]:
                        differences += 1
                        print(f"DIFF {runner}#{k} {name}: {key}: {a[key]!r:.300} != {b[key]!r:.300}")
                if _verdict(a) != _verdict(b):
                    differences += 1
                    print(f"DIFF {runner}#{k} {name}: verdict {_verdict(a)!r} != {_verdict(b)!r}")
    gaps = sorted(((b["peak_mib"] - a["peak_mib"], name, a["peak_mib"], b["peak_mib"])
                   for name, a, b in zip(names, reference, runs[new][0])), reverse=True)
    for gap, name, a, b in gaps[:5] + gaps[-3:]:
        print(f"peak_mib {name}: {a:.1f} (old) {b:.1f} (new)")
    gap = max(abs(a["peak_mib"] - b["peak_mib"]) for a, b in zip(reference, runs[new][0]))
    top = max(reference, key=lambda r: r["peak_mib"])["peak_mib"], max(r["peak_mib"] for r in runs[new][0])
    print(f"{len(names)} cases, {differences} differences; largest peak_mib gap {gap:.1f} MiB, "
          f"highest peak {top[0]:.1f} (old) / {top[1]:.1f} (new) MiB")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
