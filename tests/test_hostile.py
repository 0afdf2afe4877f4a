"""Hostile input (issue #16): the corpus and the churn.  A few hundred damaged, hostile or absurd
inputs (tests/hostile_corpus.py) run through the command line, each in a forked child with a
timeout and a memory bound, and every view run while short-lived processes come and go.  The
single cases, each a bug that was, are test_hostile_captures.py and test_hostile_options.py.
"""

import os
import time

import pytest

pytest.importorskip("zstandard", reason="the corpus has zstd archives: smem[compression]")
import hostile_corpus  # noqa: E402
import hostile_inputs as hc  # noqa: E402
import hostile_runner  # noqa: E402
from conftest import SUMMED_USS_LINE, TESTS

# Its module fixtures are costly: one worker builds them and runs every test here.
pytestmark = [pytest.mark.xdist_group("hostile"), pytest.mark.uses("cpu")]


# -- the corpus ---------------------------------------------------------------------------

#: How far any case's RSS may rise over the runner's, MiB: far above what smem and numpy (and
#: matplotlib, for the charts) take, far below a bomb read whole (250 MiB of smaps, 3 GiB members).
MEMORY_BOUND = 150

#: Cases that fail in files this work does not own, and the fix each needs there.
def _verdict(result):
    """None if smem behaved (exit 0 with warnings at most, or one error line and exit 1 or 2)."""
    if result["timed_out"]:
        return f"hung (killed after {hostile_runner.TIMEOUT:g} s)"
    err = result["stderr"]
    if "Traceback" in err:
        return "traceback: " + err.strip().splitlines()[-1]
    if result["peak_mib"] > MEMORY_BOUND:
        return f"memory rose {result['peak_mib']:.0f} MiB over the runner's"
    lines = err.splitlines()
    if result["code"] == 0:  # (a table of groups says that its USS is summed: a note, no error)
        bad = [line for line in lines if not line.startswith("smem: warning: ") and not line.startswith(SUMMED_USS_LINE.decode())]
        return f"exit 0 but stderr {bad[:2]}" if bad else None
    if result["code"] in (1, 2):
        if len(lines) == 1 and lines[0].startswith("smem: ") and err.endswith("\n"):
            return None
        return f"exit {result['code']} with stderr {lines[:3]}"
    return f"exit {result['code']}: {lines[-1:] if lines else ''}"


def _run_runner(cases, workdir, churn=None):
    import pickle
    import subprocess
    import sys
    requests, answers = os.path.join(workdir, "cases.pickle"), os.path.join(workdir, "results.pickle")
    with open(requests, "wb") as f:
        pickle.dump(([case for _, case in cases], str(workdir)), f)
    command = [sys.executable, str(TESTS / "hostile_runner.py"), requests, answers]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS.parent), str(TESTS)]))
    if churn:
        command += [str(c) for c in churn]
        # in a PID namespace of its own, smem sees only the churn, not every process of the machine
        isolated = ["unshare", "--pid", "--fork", "--mount-proc"] + command
        if subprocess.run(isolated, env=env, cwd=workdir, timeout=600).returncode == 0:
            command = None
    if command:
        subprocess.run(command, check=True, env=env, cwd=workdir, timeout=600)
    with open(answers, "rb") as f:
        return pickle.load(f)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("corpus")
    start = time.monotonic()
    cases = hostile_corpus.make_cases(tmp)
    made = time.monotonic() - start
    results = _run_runner(cases, tmp)
    ran = time.monotonic() - start - made
    names = [name for name, _ in cases]
    assert len(set(names)) == len(names), "case names must be unique"
    return {"cases": dict(zip(names, results)), "argv": {n: c["argv"] for n, c in cases}, "made": made, "ran": ran}


def test_the_corpus_covers_every_compression_cut_and_damaged(corpus):
    """Every archive kind is tried intact, cut and damaged, and bombs of each kind are there: the
    verdicts of the next test speak for all of them (what the corpus cost is printed only)."""
    results = corpus["cases"]
    assert len(results) >= 250
    for kind in hc.KINDS:
        for what in ("intact", "cut at 1", "damaged at 0.5", "garbage after", "twice"):
            assert f"{kind}: {what}" in results, (kind, what)
    assert sum(" bomb: " in name for name in results) >= 4
    assert all(results[f"{kind}: intact"]["code"] == 0 for kind in hc.KINDS), "an intact archive was refused"
    peak = max(r["peak_mib"] for r in results.values())
    slowest = sorted(results, key=lambda n: -results[n]["seconds"])[:3]
    print(f"\n{len(results)} cases: made in {corpus['made']:.1f} s, run in {corpus['ran']:.1f} s, "
          f"peak {peak:.0f} MiB; slowest: " + ", ".join(f"{n} {results[n]['seconds']:.1f} s" for n in slowest))


def test_every_hostile_input_is_exit_0_or_one_error_line(corpus):
    failures = {name: (_verdict(r), corpus["argv"][name]) for name, r in corpus["cases"].items()
                if _verdict(r) is not None}
    assert not failures, "\n".join(f"{name}: {why} (smem {' '.join(map(repr, argv))[:200]})"
                                   for name, (why, argv) in failures.items())


# -- churn --------------------------------------------------------------------------------

#: What smem may say on stderr while processes come and go (nothing else).
KNOWN_WARNINGS = ("smem: warning: ", SUMMED_USS_LINE.decode())


def test_reports_under_churn_exit_0_without_an_error_line(tmp_path):
    """While short-lived processes come and go, each view runs 12 times."""
    runs = [[], ["-m"], ["-u"], ["--exact", "-u"]]
    cases = [(f"{' '.join(args)} #{i}", {"argv": args}) for i in range(12) for args in runs]
    start = time.monotonic()
    results = _run_runner(cases, tmp_path, churn=(30, 1000))
    seconds = time.monotonic() - start
    bad = {}
    for (name, _), result in zip(cases, results):
        lines = result["stderr"].splitlines()
        unknown = [line for line in lines if not line.startswith(KNOWN_WARNINGS)]
        if result["code"] != 0 or unknown or result["timed_out"] or "Traceback" in result["stderr"]:
            bad[name] = (result["code"], lines[-3:])
    seen = sum(r["stdout"].count(b"sleep 0.0") for r in results)
    print(f"\n{len(cases)} runs under churn in {seconds:.1f} s, peak "
          f"{max(r['peak_mib'] for r in results):.0f} MiB, {seen} short-lived processes seen")
    assert not bad, bad
    assert seen > 0, "no run saw the churn"
