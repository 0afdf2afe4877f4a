"""smaps_rollup stands in for smaps where a report needs no per-mapping data.

Live and in captures alike, the process and user views read the kernel's
rollup (one small file) instead of summing every mapping of smaps.  The
numbers must be the same as the full path's on the same data, except PSS:
smaps prints each mapping's PSS rounded down to a KiB, the rollup rounds the
process's sum once (Documentation/filesystems/proc.rst, "smaps_rollup"), so
summed <= rollup < summed + mappings.
"""

import io
import re
import tarfile

import pytest

from conftest import FIXTURES, run_smem, without_rollups
from workload import forked_workers

from smem.loading import load_reading  # noqa: E402
from smem.model import Need, Needs, Snapshot  # noqa: E402
from smem.sources import open_source  # noqa: E402
from smem.sources.archive import ArchiveSource  # noqa: E402

CAPTURES = [FIXTURES / "captures" / "faithful.tar.gz", FIXTURES / "captures" / "quirks.tar.gz"]
COLUMNS = "pid swap uss rss pss"
# The recorder's workload processes, which held still while the capture read smaps and
# smaps_rollup one after the other (the recorder itself did not).
STILL = ["-P", "^smem-"]


def _rows(output):
    return {int(f[0]): [int(x) for x in f[1:]] for f in (line.split() for line in output.decode().splitlines())}


def _rollup_pss(capture):
    with tarfile.open(capture) as t:
        return {int(m.name.split("/")[0]): int(re.search(rb"^Pss:\s+(\d+) kB", t.extractfile(m).read(), re.M)[1])
                for m in t if m.name.endswith("/smaps_rollup") and m.size}


def _maps(capture):
    with tarfile.open(capture) as t:
        return {int(m.name.split("/")[0]): len(re.findall(rb"^[0-9a-f]+-[0-9a-f]+ ", t.extractfile(m).read(), re.M))
                for m in t if m.name.endswith("/smaps") and m.size}


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_a_captures_process_view_uses_its_rollups(capture, tmp_path):
    summed = _rows(run_smem("-S", without_rollups(capture, tmp_path / "plain.tar"), *STILL, "-H", "-c",
                            COLUMNS, check=True).stdout)
    rolled = _rows(run_smem("-S", capture, *STILL, "-H", "-c", COLUMNS, check=True).stdout)
    rollup_pss, maps = _rollup_pss(capture), _maps(capture)
    assert set(rolled) == set(summed) and len(set(rolled) & set(rollup_pss)) >= 10
    differs = 0
    for pid, (swap, uss, rss, pss) in rolled.items():
        assert [swap, uss, rss] == summed[pid][:3], pid
        if pid in rollup_pss:
            assert pss == rollup_pss[pid], pid
            assert summed[pid][3] <= pss < summed[pid][3] + maps[pid], pid
            differs += pss != summed[pid][3]
        else:  # no rollup in the capture for this one: its smaps, summed
            assert pss == summed[pid][3], pid
    assert differs > 0  # the capture does exercise the rounding


@pytest.mark.parametrize("capture", CAPTURES[:1], ids=lambda p: p.name)
def test_per_mapping_columns_still_read_smaps(capture, tmp_path):
    """maps and vss need the mappings: those reports are smem 1.5's summed figures, rollup or not."""
    args = ["-H", "-c", "pid pss vss maps"]
    plain = without_rollups(capture, tmp_path / "plain.tar")
    assert run_smem("-S", capture, *args, check=True).stdout == run_smem("-S", plain, *args, check=True).stdout


@pytest.mark.uses("cpu")
def test_live_rollup_and_summed_smaps_agree():
    """The live fast path against the full smaps path, on processes that hold still."""
    with forked_workers(shared_kib=2048, private_kib=512, nworkers=4) as w:
        pids = set(w.pids)
        for attempt in range(5):  # between the two reads, a process starting elsewhere moves shared PSS,
            # and the leader touching memory it shares copy-on-write makes a worker's pages private
            source = open_source(None)
            rolled = {p.pid: p for p in load_reading(source, needs=Needs(Need.STAT)).processes
                      if p.pid in pids}
            summed = {p.pid: p for p in load_reading(source, needs=Needs(Need.MAPPINGS | Need.STAT)).processes
                      if p.pid in pids}
            assert set(rolled) == set(summed) == pids
            assert all(p.mappings is None and p.rollup for p in rolled.values())
            wrong = []
            for pid in pids:
                a, b = rolled[pid].totals, summed[pid].totals
                wrong += [(pid, key, a.get(key), b.get(key))
                          for key in ("Rss", "Private_Clean", "Private_Dirty", "Swap", "Shared_Clean", "Anonymous")
                          if a.get(key) != b.get(key)]
                if not b["Pss"] <= a["Pss"] < b["Pss"] + summed[pid].map_count:
                    wrong.append((pid, "Pss", a["Pss"], b["Pss"]))
            if not wrong:
                break
        assert not wrong


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_an_archive_read_for_the_rollup_keeps_only_the_smaps_it_may_need(capture):
    """per_mapping=False: a process's smaps is dropped once its smaps_rollup is read."""
    from smem.options import TableOptions
    from smem.report import make_table, selected_columns, sort_column
    from smem.views import VIEWS, needs_of

    data = capture.read_bytes()
    lean = ArchiveSource(data, capture.name, per_mapping=False)
    whole = ArchiveSource(data, capture.name)
    rollups = {p for p in whole.pids() if (whole.read_optional(f"{p}/smaps_rollup") or b"").strip()}
    assert rollups
    for pid in whole.pids():
        has_smaps = whole.read_optional(f"{pid}/smaps") is not None
        assert (lean.read_optional(f"{pid}/smaps") is not None) == (has_smaps and pid not in rollups), pid
    for name in ("process", "user"):
        view = VIEWS[name]
        options = TableOptions(columns=tuple(k for k in view.columns
                                             if not view.columns[k].needs & {"mappings", "exact"}), totals=True,
                               working_set=True)  # (wss: smaps_rollup's Referenced, as after --wss's clear_refs)
        needs = needs_of(view, selected_columns(view, options) + [sort_column(view, options)])
        assert not needs.mappings
        tables = [make_table([Snapshot(load_reading(s, needs=needs))], view, options) for s in (lean, whole)]
        assert tables[0].values == tables[1].values and tables[0].totals == tables[1].totals, name


