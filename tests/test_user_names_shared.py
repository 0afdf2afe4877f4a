"""Two uids with one name (passwd merged from NIS or LDAP, a capture's passwd): -u keeps one row per
uid, as smem 1.5 did, and labels each such row ``name:uid``, so that no two rows, CSV or JSON rows or
metric series, carry one label (Prometheus refuses a duplicate label set).

The capture is tests/fixtures/captures/faithful.tar.gz with uid 1 (daemon) renamed nobody, in its
passwd and its tar headers.  smem 1.5 (/usr/bin/smem -u, on it extracted, with this machine's passwd so
edited) printed, without smaps_rollup:

    User     Count     Swap      USS      PSS      RSS
    nobody       2        0     2796     9226    40960
    nobody       2        0    15120    18570    36836
    root        20     8192    75684   119755   303340
"""

import io
import json
import tarfile

import pytest

from conftest import FIXTURES, run_smem, without_rollups

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"

#: smem 1.5's rows (above), each labelled apart: uid 65534 and uid 1 are both nobody
SMEM15_ROWS = [["nobody:65534", "2", "0", "2796", "9226", "40960"],
               ["nobody:1", "2", "0", "15120", "18570", "36836"],
               ["root", "20", "8192", "75684", "119755", "303340"]]


def _renamed(where, names, unowned=()):
    """The capture with each uid of ``names`` named so (None: no name), in its passwd and its tar
    headers, and without smaps_rollup (smem 1.5's input); the pids ``unowned`` without their
    directory member and status (no owner known: uid None, user "?")."""
    out = where / "renamed.tar"
    with tarfile.open(CAPTURE) as tin, tarfile.open(out, "w") as tout:
        for m in tin:
            if m.name in {str(pid) for pid in unowned} | {f"{pid}/status" for pid in unowned}:
                continue
            data = tin.extractfile(m).read() if m.isreg() else None
            if m.name == "passwd":
                lines = [line.split(b":") for line in data.splitlines()]
                data = b"".join(b":".join([names[int(f[2])].encode() if int(f[2]) in names else f[0], *f[1:]])
                                + b"\n" for f in lines if names.get(int(f[2]), "") is not None)
                m.size = len(data)
            if m.uid in names:
                m.uname = names[m.uid] or ""
            tout.addfile(m, io.BytesIO(data) if data is not None else None)
    return without_rollups(out, where / "plain.tar")


@pytest.fixture(scope="module")
def shared_name(tmp_path_factory):
    """The capture with uid 1 named nobody, as uid 65534 is."""
    return _renamed(tmp_path_factory.mktemp("shared-name"), {1: "nobody"})


@pytest.mark.uses("cpu")
def test_table_has_smem15s_rows_labelled_apart(shared_name):
    out = run_smem("-S", shared_name, "-u", check=True).stdout.decode().splitlines()
    assert [line.split() for line in out[1:]] == SMEM15_ROWS
    numeric = run_smem("-S", shared_name, "-u", "-n", check=True).stdout.decode().splitlines()
    assert [line.split()[0] for line in numeric[1:]] == ["65534", "1", "0"]  # (-n: uids, as before)


@pytest.mark.uses("cpu")
def test_csv_and_json_rows_are_apart(shared_name):
    csv = run_smem("-S", shared_name, "-u", "-F", "csv", "-c", "user pss", check=True).stdout.decode()
    assert [line.split(",")[0] for line in csv.splitlines()[1:]] == ["nobody:65534", "nobody:1", "root"]
    doc = json.loads(run_smem("-S", shared_name, "-u", "-F", "json", "-c", "user pss", check=True).stdout)
    assert [r["user"] for r in doc["rows"]] == ["nobody:65534", "nobody:1", "root"]


@pytest.mark.uses("cpu")
def test_process_views_total_counts_users_as_uids(shared_name):
    """-t's count of users is the number of -u's rows (smem 1.5 counted names: 2)."""
    doc = json.loads(run_smem("-S", shared_name, "-t", "-F", "json", "-c", "pid user pss", check=True).stdout)
    assert doc["totals"]["users"] == 3


