"""The suite in tiers (tests/resource_tiers.py): a plain ``pytest`` leaves out the tests that need a
costly resource, ``--use NAME`` brings those back, ``--use all`` runs every test."""

import re
import subprocess
import sys

import pytest

import resource_tiers
from conftest import TESTS

#: files of the real suite: one of browser tests, one of network tests, one of both kinds
#: (quick tests and tests that need cpu or charts)
FILES = ["tests/test_page_browser.py", "tests/test_http_app.py", "tests/test_diff.py"]


def _collect(*use):
    """The node ids pytest collects from FILES with ``use`` and its last line."""
    return subprocess.Popen([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
                             *(f"--use={u}" for u in use), *FILES], cwd=TESTS.parent, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _ids(proc):
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    return {line for line in lines if "::" in line}, "\n".join(lines)


def test_each_tier_holds_the_one_below_and_all_holds_every_test():
    runs = {name: _collect(*use) for name, use in
            {"quick": (), "browser": ("browser",), "all": ("all,-browser", "browser")}.items()}
    (quick, quick_said), (browser, browser_said), (every, every_said) = map(_ids, runs.values())
    assert quick < browser < every
    assert {i for i in browser - quick if not i.startswith("tests/test_page_browser.py")} == set()
    assert {i for i in every - browser if i.startswith("tests/test_page_browser.py")} == set()
    assert any(i.startswith("tests/test_diff.py") for i in quick), "the quick tests of a mixed file stay"
    assert re.search(rf"\n{len(every)} tests collected in ", every_said) and "deselected" not in every_said
    assert re.search(rf"\n{len(quick)}/{len(every)} tests collected \({len(every) - len(quick)} deselected\)", quick_said)
    assert f"\n{len(every) - len(quick)} tests that need browser, network, cpu not run: --use browser,network,cpu " \
        "runs them, --use all every test (CI does)" in quick_said
    assert "tests that need" not in every_said


def test_a_resource_misspelt_is_one_usage_line():
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
                           "--use", "browser,netwrok", FILES[0]], cwd=TESTS.parent, capture_output=True, timeout=120)
    assert proc.returncode == 4
    assert "--use netwrok: no such resource (choose from browser, network, shells, charts, cpu or all)" in \
        proc.stderr.decode()


def test_no_test_of_this_run_needs_a_resource_it_was_not_given(request):
    """In this very run: what ran is what --use allows, and without --use browser no test asks for
    chromium."""
    enabled = resource_tiers.enabled(request.config)
    for item in request.session.items:
        assert resource_tiers.needs(item) <= enabled, item.nodeid
        if "browser" not in enabled:
            assert "_chromium" not in item.fixturenames, item.nodeid
