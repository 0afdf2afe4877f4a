"""The suite in tiers, after CPython's regrtest (``python -m test -u network``): a plain
``python -m pytest -q`` is the developer's quick loop and leaves out (deselects) the tests that
need a costly resource; ``--use RES[,RES...]`` runs those too, ``--use all`` the whole suite (the
README's and CI's command).  What a test needs is decided here alone: from the fixtures it uses
(``FIXTURES``), else from its ``@pytest.mark.uses(...)`` marker (or its module's ``pytestmark``).
tests/conftest.py calls ``leave_out`` from its collection hook and imports the hooks below."""

import collections

import pytest

#: the resources a test may need, and why each is costly
RESOURCES = {
    "browser": "chromium driven through chromedriver: smem html's page drawn, measured, clicked",
    "network": "servers and peers on 127.0.0.1: smem serve, TCP listeners and captures, ssh",
    "shells": "scripts/smemcap.sh run under dash, busybox and a bare PATH, each capture whole",
    "charts": "matplotlib: pie and bar charts drawn in every format",
    "cpu": "seconds of CPU or of waiting: workloads of many processes, much memory, corpora, timers",
}

#: a fixture that needs a resource; a test needs it when the fixture is among ``item.fixturenames``
#: (which holds the fixtures the test's fixtures use, too)
FIXTURES = {
    "_chromium": "browser",  # tests/page_browser.py: the worker's chromium
    "shell": "shells",  # tests/smemcap_shells.py: one way of running the script, per module
    "pid_namespace": "cpu",  # a PID namespace, processes started in it and captures of them
    "zram_swap": "cpu",  # a zram device swapped on, and pages pushed out to it
}

_LEFT_OUT = pytest.StashKey[collections.Counter]()


def pytest_addoption(parser):
    parser.addoption("--use", action="append", default=[], metavar="RES[,RES...]",
                     help="also run the tests that need these resources: %s; all: every test (the "
                          "README's and CI's command); all,-browser: every test but the browser's"
                          % ", ".join(RESOURCES))


def pytest_configure(config):
    config.stash[_LEFT_OUT] = collections.Counter()
    enabled(config)  # a misspelt resource is an error before anything is collected


def enabled(config):
    """The resources ``--use`` asks for: names, ``all``, and ``-name`` to take one away again."""
    chosen = set()
    for word in (w.strip() for value in config.getoption("use") for w in value.split(",")):
        name = word.lstrip("-")
        if name not in (*RESOURCES, "all"):
            raise pytest.UsageError(f"--use {word}: no such resource (choose from {', '.join(RESOURCES)} or all)")
        names = set(RESOURCES) if name == "all" else {name}
        chosen = chosen - names if word.startswith("-") else chosen | names
    return frozenset(chosen)


def needs(item):
    """The resources the test ``item`` needs: its fixtures', and its uses markers'."""
    wanted = {FIXTURES[f] for f in item.fixturenames if f in FIXTURES}
    for mark in item.iter_markers("uses"):
        unknown = set(mark.args) - set(RESOURCES)
        if unknown or not mark.args:
            raise pytest.UsageError(f"{item.nodeid}: uses{mark.args}: no such resource "
                                    f"(choose from {', '.join(RESOURCES)})")
        wanted.update(mark.args)
    return frozenset(wanted)


def leave_out(config, items):
    """Deselect, in place, the tests that need a resource ``--use`` did not ask for; counted by
    resource for the line under the run.  A file or test named on the command line is no
    exception: the line says how to run it."""
    given = enabled(config)
    kept, left = [], []
    for item in items:
        (kept if needs(item) <= given else left).append(item)
    if not left:
        return
    counts = config.stash[_LEFT_OUT]
    for item in left:
        counts.update(needs(item) - given)
    counts["tests"] += len(left)
    items[:] = kept
    config.hook.pytest_deselected(items=left)
    if hasattr(config, "workeroutput"):  # an xdist worker: the controller says the line
        config.workeroutput["left_out"] = dict(counts)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist's controller: each worker collected the same tests and left out the same ones."""
    counts = getattr(node, "workeroutput", {}).get("left_out")
    if counts:
        left = node.config.stash[_LEFT_OUT]
        left.clear()
        left.update(counts)


def pytest_terminal_summary(terminalreporter, config):
    counts = config.stash.get(_LEFT_OUT, None)
    if not counts:
        return
    counts = collections.Counter(counts)
    tests = counts.pop("tests")
    names = [name for name in RESOURCES if counts[name]]
    terminalreporter.write_line(
        f"{tests} test{'s' * (tests != 1)} that need {', '.join(names)} not run: "
        f"--use {','.join(names)} runs them, --use all every test (CI does)")