def test_a_name_one_uid_holds_stays_as_it_is():
    out = run_smem("-S", CAPTURE, "-u", "-c", "user", check=True).stdout.decode().split()
    assert sorted(out[1:]) == ["daemon", "nobody", "root"]


@pytest.mark.uses("cpu")
def test_a_name_that_is_an_unnamed_uid(tmp_path):
    """uid 1 named 65534 where uid 65534 has no name (shown as its number): two rows labelled 65534."""
    capture = _renamed(tmp_path, {1: "65534", 65534: None})
    out = run_smem("-S", capture, "-u", "-c", "user pss", check=True).stdout.decode().splitlines()
    assert [line.split() for line in out[1:]] == [["65534:65534", "9226"], ["65534:1", "18570"], ["root", "119755"]]


@pytest.mark.uses("cpu")
def test_openmetrics_and_serve_give_one_series_per_uid(shared_name, tmp_path):
    parser = pytest.importorskip("prometheus_client.parser", reason="smem[metrics]: prometheus_client not installed")
    text = run_smem("-S", shared_name, "-u", "-F", "openmetrics", check=True).stdout.decode()
    run_smem("serve", "-S", shared_name, "--textfile", tmp_path, "--count", "1", check=True)
    served = (tmp_path / "smem.prom").read_text()
    for exposition in (text, served):
        users = [s.labels["user"] for f in parser.text_string_to_metric_families(exposition) for s in f.samples
                 if s.name == "smem_user_pss_bytes"]
        assert sorted(users) == ["nobody:1", "nobody:65534", "root"], users


def _users(capture, *args):
    out = run_smem("-S", capture, "-u", "-c", "user pss", *args).stdout.decode().splitlines()
    return [line.split() for line in out[1:]]


@pytest.mark.uses("cpu")
def test_user_filter_takes_the_label_u_shows(shared_name, tmp_path):
    """-U nobody:1 (the label -u shows) selects uid 1's processes, in a streamed capture and in one
    read as a directory; a plain name still selects every uid so named."""
    with tarfile.open(shared_name) as tar:
        tar.extractall(tmp_path / "dir", numeric_owner=True, filter="fully_trusted")
    for capture in (shared_name, tmp_path / "dir"):
        assert _users(capture, "-U", "nobody:1") == [["nobody", "18570"]]
        assert _users(capture, "-U", "^nobody:65534$") == [["nobody", "9226"]]
        assert _users(capture, "-U", "^nobody$") == [["nobody:65534", "9226"], ["nobody:1", "18570"]]


@pytest.mark.uses("cpu")
def test_user_filter_without_a_colon_matches_names_only(shared_name):
    """A pattern that names no colon is matched against user names alone, as before: -U 0 does not
    select root (uid 0), -U '\\W' no one (no name here holds a non-word character)."""
    for pattern in ("0", r"\W", "1$"):
        assert _users(shared_name, "-U", pattern) == [], pattern


def test_user_filter_takes_the_label_of_an_unknown_uid(tmp_path):
    """A process whose owner is unknown is user "?"; where a uid is named "?" too, -u labels that
    row ``?:?`` (uids_apart), and -U '^\\?:\\?$' selects it as shown (it selected nothing: only a
    known uid was tried as ``name:uid``), in a streamed capture and in one read whole."""
    from smem.loading import load_reading
    from smem.selection import Selection
    from smem.sources import open_source
    capture = _renamed(tmp_path, {1: "?"}, unowned=[7910])
    rows = _users(capture)
    assert sorted(row[0] for row in rows) == ["?:1", "?:?", "nobody", "root"], rows
    unknown = [row for row in rows if row[0] == "?:?"]
    for pattern in (r"^\?:\?$", r":\?", r"[:]\?"):
        assert _users(capture, "-U", pattern) == [["?", unknown[0][1]]], pattern
    assert sorted(row[0] for row in _users(capture, "-U", r"^\?$")) == ["?:1", "?:?"]
    assert _users(capture, "-U", r"^\?:1$") == [["?", next(r[1] for r in rows if r[0] == "?:1")]]
    held = load_reading(open_source(str(capture)), Selection(user=r"^\?:\?$"), jobs=1)
    assert [(p.pid, p.uid, p.user) for p in held.processes] == [(7910, None, "?")]
