"""smem serve: a real server on a free port of 127.0.0.1, scraped while it serves a recorded capture
(so every value is exact), concurrently, and stopped with SIGTERM; the textfile it writes; its errors."""

import gzip
import json
import os
import socket
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import FIXTURES, run_smem
from serve_process import serving, stop

parser = pytest.importorskip("prometheus_client.parser", reason="smem[metrics]: prometheus_client not installed")

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"
AMOUNTS = ("swap", "swappss", "uss", "pss", "rss")


def _get(url):
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.status, response.read().decode()


def _samples(text):
    """{family name: {labels as a sorted tuple: value}} of smem's own families."""
    result = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("smem_"):
                result.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return result


def _table(*args):
    doc = json.loads(run_smem("-S", CAPTURE, "-F", "json", *args, check=True).stdout)
    return doc["rows"]


@pytest.mark.uses("network")
def test_scrapes_share_one_collection_and_match_the_reports():
    proc, base = serving("-S", CAPTURE, "--top", "5", "--min-interval", "600")
    try:
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(_get, [base + "/metrics"] * 8))
        assert {status for status, _ in answers} == {200}
        scrapes = [_samples(text) for _, text in answers]
        # eight scrapes at once: one collection, the same figures in every answer
        assert all(s["smem_collections_total"] == {(): 1.0} for s in scrapes)
        assert all(s == scrapes[0] for s in scrapes)
        served = scrapes[0]
        assert served["smem_collection_errors_total"] == {(): 0.0}
        assert served["smem_collection_unreadable_processes"] == {(): 0.0}

        for args, label, key in ((["-u"], "user", "user"), (["-g"], "name", "name"),
                                 (["--cgroup"], "cgroup", "cgroup")):
            view = {"user": "user", "name": "program", "cgroup": "cgroup"}[label]
            rows = _table(*args, "-c", f"{key} count " + " ".join(AMOUNTS))
            assert rows, args
            for amount in AMOUNTS:
                assert served[f"smem_{view}_{amount}_bytes"] == {
                    ((label, str(r[key])),): float(r[amount] * 1024) for r in rows}, (view, amount)
            assert served[f"smem_{view}_processes"] == {((label, str(r[key])),): float(r["count"]) for r in rows}

        areas = _table("-w", "-c", "area used cache noncache")
        assert served["smem_system_used_bytes"] == {(("area", r["area"]),): float(r["used"] * 1024) for r in areas}

        # per process: only the five with the most PSS, labelled by pid, user and name
        top = _table("-c", "pid user name pss", "-s", "pss", "-r")[:5]
        assert served["smem_process_pss_bytes"] == {
            (("name", r["name"]), ("pid", str(r["pid"])), ("user", r["user"])): float(r["pss"] * 1024) for r in top}

        # OpenMetrics too, when asked for (units declared, counters ending in _total)
        request = urllib.request.Request(base + "/metrics", headers={"Accept": "application/openmetrics-text"})
        with urllib.request.urlopen(request, timeout=60) as response:
            from prometheus_client.openmetrics.parser import text_string_to_metric_families
            om = {f.name: f for f in text_string_to_metric_families(response.read().decode())}
        assert om["smem_user_pss_bytes"].unit == "bytes" and om["smem_collections"].type == "counter"
        # HEAD is GET without the body (a 405 before): the same collection, the same length
        get = urllib.request.urlopen(base + "/metrics", timeout=60)
        body = get.read()
        head = urllib.request.urlopen(urllib.request.Request(base + "/metrics", method="HEAD"), timeout=60)
        assert (head.status, head.read()) == (200, b"")
        assert head.headers["Content-Type"] == get.headers["Content-Type"]
        # (smem's own process_* figures, its CPU time, move between the two answers: the length nearly)
        assert abs(int(head.headers["Content-Length"]) - len(body)) < len(body) // 100
        assert _get(base + "/")[0] == 200
        with pytest.raises(urllib.error.HTTPError) as missing:
            _get(base + "/other")
        assert missing.value.code == 404
        # the answer names every path served, the page's too
        assert missing.value.read() == b"not found: smem serves /metrics, / (the page) and /data.json\n"
        # a later scrape within --min-interval is the same collection
        assert _samples(_get(base + "/metrics")[1])["smem_collections_total"] == {(): 1.0}
    finally:
        status, stderr = stop(proc)
    assert status == 0, stderr  # stopped as asked: not an error
    assert "Traceback" not in stderr


