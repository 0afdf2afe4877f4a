"""smem diff OLD NEW: two captures whose differences the test makes, known to the KiB."""

import csv
import io
import json
import re
import shutil
import tarfile

import pytest

from conftest import FIXTURES, run_smem

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"
GROWTH_KIB = 4321  # added to one mapping of one process: Size, Rss, Pss and Private_Dirty


def _tree(tmp_path, name):
    """The capture as a directory, without smaps_rollup (so the edits of smaps are what is read)."""
    root = tmp_path / name
    with tarfile.open(CAPTURE) as tar:
        for member in tar:
            if member.isreg() and not member.name.endswith("smaps_rollup"):
                path = root / member.name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(tar.extractfile(member).read())
    return root


def _pids(root):
    return sorted(int(p.name) for p in root.iterdir() if p.name.isdigit() and (p / "smaps").read_bytes())


def _start_time(stat, new):
    """stat with field 22 (start time) replaced."""
    head, _, rest = stat.rpartition(b")")
    fields = rest.split(b" ")
    fields[20] = str(new).encode()  # rest starts with "" then field 3 (state) at index 1
    return head + b")" + b" ".join(fields)


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("diff")
    old = _tree(tmp, "old")
    new = tmp / "new"
    shutil.copytree(old, new)
    pids = _pids(old)
    grown, gone, reused, template = pids[0], pids[1], pids[2], pids[3]
    smaps = (new / str(grown) / "smaps").read_bytes()
    for key in (b"Size", b"Rss", b"Pss", b"Private_Dirty"):
        smaps = re.sub(rb"^(%s:\s+)(\d+)( kB)$" % key, lambda m: m.group(1) + str(int(m.group(2)) + GROWTH_KIB)
                       .encode() + m.group(3), smaps, count=1, flags=re.M)
    (new / str(grown) / "smaps").write_bytes(smaps)
    shutil.rmtree(new / str(gone))
    stat = (new / str(reused) / "stat").read_bytes()
    old_start = int(stat.rpartition(b")")[2].split()[19])
    (new / str(reused) / "stat").write_bytes(_start_time(stat, old_start + 100))
    born = max(pids) + 1000
    shutil.copytree(new / str(template), new / str(born))
    stat = (new / str(born) / "stat").read_bytes()
    (new / str(born) / "stat").write_bytes(str(born).encode() + stat[stat.index(b" "):])
    return old, new, dict(grown=grown, gone=gone, reused=reused, template=template, born=born)


