"""The page's fold of each process's mappings (smem/page/mappings.py, PageFold) on recorded smaps.

The loader hands the page each process's smaps summed by name with the figures it shows worked
out in the same pass (smem.parsers.smaps.sum_smaps_by_name, in C or Python); a reading that
makes a Mapping of every mapping (-M, a lazy parse) folds them in Python (PageFold.part).  Both
must give what the mapping view's columns give, the same part, and the dma-bufs a process maps
must still reach the page's breakdown though the page no longer scans its smaps for them.
"""

import html
import json
import shlex
import shutil
from types import MappingProxyType

import pytest

from conftest import FIXTURES, realproc_files, run_smem
from smem.page.mappings import FIELD_COUNTERS, FIELDS, PageFold
from smem.parsers.smaps import parse_smaps, parse_smaps_kept, sum_smaps_by_name
from smem.views.mapping import MAPPING_VIEW, MappingRow

SMAPS = [p for p in realproc_files("smaps") if p.stat().st_size] + [FIXTURES / "gpu_proc" / "tree" / "105" / "smaps"]


def test_there_are_recorded_smaps(realproc):
    assert len(SMAPS) >= 2  # (the fixture's one, and ../shared/realproc's where it is beside the clone)


@pytest.mark.parametrize("path", SMAPS, ids=str)
def test_each_figure_worked_out_by_name_is_what_the_mapping_views_column_reads(path):
    fold = PageFold(12, 50)
    rows, _, count, _ = sum_smaps_by_name(path.read_bytes(), fold.keys, None, FIELD_COUNTERS)
    assert rows and count >= len(rows)
    for name, _, mappings, sums, values, _ in rows:
        row = MappingRow(name, mappings, 1, MappingProxyType(sums), None, None)
        assert list(values) == [MAPPING_VIEW.columns[key].getter(row) for key in FIELDS], name


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("path", SMAPS, ids=str)
def test_the_part_of_the_sums_by_name_is_the_part_of_every_mapping(path):
    data = path.read_bytes()
    fold = PageFold(5, 50)  # (few, so each kind's rest has rows)
    keep = fold.keys + ("Size",)
    rows, totals, _, _ = sum_smaps_by_name(data, keep, None, fold.fields)
    by_name = fold.part_of_rows(rows)
    assert fold.part(parse_smaps_kept(data, keep)[0]) == (by_name, totals)
    part, lazy_totals = fold.part(parse_smaps(data))
    assert lazy_totals is None and part[1] == by_name[1]  # (the rows shown; the sums: the page's counters only)
    assert any(row[1] is None for row in by_name[1]) or len(rows) <= 5


def test_a_dma_buf_a_process_maps_is_in_the_pages_breakdown(tmp_path):
    """gpu_proc's buffer 180 (16 KiB) with its fds (100's and 101's) gone: 105 holds it only by mapping."""
    pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "gpu_proc" / "tree", tree, symlinks=True)
    for fd in ("100/fdinfo/12", "101/fdinfo/3"):
        (tree / fd).unlink()
    path = tmp_path / "gpu.html"
    run_smem("html", "-S", str(tree), "-o", str(path), check=True)
    text = path.read_text(encoding="utf-8")
    start = text.index('<script type="application/json" id="smem-system"')
    opening_end = text.index(">", start) + 1
    command = text[start:opening_end].split('data-command="', 1)[1].split('"', 1)[0]
    document = json.loads(text[opening_end:text.index("</script>", opening_end)])
    printed = json.loads(run_smem(*shlex.split(html.unescape(command))[1:], check=True).stdout)
    assert document == printed
    rows = {row["area"]: row for row in document["rows"]}
    assert rows["dma-buf held by processes"]["used"] == 16
