"""smem serve as an exporter left running for weeks: a real server on a free port of 127.0.0.1 (or
the textfile writer on a disk of its own), asked what a person or a tool asks it over time."""

import os
import subprocess
import time
import urllib.request

import pytest

from conftest import FIXTURES, run_smem, run_smem_process
from serve_process import next_line, start_serve, stop

parser = pytest.importorskip("prometheus_client.parser", reason="smem[metrics]: prometheus_client not installed")

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


def _get(url):
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read().decode()


def _names(text):
    return {sample.name for family in parser.text_string_to_metric_families(text) for sample in family.samples}


@pytest.mark.uses("network")
def test_name_filters_answer_the_families_asked_for_and_the_source_time_is_exported():
    """``/metrics?name[]=`` (prometheus_client's filter) answered an empty page: smem's families are
    known only once collected.  And a served capture says when it was taken, not only when it was
    read: a recording whose recorder died is served still, and only its time shows it."""
    proc = start_serve("-S", CAPTURE, "--listen", "127.0.0.1:0", "--top", "3")
    try:
        line = next_line(proc)
        assert "serving http://" in line, line
        base = line.split("serving ")[1].strip().rsplit("/", 1)[0]
        whole = _get(base + "/metrics")
        asked = _get(base + "/metrics?name[]=smem_user_pss_bytes&name[]=smem_collections_total")
        assert _names(asked) == {"smem_user_pss_bytes", "smem_collections_total"}
        assert {line for line in asked.splitlines() if line.startswith("smem_user_pss_bytes{")} == \
            {line for line in whole.splitlines() if line.startswith("smem_user_pss_bytes{")}
    finally:
        status, stderr = stop(proc)
    assert status == 0 and "Traceback" not in stderr, stderr
    taken = [line for line in whole.splitlines() if line.startswith("smem_source_timestamp_seconds ")]
    epoch = [line for line in run_smem("-S", CAPTURE, "-F", "json", check=True).stdout.decode().splitlines()
             if '"epoch"' in line]
    assert len(taken) == 1 and len(epoch) == 1
    assert float(taken[0].split()[1]) == float(epoch[0].split(":")[1].strip(" ,"))
    assert float(taken[0].split()[1]) < time.time() - 86400  # (the capture's day, not the scrape's)


@pytest.mark.uses("network")
def test_cpu_percent_says_what_smem_serve_measures():
    """The HELP of smem_<view>_cpu_percent was the column's, which speaks of ps, watch mode and smem
    diff: a Prometheus user read of commands that are not there, not that it is since the scrape
    before.  The -F openmetrics of a report (since each started) keeps the column's."""
    proc = start_serve("-S", CAPTURE, "--listen", "127.0.0.1:0", "--top", "3")
    try:
        base = next_line(proc).split("serving ")[1].strip().rsplit("/", 1)[0]
        helps = {f.name: f.documentation for f in parser.text_string_to_metric_families(_get(base + "/metrics"))}
    finally:
        status, stderr = stop(proc)
    assert status == 0 and "Traceback" not in stderr, stderr
    for view in ("process", "program", "user", "cgroup"):
        said = helps[f"smem_{view}_cpu_percent"]
        assert "since the collection before" in said and "watch mode" not in said, said
        assert "rate() of the _cpu_seconds_total counter" in said, said


def test_serving_a_tcp_source_is_refused_with_what_to_do_instead():
    # (a process with a timeout: it waited for a push before serving, and then at every scrape)
    proc = run_smem_process("serve", "-S", "tcp://127.0.0.1:5555", "--listen", "127.0.0.1:0")
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, lines
    assert "smem record --listen" in lines[0] and "smem serve -S DIR" in lines[0]


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs of its own (mount(8)), unmounted after."""
    where = tmp_path / "disk"
    where.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)])


def _written(path, other_than=None, seconds=60):
    """``path``'s inode once it exists (and is not ``other_than``): the textfile is renamed into place."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            inode = os.stat(path).st_ino
        except FileNotFoundError:
            inode = None
        if inode is not None and inode != other_than:
            return inode
        time.sleep(0.05)
    pytest.fail(f"{path} was not written")


