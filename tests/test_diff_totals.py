"""smem diff's -t totals of OLD's and NEW's figures are report's totals of the rows each side has:
one renderer sorts, totals and formats, so a total means in a comparison what it means in a report
(a side with none of the rows totals 0; one whose rows lack the figure, '-', unknown).
test_diff.py has the side that has none of the rows; this, the figure the kernel did not give."""

import json

import pytest

from conftest import FIXTURES, nopss_tree, run_smem
from smem.views import VIEWS
from smem.views.diff import diff_view

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"

COMPARABLE = [name for name, view in VIEWS.items() if view.comparison.row_key is not None]


@pytest.mark.parametrize("name", COMPARABLE)
def test_a_sides_sum_is_totalled_by_report(name):
    """No comparison sums a side's figures itself: each summed side column names the rows it
    counts (those its side has) and report totals them, as it totals the report's."""
    base = VIEWS[name]
    compared = diff_view(base)
    for key, column in base.columns.items():
        if not column.changes or column.total != "sum" or "exact" in column.needs:
            continue
        for side, part in ((f"old_{key}", "old"), (key, "new")):
            shown = compared.columns[side]
            assert getattr(shown, "total_rows", None) is not None, (name, side)
            if column.total_of is None:
                assert shown.total_of is None, (name, side)  # (report's sum of the side's rows)


def test_a_side_without_the_figure_totals_unknown(tmp_path):
    """A kernel without PSS (2.6, an ARM DVR): OLD's and NEW's PSS, and its change, total '-'; RSS
    totals what the rows hold, on both sides, and its change 0."""
    tree = nopss_tree(tmp_path)
    doc = json.loads(run_smem("diff", tree, tree, "-c", "pid old_pss pss dpss old_rss rss drss", "-t", "-F", "json",
                              check=True).stdout)
    rss = sum(row["rss"] for row in doc["rows"])
    assert rss > 0 and all(row["pss"] is None for row in doc["rows"])
    totals = doc["totals"]
    assert (totals["old_pss"], totals["pss"], totals["dpss"]) == (None, None, None)
    assert (totals["old_rss"], totals["rss"], totals["drss"]) == (rss, rss, 0)
