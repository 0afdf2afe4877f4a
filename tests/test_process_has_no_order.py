"""A Process (smem.model) is a tuple underneath but known by its identity alone (test_loading_values.py):
it has no order either. Tuple's < compared its fields, pid first, so a sort without a key "worked" by
accident; now <, <=, >, >= raise TypeError, as between objects that have no order (every sort of
processes in smem says its key: the views' and the report's own tests sort through them)."""

import operator

import pytest

from conftest import FIXTURES
from smem.loading import load_reading
from smem.model import Needs
from smem.sources import open_source

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


def _processes():
    return load_reading(open_source(str(CAPTURE)), jobs=1, needs=Needs()).processes


@pytest.mark.parametrize("compare", [operator.lt, operator.le, operator.gt, operator.ge])
def test_two_processes_have_no_order(compare):
    first, second = _processes()[:2]
    for left, right in ((first, second), (second, first), (first, first), (first, tuple(second)),
                        (tuple(first), second)):
        with pytest.raises(TypeError, match="a Process has no order"):
            compare(left, right)


def test_a_sort_needs_a_key():
    processes = list(_processes())
    with pytest.raises(TypeError):
        sorted(processes)
    with pytest.raises(TypeError):
        max(processes)
    assert [p.pid for p in sorted(reversed(processes), key=lambda p: p.pid)] == sorted(p.pid for p in processes)
