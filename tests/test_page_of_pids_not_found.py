"""`smem html --pid N` says a pid that shows nothing as the report does (README, "Filters"): a
warning beside the processes found, an error (exit 1, no page written) when none was found. It
wrote a page of no process, exit 0, without a word: a mistyped pid looked like an idle machine."""

import shutil

import pytest

from conftest import FIXTURES, run_smem

pytest.importorskip("plotly", reason="smem[html]: plotly not installed")

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"
NOT_FOUND = "--pid 1: not found, or a kernel thread or zombie (which has no memory of its own)"


def test_a_page_of_no_pid_found_is_an_error_and_no_page(tmp_path):
    page = tmp_path / "page.html"
    proc = run_smem("html", "-S", CAPTURE, "--pid", "1", "-o", page)
    assert proc.returncode == 1 and proc.stderr.decode() == f"smem: {NOT_FOUND}\n"
    assert not page.exists()


def test_a_pid_not_found_beside_one_found_is_a_warning(tmp_path):
    page = tmp_path / "page.html"
    proc = run_smem("html", "-S", CAPTURE, "--pid", "1,7909", "-o", page)
    assert proc.returncode == 0 and proc.stderr.decode() == f"smem: warning: {NOT_FOUND}\n"
    assert b'"pid": 7909' in page.read_bytes()


def test_compare_says_a_pid_on_neither_side_as_smem_diff_does(tmp_path):
    """--compare wrote a page of no process, exit 0, for a pid on neither side."""
    page = tmp_path / "page.html"
    neither = NOT_FOUND.replace("not found", "not found on either side")
    old = tmp_path / "old.tar.gz"  # (a copy: one capture on both sides is said, and is not this test's)
    shutil.copyfile(CAPTURE, old)
    proc = run_smem("html", "-S", CAPTURE, "--compare", old, "--pid", "1", "-o", page)
    assert proc.returncode == 1 and proc.stderr.decode() == f"smem: {neither}\n"
    assert not page.exists()
    proc = run_smem("html", "-S", CAPTURE, "--compare", old, "--pid", "1,7909", "-o", page)
    assert proc.returncode == 0 and proc.stderr.decode() == f"smem: warning: {neither}\n"
    assert b'"pid": 7909' in page.read_bytes()
