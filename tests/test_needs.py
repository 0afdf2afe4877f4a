"""What a report needs read (smem.model.Needs): a frozen value of typed flags, so a misspelt need
is an error where it is declared, not a file silently never read."""

import dataclasses

import pytest

from smem.model import Need, Needs
from smem.options import TableOptions
from smem.report import selected_columns, sort_column
from smem.views import VIEWS, View, needs_of


def test_a_misspelt_need_is_an_error():
    assert Need.named({"status", "cgroup"}) == Need.STATUS | Need.CGROUP
    with pytest.raises(ValueError, match="stauts"):
        Need.named({"stauts"})
    view = VIEWS["process"]
    column = view.columns["pss"]._replace(needs=frozenset({"rolup"}))
    with pytest.raises(ValueError, match="rolup"):
        needs_of(view, [column])


@pytest.mark.parametrize("name", list(VIEWS))
def test_every_declared_need_is_a_need(name):
    view = VIEWS[name]
    Need.named(view.reads.needs)
    Need.named(view.reads.identity)
    for column in view.columns.values():
        Need.named(column.needs)


def test_needs_are_built_once_and_never_changed():
    view = VIEWS["process"]
    options = TableOptions(columns=("pid", "command", "pss"))
    needs = needs_of(view, selected_columns(view, options) + [sort_column(view, options)], max_rss_kib=10)
    assert not needs.mappings and not needs.stat and needs.max_rss_kib == 10
    assert needs.rollup_keys == tuple(sorted(needs.counters | {"Rss", "Pss"}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        needs.kinds = Need.MAPPINGS
    more = needs.with_kinds(Need.MAPPINGS)
    assert more.mappings and not needs.mappings and more.counters == needs.counters
    assert needs_of(view, [view.columns["pss"]], mappings=True).mappings
    assert needs_of(view, [view.columns["pss"]], also={"exact"}).stat  # exact accounting names processes


def test_a_pss_split_keeps_the_rollup_split():
    assert set(Needs(Need.SPLIT, frozenset({"Pss"})).rollup_keys) == {"Pss", "Rss", "Pss_Anon", "Pss_File",
                                                                      "Pss_Shmem"}
    assert Needs(Need.MAPPINGS, None).rollup_keys is None  # every counter kept
    assert isinstance(VIEWS["process"], View)