def test_textfile_is_replaced_whole_and_names_what_openmetrics_names(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("keep\n")
    out = tmp_path / "textfile"
    out.mkdir()
    (out / "smem.prom").symlink_to(elsewhere)  # replaced, never written through
    for _ in range(2):
        proc = run_smem("serve", "-S", CAPTURE, "--textfile", out, "--count", "1", "--top", "3")
        assert proc.returncode == 0, proc.stderr
    assert os.listdir(out) == ["smem.prom"]  # no temporary file left
    prom = out / "smem.prom"
    assert not prom.is_symlink() and elsewhere.read_text() == "keep\n"
    assert prom.stat().st_mode & 0o777 == 0o644  # node_exporter runs as another user
    written = _samples(prom.read_text())
    assert len(written["smem_process_pss_bytes"]) == 3
    # the same names and values as -F openmetrics where they mean the same thing
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    text = run_smem("-S", CAPTURE, "-F", "openmetrics", check=True).stdout.decode()
    openmetrics = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            openmetrics.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    for name in ("smem_user_pss_bytes", "smem_user_uss_bytes", "smem_user_swap_bytes", "smem_system_used_bytes"):
        assert written[name] == openmetrics[name], name
    assert written["smem_process_pss_bytes"].items() <= openmetrics["smem_process_pss_bytes"].items()
    # a source that cannot be read, gone or corrupt: cron sees a failure, the good file is kept
    good = prom.read_bytes()
    corrupt = tmp_path / "corrupt.tgz"
    corrupt.write_bytes(gzip.compress(b"not a tar archive" * 100)[:200])
    for source in (tmp_path / "gone.tgz", corrupt):
        failed = run_smem("serve", "-S", source, "--textfile", out, "--count", "1")
        assert failed.returncode == 1 and len(failed.stderr.splitlines()) == 1, failed.stderr
        assert prom.read_bytes() == good and os.listdir(out) == ["smem.prom"]


@pytest.mark.parametrize("args,status,says", [
    (["--listen", "127.0.0.1"], 2, "--listen takes HOST:PORT"),
    (["--listen", "::1:9464"], 2, "[IPV6]:PORT"),
    (["--listen", "127.0.0.1:65536"], 2, "--listen takes"),
    (["--interval", "5"], 2, "use them with --textfile"),
    (["--textfile", "x", "--listen", "127.0.0.1:1"], 2, "choose one"),
    (["--textfile", CAPTURE], 1, "not a directory"),
    (["-S", "-"], 2, "standard input"),
    (["-S", "/nonexistent/capture.tgz", "--listen", "127.0.0.1:0"], 1, "cannot read /nonexistent/capture.tgz"),
    (["-P", "(", "--listen", "127.0.0.1:0"], 2, "invalid regular expression"),
])
def test_wrong_options_are_one_line(args, status, says):
    proc = run_smem("serve", "-S", CAPTURE, *args) if "-S" not in args else run_smem("serve", *args)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == status and len(lines) == 1 and says in lines[0], lines


@pytest.mark.parametrize("family,host", [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")])
def test_a_port_in_use_is_one_line(family, host):
    try:
        taken = socket.socket(family, socket.SOCK_STREAM)
        taken.bind((host, 0))
    except OSError:
        pytest.skip(f"no {host} here")
    with taken:
        taken.listen()
        port = taken.getsockname()[1]
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        proc = run_smem("serve", "-S", CAPTURE, "--listen", address)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 1 and lines == [f"smem: cannot listen on {address}: Address already in use"], lines


@pytest.mark.uses("network")
def test_a_process_that_cannot_be_read_is_counted_not_a_failed_scrape(tmp_path):
    import tarfile
    tree = tmp_path / "tree"
    with tarfile.open(CAPTURE) as tar:
        tar.extractall(tree, filter="data")
    pid = next(p.name for p in sorted(tree.iterdir()) if p.name.isdigit() and (p / "cmdline").stat().st_size
               and (p / "smaps_rollup").is_file() and (p / "smaps_rollup").stat().st_size)
    for name in ("smaps_rollup", "smaps"):  # a link inside a copied tree is never followed: unreadable
        (tree / pid / name).unlink()
        (tree / pid / name).symlink_to("/proc/self/smaps")
    out = tmp_path / "out"
    out.mkdir()
    proc = run_smem("serve", "-S", tree, "--textfile", out, "--count", "1", "--top", "1000")
    assert proc.returncode == 0 and f"pid {pid}".encode() in proc.stderr, proc.stderr
    written = _samples((out / "smem.prom").read_text())
    assert written["smem_collection_unreadable_processes"] == {(): 1.0}
    assert pid not in {dict(labels)["pid"] for labels in written["smem_process_pss_bytes"]}
    users = json.loads(run_smem("-S", tree, "-u", "-F", "json", "-c", "user pss", check=True).stdout)["rows"]
    assert written["smem_user_pss_bytes"] == {(("user", r["user"]),): float(r["pss"] * 1024) for r in users}


@pytest.mark.uses("network")
def test_processes_a_capture_left_out_are_counted_as_unreadable(tmp_path):
    """A capture whose writer could not read 3 processes (its capture-info says so, and a report
    warns of it) was served with smem_collection_unreadable_processes 0: an alert on it stayed
    quiet while the figures left those processes out."""
    import tarfile
    tree = tmp_path / "tree"
    with tarfile.open(CAPTURE) as tar:
        tar.extractall(tree, filter="data")
    with open(tree / "capture-info", "a") as info:
        info.write("unreadable_processes=3\n")
    out = tmp_path / "out"
    out.mkdir()
    proc = run_smem("serve", "-S", tree, "--textfile", out, "--count", "1")
    assert proc.returncode == 0 and b"left out 3 processes" in proc.stderr, proc.stderr
    assert _samples((out / "smem.prom").read_text())["smem_collection_unreadable_processes"] == {(): 3.0}


def test_the_page_answers_only_host_headers_naming_the_address_served():
    from smem.serve import allowed_hosts
    loopback = allowed_hosts("127.0.0.1", 9464)
    assert loopback("127.0.0.1:9464") and loopback("localhost:9464")
    assert not any(map(loopback, ("127.0.0.1:9465", "rebind.example:9464", "localhost", "", "127.0.0.1")))
    v6 = allowed_hosts("::1", 9464)
    assert v6("[::1]:9464") and v6("localhost:9464") and not v6("::1:9464")
    anywhere = allowed_hosts("::", 80)  # a wildcard: any address of the machine, never a name
    assert anywhere("[fe80::1]:80") and anywhere("192.0.2.7:80") and not anywhere("rebind.example:80")
    assert not anywhere("192.0.2.7:81")
    named = allowed_hosts("box.example", 9464)
    assert named("box.example:9464") and not named("localhost:9464")


def test_a_port_in_use_is_found_before_anything_is_read():
    """The port is bound first: a taken one is the only line, not after a collection's warnings
    (here --max-rss 1K, which would leave out and name every process read)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run_smem("serve", "--max-rss", "1K", "--listen", f"127.0.0.1:{port}")
    assert proc.returncode == 1
    assert proc.stderr.decode().splitlines() == [f"smem: cannot listen on 127.0.0.1:{port}: Address already in use"]


@pytest.mark.uses("network")
def test_an_accept_header_with_a_version_not_numbers_gets_the_metrics():
    """prometheus_client compares an OpenMetrics Accept header's version as numbers and raises on
    one that is not: anyone who could reach the port had a 500, and a line on smem's stderr for
    each request.  Such a header is a format smem does not offer: the default one answers."""
    proc, base = serving("-S", CAPTURE, "--min-interval", "60")
    try:
        for accept in ("application/openmetrics-text; version=abc", "text/plain; version=x.1",
                       "application/openmetrics-text; version=1.0.0"):
            request = urllib.request.Request(base + "/metrics", headers={"Accept": accept})
            with urllib.request.urlopen(request, timeout=60) as response:
                assert response.status == 200, accept
                assert "smem_process_pss_bytes" in response.read().decode(), accept
    finally:
        status, err = stop(proc)
    assert status == 0
    assert "answering" not in err, err


def test_a_collection_reads_only_what_it_exports():
    """The --top table had the process view's command line, which no metric carries (a label would
    be a new series whenever it changed): each collection read it again for every process it re-read.
    Its columns now are those exported, as samples or labels, and the families are the same."""
    from smem.formats.families import exported, families
    from smem.options import Query, ServeOptions
    from smem.report import make_table
    from smem.serve import EXTRA_COLUMNS, SharedCollector
    from smem.views import VIEWS

    collector = SharedCollector(Query(source=str(CAPTURE)), ServeOptions(top=100), warn=lambda _: None)
    assert not collector.plan.needs.command
    for view, options in ((collector.plan.view, collector.request.table), *collector.plan.companions):
        labels = {name for name, _ in view.metrics.labels}
        assert all(key in labels or exported(view.columns[key]) for key in options.columns), (view.name, options)
    collection = collector.latest(say=False)
    ours = {family.name: family.samples for family in collection.families if family.name.startswith("smem_process_")}
    # the process view's table with every default column and the exporter's, from the same snapshot
    view = VIEWS["process"]
    every = view.default_columns + tuple(k for k in EXTRA_COLUMNS if k in view.columns and k not in view.default_columns)
    assert "command" in every
    whole = make_table([collector._previous], view, collector.request.table._replace(columns=every),
                       collector.request.system)
    theirs = {f.name: f.samples for f in families(whole)}
    assert ours == {name: samples for name, samples in theirs.items() if name in ours}
    assert ours.keys() == theirs.keys()
