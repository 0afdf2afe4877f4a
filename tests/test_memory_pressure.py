"""Memory pressure (PSI): the parser (smem/parsers/pressure.py) against every recorded sample of
../shared/realproc/psi-zoo and hostile variants; the note and JSON keys of -w and --breakdown, the
cgroup view's columns, the serve/OpenMetrics gauges and captures, on a /proc tree (the
cgroup2_zswap fixture) given tests/fixtures/psi's recorded pressure files."""

import io
import json
import re
import shutil
import tarfile

import pytest

from conftest import FIXTURES, REALPROC, run_smem
from smem.capture_writer import write_capture
from smem.parsers.pressure import parse_pressure
from smem.sources.directory import DirectorySource

ZOO = REALPROC / "psi-zoo"
PSI = FIXTURES / "psi"
CGROUP = "galaxy-job-232"


def _zoo_files():
    return sorted(p for p in ZOO.rglob("*") if p.is_file() and p.name != "README.md") if ZOO.is_dir() else []


def unwrapped(data):
    """A zoo sample without its wrapping (README: markdown quotes and indents, comment prefixes)."""
    return b"\n".join(re.sub(rb"^(> |\s*\*\s*|\s+)", b"", line) for line in data.split(b"\n"))


@pytest.mark.parametrize("path", _zoo_files(), ids=lambda p: str(p.relative_to(ZOO)))
def test_every_zoo_sample_reads_without_error(path):
    for data in (path.read_bytes(), unwrapped(path.read_bytes())):
        for stall in parse_pressure(data).values():
            assert all(v is None or 0 <= v <= 100 for v in stall[:3])


def test_the_zoo_is_there_or_skipped():
    if not ZOO.is_dir():
        pytest.skip("the zoo is not available")
    assert len(_zoo_files()) >= 10
    memory = [p for p in _zoo_files() if p.name.startswith("memory")]
    assert all(set(parse_pressure(unwrapped(p.read_bytes()))) == {"some", "full"} for p in memory)


def test_the_recorded_storm():
    stalls = parse_pressure((PSI / "proc-pressure-memory").read_bytes())
    assert stalls["some"][:4] == (99.47, 99.37, 99.37, 8917504840)
    assert stalls["full"][:4] == (86.55, 87.90, 91.54, 8171112563)


LINE = b"some avg10=1.50 avg60=2.00 avg300=3.25 total=12345\nfull avg10=0.00 avg60=0.10 avg300=0.20 total=99\n"


@pytest.mark.parametrize("data, some", [
    (b"", None), (b"\n", None), (LINE[:20], (1.5, None, None, None)), (LINE * 3, (1.5, 2.0, 3.25, 12345)),
    (LINE.replace(b"1.50", b"150.00"), (None, 2.0, 3.25, 12345)),
    (LINE.replace(b"12345", b"9" * 30), (1.5, 2.0, 3.25, None)),
    (LINE.replace(b"1.50", b"-1.5"), (None, 2.0, 3.25, 12345)), (LINE.replace(b"1.50", b"nan"), (None, 2.0, 3.25, 12345)),
    (LINE.replace(b"avg10", b"avg5 x=y avg10"), (1.5, 2.0, 3.25, 12345)),
    (LINE.replace(b"2.00", b"\xff\xfe"), (1.5, None, 3.25, 12345)), (b"\xff" * 100, None),
    (LINE.replace(b"\n", b"\0"), (1.5, 2.0, 3.25, None)),
])
def test_hostile_pressure(data, some):
    stalls = parse_pressure(data)
    assert (stalls["some"][:4] if "some" in stalls else None) == some


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "cgroup2_zswap" / "capture", root)
    (root / "pressure").mkdir()
    shutil.copy(PSI / "proc-pressure-memory", root / "pressure" / "memory")
    shutil.copy(PSI / "cgroup-memory.pressure", root / "sys" / "fs" / "cgroup" / CGROUP / "memory.pressure")
    return root


