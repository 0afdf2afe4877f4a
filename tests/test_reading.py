"""What the loader reads (smem.model.Reading) and what a report derives beside it (Derived): values
built once; and a Process crosses from a worker (pickled) as it was."""

import dataclasses
import pickle

import pytest

from conftest import FIXTURES
from smem.loading import load_reading
from smem.model import PROCESS_FIELDS, Derived, Need, Needs, Snapshot
from smem.selection import Selection
from smem.sources import open_source

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


def _fields(process):
    return {name: getattr(process, name) for name in PROCESS_FIELDS if name != "mappings"}


@pytest.mark.parametrize("kinds", [Need.MAPPINGS | Need.STAT | Need.STATUS, Need.STAT])
def test_a_process_pickles_as_it_was(kinds):
    reading = load_reading(open_source(str(CAPTURE), streamed=False), needs=Needs(kinds, frozenset({"Pss", "Rss"})))
    assert reading.processes
    for process in reading.processes:
        copy = pickle.loads(pickle.dumps(process, protocol=pickle.HIGHEST_PROTOCOL))
        assert _fields(copy) == _fields(process)
        if process.mappings is None:
            assert copy.mappings is None
        else:
            assert [(m._header, m.name, m.counters) for m in copy.mappings] == \
                   [(m._header, m.name, m.counters) for m in process.mappings]
            assert copy.mappings and copy.mappings[0].start == process.mappings[0].start


def test_a_reading_and_what_is_derived_are_never_changed():
    reading = load_reading(open_source(str(CAPTURE)), Selection(user="root"))
    assert reading.selected and isinstance(reading.processes, tuple)
    assert [p.pid for p in reading.processes] == sorted(p.pid for p in reading.processes)
    with pytest.raises(dataclasses.FrozenInstanceError):
        reading.pools = None
    with pytest.raises(TypeError):
        reading.unreadable["x"] = ()
    snapshot = Snapshot(reading)
    assert snapshot.sizing is None and snapshot.processes is reading.processes
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.derived.sizing = ()
    assert Snapshot(reading, Derived(sharing=((1,), None))).sharing == ((1,), None)
    # -M leaves mappings out: the breakdown says the rest is of what was not selected
    assert load_reading(open_source(str(CAPTURE)), Selection(mapping="lib")).selected
    assert not load_reading(open_source(str(CAPTURE)), Selection()).selected
