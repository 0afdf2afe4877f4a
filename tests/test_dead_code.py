"""No function or class in the package that only tests call (issue #25, item 6): each top-level
definition in smem/ is named somewhere in smem/ besides its definition and ``__all__``, or is an
entry point pyproject.toml names.  A helper kept for tests alone is code no user runs, which the
next change must still carry (``as_source`` was one; ``collect.collect`` another)."""

import ast
import collections
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "smem"


def _is_all(node):
    return isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)


def unreferenced(files, also=""):
    """(path, name) of each top-level function or class of ``files`` that no code of theirs names
    (a name, an attribute, an import, or a string that is the name: a registry's lookup), nor ``also``."""
    named = collections.Counter()
    defined = []
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        exported = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.append((path, node.name))
            elif _is_all(node):
                exported |= {id(n) for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in exported:
                continue
            if isinstance(node, ast.Name):
                named[node.id] += 1
            elif isinstance(node, ast.Attribute):
                named[node.attr] += 1
            elif isinstance(node, ast.alias):
                named[node.name.rpartition(".")[2]] += 1
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                named[node.value] += 1
    return [(path, name) for path, name in defined if not named[name] and name not in also]


@pytest.mark.uses("cpu")
def test_every_definition_of_the_package_is_used_by_the_package():
    files = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    entry_points = (ROOT / "pyproject.toml").read_text()
    found = [f"{path.relative_to(ROOT)}: {name}" for path, name in unreferenced(files, entry_points)]
    assert not found, "defined in smem/ but named only by tests (or nothing):\n" + "\n".join(found)


def test_a_definition_only_tests_name_is_found(tmp_path):
    """The walk finds one: a function named only in its module's __all__ and a docstring."""
    (tmp_path / "lib.py").write_text('__all__ = ["helper", "used"]\n\ndef helper():\n    """used? no."""\n\n'
                                     'def used():\n    return 1\n\nVALUE = used()\n')
    assert unreferenced([tmp_path / "lib.py"]) == [(tmp_path / "lib.py", "helper")]