def _rows(*args):
    proc = run_smem("diff", *map(str, args), "-F", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _classic(*args):
    proc = run_smem(*map(str, args), "-F", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.uses("cpu")
def test_processes_matched_by_pid_and_start_time(captures):
    old, new, p = captures
    doc = _rows(old, new, "-c", "pid status old_pss pss dpss duss drss dvss", "-t")
    rows = {}
    for row in doc["rows"]:
        rows.setdefault(row["pid"], []).append(row)
    (grown,) = rows[p["grown"]]
    assert grown["status"] == "" and grown["dpss"] == grown["duss"] == grown["drss"] == grown["dvss"] == GROWTH_KIB
    assert grown["pss"] - grown["old_pss"] == GROWTH_KIB
    (gone,) = rows[p["gone"]]
    assert gone["status"] == "gone" and gone["pss"] is None and gone["dpss"] == -gone["old_pss"]
    # the same pid with another start time is another process: one gone, one new
    assert sorted(r["status"] for r in rows[p["reused"]]) == ["gone", "new"]
    (born,) = rows[p["born"]]
    (template,) = rows[p["template"]]
    assert born["status"] == "new" and born["old_pss"] is None and born["dpss"] == born["pss"] == template["pss"]
    unchanged = [r for pid, rs in rows.items() for r in rs if pid not in p.values()]
    assert unchanged and all(r["dpss"] == 0 and r["status"] == "" for r in unchanged)
    # -t: NEW's totals minus OLD's, to the KiB
    totals = {s: _classic("-S", tree, "-c", "pid pss uss rss vss", "-t")["totals"] for s, tree in
              (("old", old), ("new", new))}
    for key in ("pss", "uss", "rss", "vss"):
        assert doc["totals"][f"d{key}"] == totals["new"][key] - totals["old"][key], key
    # the largest change last (smem's order), either way
    changes = [abs(r["dpss"]) for r in doc["rows"]]
    assert changes == sorted(changes)


@pytest.mark.uses("cpu")
def test_users_and_programs(captures):
    old, new, p = captures
    users = _rows(old, new, "-u", "-c", "user old_pss pss dpss")
    assert sum(r["dpss"] for r in users["rows"]) == sum(
        r["pss"] for r in _classic("-S", new, "-u")["rows"]) - sum(r["pss"] for r in _classic("-S", old, "-u")["rows"])
    programs = _rows(old, new, "-g", "-c", "name count dpss")
    assert {r["name"] for r in programs["rows"]} >= {r["name"] for r in _classic("-S", new, "-g")["rows"]}


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("view, name, kept", [("-g", "name", set()), ("-u", "user", {""})])
def test_counts_compare_as_amounts(view, name, kept):
    """smem diff -g: a group's Count in OLD, in NEW and the change, as its memory is (it was NEW's
    alone, OLD's for a group gone); -t totals the processes of each side and the change.  The
    recorded captures: quirks.tar.gz has programs faithful.tar.gz lacks, and more of root's processes."""
    quirks = FIXTURES / "captures" / "quirks.tar.gz"
    for old, new in ((CAPTURE, quirks), (quirks, CAPTURE)):  # groups new, then gone
        doc = _rows(old, new, view, "-c", f"{name} status old_count count dcount dpss", "-t")
        before, after = ({r[name]: r["count"] for r in _classic("-S", tree, view)["rows"]} for tree in (old, new))
        for row in doc["rows"]:
            was, now = before.get(row[name]), after.get(row[name])
            assert (row["old_count"], row["count"], row["dcount"]) == (was, now, (now or 0) - (was or 0)), row
        # programs new (then gone) and, in both, root with more processes (then fewer)
        assert {row["status"] for row in doc["rows"] if row["dcount"]} == kept | {"new" if old is CAPTURE else "gone"}
        assert doc["totals"]["old_processes"] == sum(before.values())
        assert doc["totals"]["processes"] == sum(after.values())
        assert doc["totals"]["dprocesses"] == sum(after.values()) - sum(before.values())
    # by default the change stands with the other changes, a number of processes (no -k suffix)
    text = run_smem("diff", CAPTURE, quirks, view, "-k").stdout.decode().splitlines()
    assert text[0].split()[-7:] == ["OldPSS", "PSS", "dCount", "dSwap", "dUSS", "dPSS", "dRSS"]
    assert all(re.fullmatch(r"-?\d+", line.split()[-5]) for line in text[1:] if line.split())


@pytest.mark.uses("cpu")
def test_every_format_and_the_classic_table(captures):
    old, new, _ = captures
    text = run_smem("diff", old, new, "-c", "pid status pss dpss", "-t").stdout.decode().splitlines()
    assert text[0].split() == ["PID", "Status", "PSS", "dPSS"]
    rows = list(csv.reader(io.StringIO(run_smem("diff", old, new, "-F", "csv", "-t").stdout.decode())))
    assert rows[-1][0] == "total"
    assert run_smem("diff", old, new, "-m", "-F", "github").returncode == 0
    assert run_smem("diff", old, new, "-w").returncode == 0


@pytest.mark.uses("cpu")
def test_live_against_a_capture_and_usage_errors(captures):
    old, _, _ = captures
    live = run_smem("diff", old, "live", "-u")
    assert live.returncode == 0 and live.stdout
    bad = run_smem("diff", old)
    assert bad.returncode == 2 and len(bad.stderr.decode().splitlines()) == 1
    unknown = run_smem("diff", old, old, "-c", "pid nosuch")
    assert unknown.returncode == 2 and b"dpss" in unknown.stderr  # the known fields include the deltas


@pytest.mark.uses("cpu")
def test_json_describes_both_sources(captures):
    old, new, _ = captures
    doc = _rows(old, new, "-u")
    assert doc["sources"]["old"]["description"].endswith(old.name)
    assert doc["sources"]["new"]["description"].endswith(new.name)
    assert doc["source"] == doc["sources"]["new"]  # the key a report has, NEW's as before
    report = _classic("-S", old, "-u")
    assert doc["sources"]["old"] == report["source"]  # as a report of OLD describes it
    assert "sources" not in report  # one source, one description


@pytest.mark.parametrize("view", [[], ["-u"], ["-m"], ["-w"]], ids=["process", "user", "mapping", "system"])
def test_openmetrics_of_a_diff_parses_as_openmetrics(view):
    """The diff views are named "process-diff": their metric names must still be valid ones."""
    parser = pytest.importorskip("prometheus_client.openmetrics.parser",
                                 reason="smem[metrics]: prometheus_client not installed")
    quirks = FIXTURES / "captures" / "quirks.tar.gz"
    text = run_smem("diff", CAPTURE, quirks, *view, "-F", "openmetrics", check=True).stdout.decode()
    names = [f.name for f in parser.text_string_to_metric_families(text)]
    assert names and all(re.fullmatch(r"smem_[a-z]+_diff_[a-z0-9_]+", n) for n in names), names


@pytest.mark.uses("cpu")
def test_new_taken_before_old_is_said(tmp_path):
    """OLD and NEW swapped (or a recording's --from after its --to): the changes read backwards,
    which a warning says; in order, nothing is said."""
    early, late = _tree(tmp_path, "early"), _tree(tmp_path, "late")
    info = (late / "capture-info").read_text()
    (late / "capture-info").write_text(info.replace("time=2026-12-03T08:05:18Z", "time=2026-12-03T09:05:18Z")
                                       .replace("epoch=1796285118", "epoch=1796288718"))
    # (a directory's capture-info was read after it was closed: JSON's source had no time, nothing to compare)
    assert json.loads(run_smem("-S", late, "-F", "json", check=True).stdout)["source"]["epoch"] == 1796288718
    in_order = run_smem("diff", early, late, "-u")
    assert in_order.returncode == 0 and in_order.stderr == b"", in_order.stderr
    swapped = run_smem("diff", late, early, "-u")
    assert swapped.returncode == 0 and swapped.stderr.decode().splitlines() == [
        "smem: warning: NEW (2026-12-03T08:05:18Z) was taken before OLD (2026-12-03T09:05:18Z): each change is "
        "from the later to the earlier"]


@pytest.mark.uses("cpu")
def test_a_side_with_none_of_the_rows_totals_0_not_unknown(captures):
    """-t of rows all gone (a watched process that exited, alone in its -P) showed '-' for NEW's
    PSS, USS, RSS, swap, as if unknown: NEW has none of them, 0; and OLD's of rows all new, 0."""
    old, new, p = captures
    for pid, empty, full in ((p["gone"], "", "old_"), (p["born"], "old_", "")):
        doc = _rows(old, new, "--pid", pid, "-c", "pid status old_pss pss old_uss uss old_rss rss", "-t")
        assert [r["status"] for r in doc["rows"]] == (["gone"] if pid == p["gone"] else ["new"])
        (row,) = doc["rows"]
        for key in ("pss", "uss", "rss"):
            assert doc["totals"][f"{empty}{key}"] == 0 and doc["totals"][f"{full}{key}"] == row[f"{full}{key}"], key


@pytest.mark.uses("cpu")
def test_a_pid_on_neither_side_is_said_as_the_report_says_it(captures):
    """`smem diff --pid N` of a pid on neither side printed an empty table, exit 0, without a word (a
    mistyped pid looked like a process that did not change): a warning beside the processes found,
    an error when none is. A pid on one side only is a change, shown without a word."""
    old, new, p = captures
    neither = "--pid 1: not found on either side, or a kernel thread or zombie (which has no memory of its own)"
    for pid, status in ((p["gone"], "gone"), (p["born"], "new")):
        one_side = run_smem("diff", old, new, "--pid", pid, "-c", "pid status", "-H")
        assert one_side.returncode == 0 and one_side.stderr == b"", one_side.stderr
        assert one_side.stdout.decode().split() == [str(pid), status]
    none = run_smem("diff", old, new, "--pid", 1)
    assert none.returncode == 1 and none.stdout == b""
    assert none.stderr.decode() == f"smem: {neither}\n"
    some = run_smem("diff", old, new, "--pid", f"1,{p['gone']}", "-c", "pid status", "-H")
    assert some.returncode == 0 and some.stdout.decode().split() == [str(p["gone"]), "gone"]
    assert some.stderr.decode() == f"smem: warning: {neither}\n"
    filtered = run_smem("diff", old, new, "--pid", p["gone"], "-P", "^no-such-name$")
    assert filtered.returncode == 1 and filtered.stderr.decode().endswith(", or left out by -P/-U\n")


def test_one_capture_on_both_sides_is_said(tmp_path):
    """`smem diff X X` (or X and a link to it) showed every change 0 without a word, where the same
    frame of a recording on both sides is said; two copies of one capture are two captures."""
    link = tmp_path / "link.tar.gz"
    link.symlink_to(CAPTURE)
    copy = tmp_path / "copy.tar.gz"
    shutil.copyfile(CAPTURE, copy)
    for new in (CAPTURE, link):
        proc = run_smem("diff", CAPTURE, new)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.decode().splitlines() == [f"smem: warning: OLD and NEW are one capture, {new}: "
                                                     "every change is 0"]
    proc = run_smem("diff", CAPTURE, copy)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    # a directory is read anew for each side (a /proc): its changes are real
    proc = run_smem("diff", "/proc", "/proc", "-w")
    assert proc.returncode == 0 and b"one capture" not in proc.stderr, proc.stderr