def _json(*args):
    res = run_smem(*args, "-F", "json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.parametrize("view", [["-w"], ["-w", "--breakdown"]])
def test_the_system_views_say_the_pressure(tree, view):
    document = _json("-S", str(tree), *view)
    assert document["pressure"]["memory"]["some"] == {"avg10": 99.47, "avg60": 99.37, "avg300": 99.37,
                                                      "total_us": 8917504840}
    assert document["pressure"]["memory"]["full"]["avg300"] == 91.54
    text = run_smem("-S", str(tree), *view).stdout.decode()
    assert "memory pressure (/proc/pressure/memory, % of time stalled over avg10 avg60 avg300): " \
           "some 99.47 99.37 99.37; full 86.55 87.90 91.54\n" in text


def test_without_psi_no_note_and_no_key():
    document = _json("-S", str(FIXTURES / "cgroup2_zswap" / "capture"), "-w")
    assert "pressure" not in document and not any("pressure" in n for n in document.get("notes", []))


def test_the_cgroup_view_has_each_cgroups_pressure(tree):
    rows = {r["cgroup"]: r for r in _json("-S", str(tree), "--cgroup", "-c",
                                          "cgroup some10 some60 some300 full10 full60 full300")["rows"]}
    assert [rows[f"/{CGROUP}"][k] for k in ("some10", "some60", "some300", "full10", "full60", "full300")] == \
        [70.24, 68.52, 69.91, 57.59, 58.06, 60.38]
    assert rows["/other.slice/unrecorded.scope"]["some10"] is None  # no memory.pressure: absent


def test_openmetrics_gauges(tree):
    text = run_smem("-S", str(tree), "-F", "openmetrics").stdout.decode()
    assert 'smem_memory_pressure_ratio{kind="full",window="avg10"} 0.8655' in text
    assert 'smem_memory_pressure_stall_seconds_total{kind="some"} 8917.50484' in text
    assert "# TYPE smem_memory_pressure_stall_seconds counter" in text  # (a total since boot: rate() takes it)


def test_the_cgroup_view_has_each_cgroups_stall_time(tree):
    rows = {r["cgroup"]: r for r in _json("-S", str(tree), "--cgroup", "-c", "cgroup somestall fullstall")["rows"]}
    # the recorded memory.pressure's totals, microseconds, as seconds
    assert (rows[f"/{CGROUP}"]["somestall"], rows[f"/{CGROUP}"]["fullstall"]) == (3559.632828, 3300.487258)
    assert rows["/other.slice/unrecorded.scope"]["somestall"] is None


def test_openmetrics_exports_a_cgroups_pressure_columns_as_the_machines(tree):
    """A cgroup's pressure columns, asked for, are the machine's families per cgroup: the avg
    columns one gauge labelled by kind and window (0-1), the totals one counter by kind; a
    cgroup without memory.pressure has no sample, not 0."""
    text = run_smem("-S", str(tree), "--cgroup", "-c", "cgroup some10 full300 fullstall", "-F", "openmetrics",
                    check=True).stdout.decode()
    lines = [l for l in text.splitlines() if l.startswith("smem_cgroup_memory_pressure")]
    assert lines == [f'smem_cgroup_memory_pressure_ratio{{cgroup="/{CGROUP}",kind="some",window="avg10"}} 0.7024',
                     f'smem_cgroup_memory_pressure_ratio{{cgroup="/{CGROUP}",kind="full",window="avg300"}} 0.6038',
                     f'smem_cgroup_memory_pressure_stall_seconds_total{{cgroup="/{CGROUP}",kind="full"}} 3300.487258']
    assert "# TYPE smem_cgroup_memory_pressure_stall_seconds counter" in text
    assert "# UNIT smem_cgroup_memory_pressure_stall_seconds seconds" in text
    assert "smem_cgroup_some10" not in text and "smem_cgroup_fullstall" not in text


def test_a_column_named_twice_is_one_family(tree):
    """-c may name a column twice (smem 1.5's table shows it twice), but an exposition has each
    family once and each series once: the family was written twice ("received metadata after
    samples", and a pressure column's series twice), which a scrape refuses whole."""
    parser = pytest.importorskip("prometheus_client.openmetrics.parser",
                                 reason="smem[metrics]: prometheus_client not installed")
    text = run_smem("-S", str(tree), "--cgroup", "-c", "cgroup pss some10 pss some10 somestall", "-F", "openmetrics",
                    check=True).stdout.decode()
    families = {f.name: f for f in parser.text_string_to_metric_families(text)}
    assert [s.value for s in families["smem_cgroup_memory_pressure_ratio"].samples] == [0.7024]
    assert len(families["smem_cgroup_pss_bytes"].samples) == 2


@pytest.mark.uses("network")
def test_smem_serve_exports_each_cgroups_stall_time_over_http(tree):
    """A real smem serve of the capture on 127.0.0.1, scraped: per cgroup the two counters of its
    stall time (rate() gives any window's share; the six avg gauges would be six more series a
    cgroup), the one without memory.pressure absent from them while its other families are there."""
    parser = pytest.importorskip("prometheus_client.parser", reason="smem[metrics]: prometheus_client not installed")
    from serve_process import next_line, start_serve, stop
    import urllib.request
    proc = start_serve("--listen", "127.0.0.1:0", "-S", str(tree), "--top", "0")
    try:
        line = next_line(proc)
        if "warning: capture" in line:  # (the tree says no installed RAM: -w's sizing, said first)
            line = next_line(proc)
        assert "serving http://" in line, line
        base = line.split("serving ")[1].strip().rsplit("/", 1)[0]
        with urllib.request.urlopen(base + "/metrics", timeout=60) as response:
            text = response.read().decode()
    finally:
        status, stderr = stop(proc)
    assert status == 0, stderr
    families = {f.name: f for f in parser.text_string_to_metric_families(text)}
    stalled = families["smem_cgroup_memory_pressure_stall_seconds"]
    assert stalled.type == "counter"
    assert {(s.labels["cgroup"], s.labels["kind"]): s.value for s in stalled.samples} == {
        (f"/{CGROUP}", "some"): 3559.632828, (f"/{CGROUP}", "full"): 3300.487258}
    assert "/other.slice/unrecorded.scope" in {s.labels["cgroup"] for s in families["smem_cgroup_pss_bytes"].samples}
    assert "smem_cgroup_memory_pressure_ratio" not in families  # (cardinality: the counters say it)


def test_a_capture_carries_the_pressure_files(tree):
    out = io.BytesIO()
    source = DirectorySource(str(tree))
    try:
        write_capture(source, out, compression=None)
    finally:
        source.close()
    with tarfile.open(fileobj=io.BytesIO(out.getvalue())) as tar:
        assert tar.extractfile("pressure/memory").read() == (PSI / "proc-pressure-memory").read_bytes()
        assert tar.extractfile(f"sys/fs/cgroup/{CGROUP}/memory.pressure").read() == \
            (PSI / "cgroup-memory.pressure").read_bytes()


def test_smem_serve_exports_the_pressure_and_gpu_gauges(tree, tmp_path):
    parser = pytest.importorskip("prometheus_client.parser", reason="smem[metrics]: prometheus_client not installed")
    out = tmp_path / "textfile"
    out.mkdir()
    for source in (tree, FIXTURES / "gpu_proc" / "tree"):
        res = run_smem("serve", "-S", str(source), "--textfile", str(out), "--count", "1", "--top", "10")
        assert res.returncode == 0, res.stderr
        samples = {}
        for family in parser.text_string_to_metric_families((out / "smem.prom").read_text()):
            for sample in family.samples:
                samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
        if source == tree:
            assert samples["smem_memory_pressure_ratio"][(("kind", "some"), ("window", "avg60"))] == 0.9937
            assert samples["smem_memory_pressure_stall_seconds_total"][(("kind", "full"),)] == 8171.112563
        else:
            assert "smem_memory_pressure_ratio" not in samples  # a tree without PSI: no gauge, not 0
            gpu = {dict(k)["pid"]: v for k, v in samples["smem_process_gpu_bytes"].items()}
            assert gpu["100"] == gpu["101"] == (544428 - 13584 + 22528) // 2 * 1024 and "104" not in gpu
            assert sum(samples["smem_program_dmabuf_bytes"].values()) == 15 * 1024
