"""The loader completes a process by making a new value, never by changing one it handed out: the
fold (the mapping view's sums) keeps the process it was given, mappings and all, while the reading
holds the process without them."""

import pytest

from conftest import FIXTURES
from smem.loading import load_reading
from smem.model import Need, Needs
from smem.sources import open_source

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


class KeptProcesses:
    """A fold that keeps what it is given (the mapping view's sums would read them)."""

    def __init__(self):
        self.given = []

    def add(self, process):
        self.given.append(process)

    def clear(self):
        self.given.clear()

    def result(self):
        return tuple(self.given)


def test_a_folded_process_is_let_go_of_in_a_new_value():
    for streamed in (False, True):
        fold = KeptProcesses()
        reading = load_reading(open_source(str(CAPTURE), streamed=streamed), jobs=1, fold=fold,
                               needs=Needs().with_kinds(Need.MAPPINGS))
        mapped = [p for p in fold.given if p.mappings]
        assert mapped and all(p.mappings is None for p in reading.processes)
        by_pid = {p.pid: p for p in reading.processes}
        for given in mapped:  # the same process, its mappings let go in the reading's value only
            kept = by_pid[given.pid]
            assert kept is not given and kept.cmdline == given.cmdline and kept.has_memory


def test_a_process_is_a_value_made_whole_by_the_loader():
    """Every field is given where the Process is made: setting one raises, and the loader's
    processes hold what it read (rollup, status, cgroup, totals) without anyone setting them."""
    needs = Needs(kinds=Need.STAT | Need.ROLLUP | Need.STATUS | Need.CGROUP, counters=frozenset({"Pss", "Rss"}))
    reading = load_reading(open_source(str(CAPTURE)), jobs=1, needs=needs)
    read = [p for p in reading.processes if p.has_memory]
    assert read and all(p.rollup is not None and p.status is not None and p.totals["Pss"] >= 0 for p in read)
    process = read[0]
    for field in ("rollup", "mappings", "name", "_totals"):
        with pytest.raises(AttributeError, match="a Process is a value"):
            setattr(process, field, None)
    changed = process.replaced(name="other")
    assert (changed.name, process.name) == ("other", read[0].name) and changed.totals == process.totals
    # a value made once, known by its identity as before: a copy of every field is another process
    same_fields = process.replaced()
    assert same_fields is not process and same_fields != process and process == process
    assert len({process, same_fields, changed}) == 3


def test_a_process_is_not_the_tuple_of_its_fields():
    """A Process is a tuple underneath (made in one C call) but known by its identity alone: the
    tuple of its fields is not it (tuple's own == answered where Process's declined), and a
    pickled one (what a worker sends) comes back with the same fields, another process."""
    import pickle
    reading = load_reading(open_source(str(CAPTURE)), jobs=1, needs=Needs().with_kinds(Need.MAPPINGS))
    process = next(p for p in reading.processes if p.mappings)
    fields = tuple(process)
    assert not process == fields and process != fields and not fields == process and fields != process
    assert process == process and not process != process
    assert hash(process) == object.__hash__(process)
    back = pickle.loads(pickle.dumps(process))
    assert back != process and tuple(back)[:6] == fields[:6] and back.totals == process.totals
    assert [(m.name, m.counters) for m in back.mappings] == [(m.name, m.counters) for m in process.mappings]
