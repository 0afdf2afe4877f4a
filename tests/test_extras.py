"""A text-only install: smem runs with click, tabulate and regex alone, and each feature that needs
an extra says which one to install, in one line."""

import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, TESTS

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


@pytest.fixture(scope="module")
def text_only(tmp_path_factory):
    """A Python path holding smem and its dependencies (click, tabulate, regex), nothing else."""
    import click
    import regex
    import tabulate
    d = tmp_path_factory.mktemp("text-only")
    for module in (click, tabulate, regex):
        path = module.__file__
        if os.path.basename(path) == "__init__.py":
            path = os.path.dirname(path)
        os.symlink(path, d / os.path.basename(path))
    os.symlink(TESTS.parent / "smem", d / "smem")
    return d


def _run(text_only, *args):
    # -S: no site-packages, so numpy, matplotlib, zstandard and lz4 are not there, as in a
    # venv where only `pip install .` ran; -E: no PYTHONPATH from outside
    code = (f"import sys; sys.path.insert(0, {str(text_only)!r}); "
            "from smem.cli import main; main(sys.argv[1:])")
    return subprocess.run([sys.executable, "-S", "-E", "-c", code, *map(str, args)],
                          capture_output=True, cwd=text_only, stdin=subprocess.DEVNULL, timeout=60)


def test_the_core_dependencies_are_click_and_tabulate():
    import tomllib
    project = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["project"]
    assert sorted(d.split(">")[0] for d in project["dependencies"]) == ["click", "regex", "tabulate"]
    extras = project["optional-dependencies"]
    assert {"charts", "exact", "compression", "metrics", "html", "all"} <= set(extras)


@pytest.mark.uses("cpu")
def test_text_reports_work_without_the_extras(text_only):
    assert _run(text_only, "--version").returncode == 0
    for args in (["-t", "-k"], ["-S", CAPTURE, "-u"], ["-S", CAPTURE, "-P", "smem"], ["-S", CAPTURE, "-m", "-F", "json"],
                 ["-S", CAPTURE, "-F", "github"], ["-S", CAPTURE, "-w"]):
        proc = _run(text_only, *args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert b"Traceback" not in proc.stderr
    probe = subprocess.run([sys.executable, "-S", "-E", "-c", "import numpy"], capture_output=True)
    assert probe.returncode != 0, "numpy is importable without site-packages: the test proves nothing"


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("args,extra", [
    (["-S", CAPTURE, "--pie", "name", "-o", "chart.png"], "charts"),
    (["-S", CAPTURE, "--bar", "name", "-o", "chart.png"], "charts"),
    (["-S", CAPTURE, "--exact", "-u"], "exact"),
    (["serve", "-S", CAPTURE, "--textfile", "."], "metrics"),
    (["serve", "-S", CAPTURE, "--listen", "127.0.0.1:0"], "metrics"),
    (["html", "-S", CAPTURE, "-o", "page.html"], "html"),
])
def test_a_missing_extra_is_one_line_naming_it(text_only, args, extra):
    proc = _run(text_only, *args)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, lines
    package = {"charts": "matplotlib", "exact": "numpy", "metrics": "prometheus_client", "html": "plotly"}[extra]
    assert f"pip install {package} (smem's '{extra}' extra" in lines[0] and lines[0].startswith("smem: ")


@pytest.mark.uses("cpu")
def test_record_without_zstandard_says_so_before_making_its_directory(text_only, tmp_path):
    # the line comes before anything is written: no "recording ..." line, no empty recording
    # left behind for the next run to resume
    target = tmp_path / "night"
    proc = _run(text_only, "record", "-o", target, "--count", "1")
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, lines
    assert "pip install zstandard (smem's 'compression' extra" in lines[0]
    assert not target.exists()