def _fill(disk):
    """Fill ``disk`` to its last byte, twice a little apart: the writer may have been holding a
    temporary file the first time, whose room it gave back."""
    with open(disk / "filler", "ab") as filler:
        for _ in range(2):
            try:
                while True:
                    filler.write(bytes(1 << 16))
                    filler.flush()
            except OSError:
                pass
            time.sleep(0.5)


@pytest.mark.uses("cpu")
def test_a_textfile_writer_outlives_a_disk_that_fills_for_a_while(small_disk):
    """The disk full after a good write: one warning (not one per interval), the last file kept
    whole, and writing again once there is room; it ran on and stops with 0 when asked."""
    prom = small_disk / "smem.prom"
    proc = start_serve("-S", CAPTURE, "--textfile", small_disk, "--interval", "0.2")
    try:
        _written(prom)
        _fill(small_disk)
        warning = next_line(proc)
        assert warning.startswith("smem: warning: cannot write") and "No space left on device" in warning, warning
        kept = (prom.stat().st_ino, prom.read_bytes())
        time.sleep(1)  # (five intervals, each failing)
        assert proc.poll() is None  # (it was exit 1 at the first full disk)
        assert (prom.stat().st_ino, prom.read_bytes()) == kept
        assert sorted(os.listdir(small_disk)) == ["filler", "smem.prom"]  # no temporary file left
        (small_disk / "filler").unlink()
        _written(prom, other_than=kept[0])
    finally:
        status, stderr = stop(proc)
    assert status == 0 and stderr == "", stderr  # the warning said once, however many intervals it lasted
    assert _names(prom.read_text()) >= {"smem_user_pss_bytes", "smem_collections_total"}


def test_a_textfile_directory_never_written_is_an_error_at_once(small_disk):
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    proc = run_smem("serve", "-S", CAPTURE, "--textfile", small_disk, "--interval", "0.2")
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 1 and lines == [f"smem: cannot write {small_disk}/smem.prom: Read-only file system"]


@pytest.fixture
def many_processes(tmp_path):
    """A copied /proc tree of about 500 processes (faithful's real ones, each copied 20 times under
    new pids): a collection of it takes a tenth of a second or more, longer than the --min-interval
    below (1/20 s) on the fastest machine."""
    import shutil
    import tarfile
    tree = tmp_path / "tree"
    with tarfile.open(CAPTURE) as tar:
        tar.extractall(tree, filter="data")
    pids = [p for p in tree.iterdir() if p.name.isdigit()]
    for copy in range(1, 21):
        for process in pids:
            pid = copy * 100000 + int(process.name)
            shutil.copytree(process, tree / str(pid), copy_function=os.link)  # (its files linked: cheap)
            stat = tree / str(pid) / "stat"
            stat.unlink()  # (its own stat, naming its pid)
            stat.write_bytes((process / "stat").read_bytes().replace(process.name.encode(), str(pid).encode(), 1))
    return tree


def _sample(text, name):
    return next(s.value for f in parser.text_string_to_metric_families(text) for s in f.samples if s.name == name)


@pytest.mark.uses("network")
def test_min_interval_counts_from_when_a_collection_started(many_processes):
    """A scrape --min-interval after the one before was answered with that one again whenever the
    collection took a while (its age counted from its end): Prometheus scraping every S seconds a
    server whose collections take d got the same figures at every other scrape once S - d < S.
    Scrapes that arrive while a collection is under way still share it, however long it takes."""
    from concurrent.futures import ThreadPoolExecutor
    proc = start_serve("--listen", "127.0.0.1:0", "-S", many_processes, "--min-interval", "0.05", "--top", "1")
    try:
        base = next_line(proc).split("serving ")[1].strip().rsplit("/", 1)[0]
        with ThreadPoolExecutor(4) as pool:
            together = list(pool.map(_get, [base + "/metrics"] * 4))
        # (longer than --min-interval: what this test is about)
        assert _sample(together[0], "smem_collection_duration_seconds") > 0.05
        shared = {_sample(text, "smem_collections_total") for text in together}
        assert len(shared) == 1  # one collection for the four (one more at start checked the source)
        # at once after it, but its figures are older than --min-interval: a new collection
        assert _sample(_get(base + "/metrics"), "smem_collections_total") == shared.pop() + 1
    finally:
        status, stderr = stop(proc)
    assert status == 0 and "Traceback" not in stderr, stderr


