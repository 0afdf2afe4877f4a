"""Layers import one way only: the import graph of smem/, every import counted (those inside
functions too, which run later but still tie two modules together, and those the view and format
registries make by name), has no cycle."""

import ast
from pathlib import Path

import pytest

import smem

PACKAGE = Path(smem.__file__).parent


def _modules(root=PACKAGE):
    """{dotted name: path} of every module of the package."""
    modules = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(name, path, modules):
    """The package's modules ``name`` imports anywhere in its text (relative imports resolved;
    ``from package import module`` counts as the module, ``from module import name`` as the module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                if f"{origin}.{alias.name}" in modules:
                    found.add(f"{origin}.{alias.name}")
                elif origin in modules:
                    found.add(origin)
    found.discard(name)
    return found


def import_graph(root=PACKAGE):
    modules = _modules(root)
    return {name: _imported(name, path, modules) for name, path in modules.items()}


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def registry_imports():
    """The imports the registries make by name (importlib.import_module), which no import statement
    shows: each view's module (smem.views) and each format's renderer (smem.formats)."""
    from smem.formats import FORMATS
    from smem.views import _WHERE
    return {"smem.views": {f"smem.views.{module}" for module, _, _ in _WHERE.values()},
            "smem.formats": {f"smem.formats.{f.renderer.split(':')[0]}" for f in FORMATS.values()}}


@pytest.mark.uses("cpu")
def test_the_package_imports_one_way():
    graph = import_graph()
    for name, imported in registry_imports().items():
        graph[name] |= imported
    assert "smem.loading.streamed" in graph["smem.loading"]  # (a lazy import is an edge)
    assert {"smem.views.breakdown", "smem.formats.openmetrics"} <= graph["smem.views"] | graph["smem.formats"]
    assert cycles(graph) == []


def test_a_cycle_is_found(tmp_path):
    """The walk sees a cycle made only of imports inside functions, and one through a package."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from .sub import b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("def g():\n    from ..a import f\n")
    (package / "c.py").write_text("from .sub import thing\n")
    (package / "sub" / "__init__.py").write_text("def h():\n    from .. import c\n")
    assert sorted(cycles(import_graph(package))) == [["pkg.a", "pkg.sub.b"], ["pkg.c", "pkg.sub"]]