def _rewritten(capture, out, edit):
    """The capture with each member's bytes passed through edit(name, data)."""
    with tarfile.open(capture) as tin, tarfile.open(out, "w") as tout:
        for m in tin:
            data = tin.extractfile(m).read() if m.isreg() else None
            if data is not None:
                data = edit(m.name, data)
                m.size = len(data)
            tout.addfile(m, io.BytesIO(data) if data is not None else None)
    return out


@pytest.mark.uses("cpu")
def test_a_rollup_without_the_pss_split_leaves_it_to_the_mappings(tmp_path):
    """Linux 4.14-5.8 print smaps_rollup without Pss_Anon/File/Shmem: estimate per mapping, as without one."""
    capture = CAPTURES[0]
    old_kernel = _rewritten(capture, tmp_path / "old.tar", lambda name, data: re.sub(
        rb"(?m)^Pss_(Anon|File|Shmem):.*\n", b"", data) if name.endswith("/smaps_rollup") else data)
    plain = without_rollups(capture, tmp_path / "plain.tar")
    for args in (["-c", "pid pss_anon pss_file pss_shmem", "-t"], ["-u", "-c", "user pss_anon pss_file"]):
        got = run_smem("-S", old_kernel, *args, check=True).stdout
        assert b" - " not in got and got == run_smem("-S", plain, *args, check=True).stdout, args


@pytest.mark.uses("cpu")
def test_an_unreadable_smaps_header_is_reported(tmp_path):
    capture = CAPTURES[0]
    pid = sorted(_maps(capture))[0]
    broken = _rewritten(capture, tmp_path / "bad.tar", lambda name, data: re.sub(
        rb"^([0-9a-f]+-[0-9a-f]+ \S+ )\S+", rb"\1zz", data, count=1) if name == f"{pid}/smaps" else data)
    proc = run_smem("-S", broken, "-c", "pid vss")
    assert proc.returncode == 0
    assert b"1 process could not be read (malformed smaps)" in proc.stderr
    assert str(pid).encode() not in proc.stdout


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_a_report_that_shows_no_name_reads_no_stat_and_shows_the_same(capture):
    """The default process view and -u read stat only for processes with an empty cmdline
    (Needs.stat): the tables are those of a load that read every stat."""
    from smem.options import TableOptions
    from smem.report import make_table, selected_columns, sort_column
    from smem.views import VIEWS, needs_of

    for name, columns in (("process", ("pid", "user", "command", "swap", "uss", "pss", "rss")),
                          ("user", None)):
        view = VIEWS[name]
        options = TableOptions(columns=columns, totals=True)
        needs = needs_of(view, selected_columns(view, options) + [sort_column(view, options)])
        assert not needs.stat
        lean = load_reading(open_source(str(capture)), needs=needs)
        whole = load_reading(open_source(str(capture)), needs=needs.with_kinds(Need.STAT))
        assert any(p.name is None for p in lean.processes) and all(p.name for p in whole.processes)
        tables = [make_table([Snapshot(s)], view, options) for s in (lean, whole)]
        assert tables[0].values == tables[1].values and tables[0].totals == tables[1].totals, name
    named = VIEWS["process"]
    options = TableOptions(columns=("pid", "name"))
    assert needs_of(named, selected_columns(named, options) + [sort_column(named, options)]).stat


@pytest.mark.uses("cpu")
def test_a_malformed_rollup_is_named_though_stat_was_not_read(tmp_path):
    capture = CAPTURES[0]
    pid = sorted(_rollup_pss(capture))[0]
    broken = _rewritten(capture, tmp_path / "bad.tar", lambda name, data: re.sub(
        rb"(?m)^Rss:\s+\d+", b"Rss: 12x4", data, count=1) if name == f"{pid}/smaps_rollup" else data)
    with tarfile.open(capture) as t:
        comm = re.search(rb"\((.*)\)", t.extractfile(f"{pid}/stat").read())[1].decode()
    proc = run_smem("-S", broken)
    assert proc.returncode == 0
    assert f"1 process could not be read (malformed smaps_rollup): pid {pid} ({comm})".encode() in proc.stderr
    assert str(pid) not in [line.split()[0] for line in proc.stdout.decode().splitlines()[1:]]
