"""The sums a view's fold makes of every process's mappings (the reading's ``folded``) are a value,
made once the processes are read: every reader of one reading (the -m table, its total, a chart,
the page's mapping boxes, watch mode's next frame) sees the same rows, whatever another did with
the rows it was handed."""

import pytest

from conftest import FIXTURES
from smem.loading import load_reading
from smem.model import Need, Needs, Snapshot
from smem.page.mappings import PageFold
from smem.sources import open_source
from smem.views.mapping import MAPPING_VIEW

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"
NEEDS = Needs().with_kinds(Need.MAPPINGS)


def _read(fold):
    return Snapshot(load_reading(open_source(str(CAPTURE)), jobs=1, fold=fold, needs=NEEDS))


def _cells(rows):
    return [[column.getter(row) for column in MAPPING_VIEW.columns.values()] for row in rows]


def _changes(row):
    yield lambda: setattr(row, "count", 0)
    yield lambda: setattr(row, "process_count", 1)
    yield lambda: row.totals.__setitem__("Pss", 0)
    yield lambda: row.totals.clear()


@pytest.mark.parametrize("fold", [MAPPING_VIEW.reads.fold(NEEDS), PageFold(3, 1)], ids=["mapping view", "page"])
def test_a_row_handed_out_cannot_be_changed(fold):
    snapshot = _read(fold)
    rows = MAPPING_VIEW.rows([snapshot], None)
    seen = _cells(rows)
    assert len(rows) > 10 and any(row.process_count > 1 for row in rows)
    largest = max(rows, key=lambda row: row.totals.get("Pss", 0))
    for change in _changes(largest):
        with pytest.raises((AttributeError, TypeError)):
            change()
    with pytest.raises((AttributeError, TypeError)):
        snapshot.folded.rows.append(rows[0])
    assert _cells(MAPPING_VIEW.rows([snapshot], None)) == seen


def test_the_pages_boxes_handed_out_are_the_readers_own():
    """A reader of the page's largest mappings may change what it was given (it is plain data for
    JSON): the next reader is given the reading's, as they were."""
    snapshot = _read(PageFold(3, 1))
    maps, sharers = snapshot.folded.largest()
    before = repr((maps, sharers))
    shared = next(iter(sharers["mappings"].values()))
    assert shared["more"] is not None  # (more mappers than the one listed)
    shared["rows"][0][1] = -1
    shared["more"][0] = -1
    next(iter(maps["processes"].values()))[0][2] = -1
    maps["names"].clear()
    assert repr(snapshot.folded.largest()) == before
