"""The -P/-U/-M filters (smem/selection.py): -M's verdict on a mapping name is kept, so a name
that every process maps is searched once, and what is kept stays bounded."""

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from smem import selection
from smem.selection import Selection


def test_a_kept_verdict_is_the_searchs(monkeypatch):
    monkeypatch.setattr(selection, "MATCHES_KEPT", 4)
    pattern = Selection(mapping=r"lib|heap|\(deleted\)$").mapping
    names = ["/usr/lib/x86_64-linux-gnu/libc.so.6", "[heap]", "[stack]", "/memfd:x (deleted)", "", "[vdso]",
             "/opt/app/bin/app", "/dev/shm/lib (deleted) x"] * 3
    want = [re.search(r"lib|heap|\(deleted\)$", name) is not None for name in names]
    assert [pattern.matches(name) for name in names] == want
    assert len(pattern._found) <= 4  # (dropped when full: the rest searched again, as the first time)


def test_mapping_filter_gives_what_a_search_of_each_mapping_gives():
    """-M over a capture: the mappings kept are those whose name the pattern is found in."""
    from conftest import FIXTURES
    from smem.loading import load_reading
    from smem.model import Need, Needs
    from smem.sources import open_source
    source = open_source(str(FIXTURES / "captures" / "faithful.tar.gz"))
    try:
        every = load_reading(source, Selection(), needs=Needs(Need.MAPPINGS, None))
        kept = load_reading(source, Selection(mapping="lib|heap"), needs=Needs(Need.MAPPINGS, None))
    finally:
        source.close()
    want = {p.pid: [m.name for m in p.mappings if re.search("lib|heap", m.name)] for p in every.processes}
    got = {p.pid: [m.name for m in p.mappings] for p in kept.processes}
    assert got == {pid: names for pid, names in want.items() if pid in got} and sum(map(len, got.values())) > 50


def test_a_user_filter_naming_a_colon_is_matched_against_name_uid_too():
    """-U's pattern is tried on ``name:uid`` (-u's label of a uid sharing its name) only where it
    names a colon (in a conditional group's branch too); one that merely can match a colon or a uid
    (., \\W, (?:x), [^:], 0) is matched against names alone, as before."""
    for pattern, uid_1, uid_65534 in [("nobody:1", True, False), ("^nobody:65534$", False, True),
                                      ("[:]", True, True), (r"y\:6", False, True), ("(a|y:)+1", True, False),
                                      (r"\W", False, False), (".1", False, False), ("(?:y1)", False, False),
                                      ("[^:a]1", False, False), ("0", False, False), ("^nobody$", True, True),
                                      ("(y)?(?(1):|b)1", True, False), ("(y)?(?(1)b|:)1", True, False)]:
        chosen = Selection(user=pattern)
        assert (chosen.wants_user("nobody", 1), chosen.wants_user("nobody", 65534)) == (uid_1, uid_65534), pattern


def _runs(python):
    """Whether ``python`` starts (a pyenv shim names versions that are not selected)."""
    try:
        return subprocess.run([python, "-c", "pass"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _older_python(minor):
    """Python 3.``minor`` where this machine has it: on PATH, or installed by pyenv (whose shims
    run only the versions selected); None where it has none."""
    candidates = [shutil.which(f"python3.{minor}")] + sorted(
        glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor}.*/bin/python3.{minor}")))
    return next((c for c in candidates if c and _runs(c)), None)


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("minor", [9, 10])
def test_a_filter_is_checked_on_the_oldest_pythons_smem_supports(minor):
    """pyproject says Python 3.9+: the checks that read a pattern through re's own parser (a
    repeat count, a colon) find it where it was before 3.11 (sre_parse), not only at re._parser."""
    python = _older_python(minor)
    if python is None:
        pytest.skip(f"no Python 3.{minor} on this machine")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from smem.selection import Selection; "
            "from smem.errors import UsageError\n"
            "s = Selection(user='nobody:1'); print(s.wants_user('nobody', 1), s.wants_user('nobody', 2))\n"
            "s = Selection(user='(y)?(?(1)b|:)1'); print(s.wants_user('nobody', 1))\n"
            "for p in ('a{99999}', '(a)?(?(1)b|a{10001})'):\n"
            " try:\n  Selection(user=p)\n except UsageError as e:\n  print('refused')")
    done = subprocess.run([python, "-c", code, str(Path(__file__).resolve().parent.parent)],
                          capture_output=True, text=True, timeout=60)
    if "No module named" in done.stderr and "smem" not in done.stderr.split("No module named")[-1]:
        pytest.skip(f"{python}: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "True", "refused", "refused"]