@pytest.mark.uses("network")
def test_a_scraper_every_min_interval_gets_a_fresh_collection_each_time():
    """Prometheus scraping every S seconds a server with --min-interval S found the collection
    before S seconds old give or take a few milliseconds, and was answered with it again about
    every other scrape (seen: scrape durations 0.01, 0.1, 0.01, 0.1 s, each figure served twice).
    Here each scrape comes a hair early: 0.95 s after the collection before started."""
    proc = start_serve("--listen", "127.0.0.1:0", "-S", CAPTURE, "--min-interval", "1", "--top", "1")
    try:
        base = next_line(proc).split("serving ")[1].strip().rsplit("/", 1)[0]
        counts = []
        for _ in range(3):
            text = _get(base + "/metrics")
            counts.append(_sample(text, "smem_collections_total"))
            ended, took = (_sample(text, f"smem_collection_{n}_seconds") for n in ("timestamp", "duration"))
            started = ended - took
            time.sleep(max(0.0, started + 0.95 - time.time()))
    finally:
        status, stderr = stop(proc)
    assert status == 0 and "Traceback" not in stderr, stderr
    assert counts[1] == counts[0] + 1 and counts[2] == counts[1] + 1, counts


@pytest.mark.uses("network")
def test_the_live_page_gets_a_new_reading_at_each_refresh():
    """The page fetches data.json every --min-interval seconds (setInterval), and its reading, aged
    from its end, was found younger than that at every other fetch: the page said "read at" a time
    two intervals old.  Here each fetch comes 0.95 s after the reading before started."""
    pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
    import json
    proc = start_serve("--listen", "127.0.0.1:0", "-S", CAPTURE, "--min-interval", "1", "--top", "1")
    try:
        base = next_line(proc).split("serving ")[1].strip().rsplit("/", 1)[0]
        read_at = []
        for _ in range(3):
            read_at.append(json.loads(_get(base + "/data.json"))["meta"]["read_at"])
            time.sleep(max(0.0, read_at[-1] + 0.95 - time.time()))
    finally:
        status, stderr = stop(proc)
    assert status == 0 and "Traceback" not in stderr, stderr
    assert read_at[0] < read_at[1] < read_at[2], read_at


@pytest.mark.uses("network")
def test_a_log_no_one_reads_any_more_never_fails_a_scrape(tmp_path):
    """Started from a shell that is gone (its terminal hung up) or piped to a logger that died, smem
    serve cannot write its stderr: each scrape that had something new to say (a capture removed)
    was an empty reply, the target down, while smem's own figures could still be served."""
    import shutil
    capture = tmp_path / "capture.tgz"
    shutil.copy(CAPTURE, capture)
    proc = start_serve("-S", capture, "--listen", "127.0.0.1:0", "--min-interval", "0")
    try:
        line = next_line(proc)
        assert "serving http://" in line, line
        base = line.split("serving ")[1].strip().rsplit("/", 1)[0]
        assert "the page" in next_line(proc)
        proc.stderr.close()  # (no one reads it now: a write is EPIPE)
        assert "smem_process_pss_bytes{" in _get(base + "/metrics")
        capture.unlink()
        for _ in range(2):
            served = {s.name: s.value for f in parser.text_string_to_metric_families(_get(base + "/metrics"))
                      for s in f.samples}
            assert "smem_process_pss_bytes" not in served and served["smem_collection_errors_total"] >= 1
        assert proc.poll() is None
    finally:
        proc.send_signal(subprocess.signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
