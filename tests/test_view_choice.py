"""How the command line chooses a view: the flags come from the view registry (smem.views), the
rules between them are the registry's, and a new view is its own module and one registry entry."""

import re
import subprocess
import sys

import pytest

import smem.cli
from smem.errors import UsageError
from smem.views import VIEWS, choices, chosen_view, view_flags

from conftest import FIXTURES, TESTS, run_smem

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


@pytest.mark.parametrize("given,view", [
    ({}, "process"),
    ({"mappings": True}, "mapping"),
    ({"users": True}, "user"),
    ({"system": True}, "system"),
    ({"by_cgroup": True}, "cgroup"),
    ({"group_by_name": True}, "program"),
    ({"group": "name"}, "program"),
    ({"shared_memory": True}, "shm"),
    ({"shared_with": True}, "sharing"),
    ({"system": True, "breakdown": True}, "breakdown"),
])
def test_the_flags_choose_their_view(given, view):
    assert chosen_view(given) == view


@pytest.mark.parametrize("given,message", [
    ({"mappings": True, "users": True}, "choose one view: -m, -u, -w, --cgroup, -g or --shm (-m and -u given)"),
    ({"group": "name", "shared_memory": True}, "choose one view: -m, -u, -w, --cgroup, -g or --shm "
                                               "(-g and --shm given)"),
    ({"shared_with": True, "system": True}, "--shared-with lists processes: it does not combine with -w"),
    ({"breakdown": True}, "--breakdown accounts for all of MemTotal: use it with -w"),
    ({"breakdown": True, "mappings": True}, "--breakdown accounts for all of MemTotal: use it with -w"),
    ({"breakdown": True, "shared_with": True}, "--breakdown accounts for all of MemTotal: use it with -w"),
])
def test_flags_that_do_not_combine_are_a_usage_error(given, message):
    with pytest.raises(UsageError) as raised:
        chosen_view(given)
    assert str(raised.value) == message


def _view_params(command):
    dests = {flag.dest for flag in view_flags()}
    return [(p.name, tuple(p.opts)) for p in command.params if p.name in dests]


def test_the_commands_view_options_are_the_registrys():
    assert _view_params(smem.cli.report) == [(f.dest, f.decls) for f in view_flags()]
    assert _view_params(smem.cli.diff) == [(f.dest, f.decls) for f in view_flags(compared=True)]
    others = {p.name for p in smem.cli.report.params} - {f.dest for f in view_flags()}
    assert len(others) + len(view_flags()) == len(smem.cli.report.params)  # no flag's name taken twice


@pytest.mark.parametrize("module", ["cli.py", "cli_options.py"])
def test_the_registry_is_the_only_list_of_view_flags(module):
    """The command line names no view flag, by its spelling or by the parameter click gives it
    (what a view implies, as --shared-with --exact, is the view's trait): adding a view never
    edits it."""
    text = (TESTS.parent / "smem" / module).read_text()
    for flag in view_flags():
        for name in flag.decls + (flag.dest,):
            assert not re.search(rf"""["']{re.escape(name)}["']""", text), name


@pytest.mark.uses("cpu")
def test_nothing_outside_views_switches_on_a_views_name():
    """A view's name is what outputs call it; what a layer does with a view follows its traits, so a
    comparison of ``<...view...>.name`` outside smem/views/ is a view switched on by name."""
    import ast
    found = []
    for path in (TESTS.parent / "smem").rglob("*.py"):
        if "views" in path.relative_to(TESTS.parent / "smem").parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                for side in (node.left, *node.comparators):
                    if (isinstance(side, ast.Attribute) and side.attr == "name"
                            and "view" in ast.unparse(side.value).lower()):
                        found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_smem_diff_offers_the_flags_of_the_views_it_can_compare():
    for name, chosen_by in choices().items():
        if chosen_by.flags:
            assert chosen_by.compared == (VIEWS[name].comparison.row_key is not None), name


@pytest.mark.uses("cpu")
def test_breakdown_is_a_view_of_its_own_and_imports_no_other_system_view():
    """-w --breakdown is the breakdown view; both system views stand on system_areas, not on each other."""
    from test_import_graph import import_graph
    graph = import_graph()
    assert "smem.views.breakdown" not in graph["smem.views.system"]
    assert "smem.views.system" not in graph["smem.views.breakdown"]
    shown = run_smem("-S", CAPTURE, "-w", "--breakdown", "-c", "area used", "-H", check=True).stdout.decode()
    assert any(line.split()[:1] == ["unexplained"] for line in shown.splitlines())
    plain = run_smem("-S", CAPTURE, "-w", "-c", "area used", "-H", check=True).stdout.decode()
    assert "unexplained" not in plain


_TOY = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("smem.views.toy", {str(FIXTURES / "toy_view" / "toy.py")!r})
toy = importlib.util.module_from_spec(spec)
sys.modules["smem.views.toy"] = toy
spec.loader.exec_module(toy)
import smem.views as views
from smem.views.choice import ViewFlag as flag, by
views._WHERE["toy"] = ("toy", "TOY_VIEW", by(flag(("--toy",), "toy", "Show the toys.")))  # the one registry line
from smem.cli import main
main(sys.argv[1:])
"""


def _with_toy(*args):
    return subprocess.run([sys.executable, "-c", _TOY, *map(str, args)], capture_output=True, cwd=TESTS.parent,
                          timeout=120)


@pytest.mark.uses("cpu")
def test_a_new_view_is_its_own_module_and_one_registry_entry():
    """A view smem does not have, added as its module and one entry of the registry: the command
    line offers its flag, chooses it, refuses it beside another view, compares it and reports it."""
    helped = _with_toy("--help")
    assert helped.returncode == 0 and b"--toy" in helped.stdout and b"Show the toys." in helped.stdout
    shown = _with_toy("-S", CAPTURE, "--toy", "-t")
    assert shown.returncode == 0, shown.stderr
    header, *rows, _, total = shown.stdout.decode().splitlines()
    assert header.split() == ["PID", "Twice"]
    pss = run_smem("-S", CAPTURE, "-c", "pid pss", "-H", check=True).stdout.decode().split()
    assert {r.split()[0]: int(r.split()[1]) for r in rows} == {pid: 2 * int(v) for pid, v in zip(pss[::2], pss[1::2])}
    both = _with_toy("-S", CAPTURE, "--toy", "-m")
    assert both.returncode == 2 and b"choose one view: -m, -u, -w, --cgroup, -g, --shm or --toy" in both.stderr
    compared = _with_toy("diff", CAPTURE, CAPTURE, "--toy")
    assert compared.returncode == 0 and b"dtwice" in compared.stdout.lower(), compared.stderr
