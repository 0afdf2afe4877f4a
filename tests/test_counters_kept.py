"""Each column declares the smaps counters it reads; only those are kept per mapping.

Once a process's smaps is parsed, the loader keeps the declared counters of
each mapping and lets the text go (model.Needs.counters), which is what keeps
the mapping view's memory from growing with the text of every process.  A
column that reads a counter it did not declare would show "-": every column
of every view, alone and as the sort key, must give the same table as the
loader that keeps everything.
"""

import dataclasses

import pytest

from conftest import FIXTURES, run_smem, without_rollups

from smem.loading import load_reading  # noqa: E402
from smem.model import Need, Needs, Snapshot  # noqa: E402
from smem.selection import Selection  # noqa: E402
from smem.options import TableOptions  # noqa: E402
from smem.report import make_table, selected_columns, sort_column  # noqa: E402
from smem.sources import open_source  # noqa: E402
from smem.views import VIEWS, needs_of  # noqa: E402
from smem.views.mapping import MappingFold  # noqa: E402

CAPTURES = [FIXTURES / "captures" / "faithful.tar.gz", FIXTURES / "captures" / "quirks.tar.gz"]
PROCESS_VIEWS = ("process", "mapping", "user", "program", "cgroup")


@pytest.fixture(scope="module", params=CAPTURES, ids=lambda p: p.name)
def source(request):
    source = open_source(str(request.param))
    yield source
    source.close()


def _everything():
    return Needs(Need.MAPPINGS | Need.ROLLUP | Need.STATUS | Need.CGROUP | Need.POOLS | Need.STAT, None)


@pytest.fixture(scope="module")
def load(source):
    """load_reading(source, selection, needs), each distinct (selection, needs) loaded once.

    Many columns of the five views need the same things (33 distinct needs for 112
    columns): the same load gives the same snapshot, which make_table only reads.  Its
    mappings are also summed by name once (what the loader's fold gives the mapping view),
    not again in each of the mapping view's tables.
    """
    loaded = {}

    def load(selection, needs, folded=False):
        key = (selection.process, selection.user, selection.mapping, needs.mappings, needs.rollup,
               needs.status, needs.cgroup, needs.split, needs.stat, needs.pools,
               None if needs.counters is None else frozenset(needs.counters))
        if key not in loaded:
            loaded[key] = Snapshot(load_reading(source, selection, needs=needs))
        if folded and (key, "folded") not in loaded:
            reading = loaded[key].reading
            fold = MappingFold()
            for process in reading.processes:
                fold.add(process)
            loaded[key, "folded"] = Snapshot(dataclasses.replace(reading, folded=fold.result()))
        return loaded[key, "folded"] if folded else loaded[key]
    return load


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("view_name", PROCESS_VIEWS)
def test_every_column_reads_only_what_it_declares(source, load, view_name):
    view = VIEWS[view_name]
    selections = [Selection(), Selection(mapping="lib|heap")]
    folded = view_name == "mapping"  # (the snapshot with the sums the mapping view reads)
    full = {id(s): load(s, _everything(), folded) for s in selections}
    checked, kept_only_declared = 0, set()  # (the snapshots seen to keep only their counters)
    for key, column in view.columns.items():
        if "exact" in column.needs:
            continue  # pagemap: tests/test_exact*.py
        for selection in selections:
            options = TableOptions(columns=(key,), sort=key, totals=True, working_set="wss" in column.needs)
            # the per-mapping path, where counters are dropped (not the rollup)
            needs = needs_of(view, selected_columns(view, options) + [sort_column(view, options)], mappings=True)
            assert needs.counters is not None
            kept = load(selection, needs)
            if id(kept) not in kept_only_declared:  # (a load is memoized: the same needs, the same one)
                assert all(isinstance(m.counters, dict) and set(m.counters) <= needs.counters
                           for p in kept.processes for m in p.mappings)
                kept_only_declared.add(id(kept))
            kept = load(selection, needs, folded)
            got = make_table([kept], view, options)
            want = make_table([full[id(selection)]], view, options)
            assert got.values == want.values, (view_name, key)
            assert got.totals == want.totals, (view_name, key)
            checked += 1
    assert checked >= 2 * len(view.columns) - 10


@pytest.mark.uses("charts")
def test_the_mapping_views_pie_by_name_has_its_measure(tmp_path):
    """Sorted by a column that is not an amount, the pie shows PSS, which -c did not ask for."""
    pytest.importorskip("matplotlib", reason="smem[charts]: matplotlib not installed")
    capture = CAPTURES[0]
    out = tmp_path / "pie.svg"
    proc = run_smem("-S", capture, "-m", "-s", "map", "-c", "map count", "--pie", "map", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert b"nothing to chart" not in proc.stderr
    svg = out.read_text()
    assert "libc" in svg and "other" in svg


@pytest.mark.uses("cpu")
def test_loading_leaves_the_garbage_collector_as_it_found_it(source):
    """The collector is paused while processes are read (loading.gathered.collector_paused), then restored."""
    import gc
    assert gc.isenabled()
    load_reading(source, needs=_everything())
    assert gc.isenabled()
    gc.disable()
    try:
        load_reading(source, needs=_everything())
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.uses("cpu")
def test_the_openmetrics_user_gauges_read_their_own_counters(tmp_path):
    """The scrape's per-user table has columns -c did not name (swap uss rss pss)."""
    plain = without_rollups(CAPTURES[0], tmp_path / "plain.tar")
    narrow = run_smem("-S", plain, "-F", "openmetrics", "-c", "pid", check=True).stdout.decode()
    wide = run_smem("-S", plain, "-F", "openmetrics", check=True).stdout.decode()
    for gauge in ("smem_user_swap_bytes", "smem_user_uss_bytes", "smem_user_rss_bytes", "smem_user_pss_bytes"):
        samples = sorted(line for line in narrow.splitlines() if line.startswith(gauge + "{"))
        assert samples and samples == sorted(line for line in wide.splitlines() if line.startswith(gauge + "{")), gauge


@pytest.mark.uses("cpu")
def test_without_pss_the_rows_sort_by_rss(tmp_path):
    """Kernels before 2.6.25 print no Pss: the default sort falls back to RSS, which -c did not name."""
    import re
    import tarfile
    import io
    with tarfile.open(CAPTURES[0]) as tin, tarfile.open(tmp_path / "nopss.tar", "w") as tout:
        for m in tin:
            if m.name.endswith("/smaps_rollup"):
                continue
            data = tin.extractfile(m).read() if m.isreg() else None
            if data is not None and m.name.endswith("/smaps"):
                data = re.sub(rb"(?m)^(Pss|Pss_\w+|SwapPss):.*\n", b"", data)
                m.size = len(data)
            tout.addfile(m, io.BytesIO(data) if data is not None else None)
    for view in ([], ["-m"]):
        key = "map" if view else "pid"
        rows = run_smem("-S", tmp_path / "nopss.tar", *view, "-H", "-c", f"{key} rss", check=True).stdout
        order = [line.rsplit(None, 1) for line in rows.decode().splitlines()]
        narrow = run_smem("-S", tmp_path / "nopss.tar", *view, "-H", "-c", key, check=True).stdout
        assert [line.strip() for line in narrow.decode().splitlines()] == [name.strip() for name, _ in order]
        assert [int(rss) for _, rss in order] == sorted(int(rss) for _, rss in order)
