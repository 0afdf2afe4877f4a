"""The zswap column with cgroup v2 memory.stat: a process whose cgroup's memory.stat says
what it has in zswap gets its cgroup's compression, one whose cgroup has no memory.stat
the machine's share; a capture without memory.stat falls back silently; `smem capture`
and smemcap.sh record the memory.stat of the processes' cgroups.

tests/fixtures/cgroup2_zswap (its README.md): a real memory.stat (cgroup v2, zswap and
zswapped 0) and a real /proc of two processes whose swap is in zswap.
"""

import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import FIXTURES, run_smem
from smem.capture_writer import write_capture
from smem.kernel_pools import KernelPools, swap_ram_ratios
from smem.parsers.cgroup import cgroup_v2_path
from smem.parsers.meminfo import parse_meminfo
from smem.parsers.memory_stat import parse_memory_stat, zswap_bytes
from smem.sources.directory import DirectorySource

TREE = FIXTURES / "cgroup2_zswap" / "capture"
STAT = TREE / "sys" / "fs" / "cgroup" / "galaxy-job-232" / "memory.stat"
SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "smemcap.sh"


def _pids():
    return sorted(int(p.name) for p in TREE.iterdir() if p.name.isdigit())


def _cgroup(pid):
    return cgroup_v2_path((TREE / str(pid) / "cgroup").read_bytes())


def _swap_pss(pid):
    for line in (TREE / str(pid) / "smaps_rollup").read_text().splitlines():
        if line.startswith("SwapPss:"):
            return int(line.split()[1])
    raise AssertionError("no SwapPss")


def _machine_share(pid):
    """SwapPSS x Zswap / swap in use, from the recorded meminfo."""
    kib = parse_meminfo((TREE / "meminfo").read_bytes()).kib
    return round(_swap_pss(pid) * kib["Zswap"] / (kib["SwapTotal"] - kib["SwapFree"]))


def _zswap_column(source, *view, columns="pid swappss zswap"):
    res = run_smem("-S", source, *view, "-c", columns, "-F", "json")
    assert res.returncode == 0 and res.stderr == b"", res.stderr
    return json.loads(res.stdout)["rows"]


def test_memory_stat_parser_reads_the_recorded_file():
    text = STAT.read_bytes()
    stats = parse_memory_stat(text)
    assert list(stats) == [line.split()[0].decode() for line in text.splitlines()]  # every key, in order
    assert zswap_bytes(stats) == (stats["zswap"], stats["zswapped"])
    older = b"".join(line + b"\n" for line in text.splitlines() if not line.startswith(b"zswap"))
    assert zswap_bytes(parse_memory_stat(older)) is None  # a kernel before 5.19: absent, not 0
    assert parse_memory_stat(b"anon 12\nbroken\nfile x\nshmem 99999999999999999999999\n") == {"anon": 12}


def test_each_process_gets_its_cgroups_zswap_or_the_machines():
    with_stat = [p for p in _pids() if (TREE / "sys/fs/cgroup" / _cgroup(p).lstrip("/") / "memory.stat").is_file()]
    without = [p for p in _pids() if p not in with_stat]
    assert with_stat and without
    assert zswap_bytes(parse_memory_stat(STAT.read_bytes()))[0] == 0  # the recorded cgroup has nothing in zswap
    rows = {r["pid"]: r for r in _zswap_column(TREE)}
    for pid in with_stat:
        assert rows[pid]["swappss"] == _swap_pss(pid) > 0
        assert rows[pid]["zswap"] == 0
    for pid in without:
        assert rows[pid]["zswap"] == _machine_share(pid) > 0
    by_cgroup = {r["cgroup"]: r["zswap"] for r in _zswap_column(TREE, "--cgroup", columns="cgroup zswap")}
    assert by_cgroup == {_cgroup(p): rows[p]["zswap"] for p in _pids()}
    (user,) = _zswap_column(TREE, "-u", columns="user zswap")
    assert user["zswap"] == sum(r["zswap"] for r in rows.values())


def test_a_capture_without_memory_stat_falls_back_silently(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(TREE, old, ignore=shutil.ignore_patterns("sys"))
    rows = _zswap_column(old)
    assert {r["pid"]: r["zswap"] for r in rows} == {p: _machine_share(p) for p in _pids()}


def test_a_cgroup_compressing_as_the_machine_does_gets_the_machines_ratio():
    """The cgroup's ratio is its compression times the machine's share of swap in zswap: with the
    machine's compression it is the machine's ratio; with nothing in zswap, 0; a bad path, none."""
    kib = parse_meminfo((TREE / "meminfo").read_bytes()).kib
    pools = KernelPools(cgroup_zswap={"/same": (kib["Zswap"] * 3, kib["Zswapped"] * 3), "/none": (0, 0)})
    machine = swap_ram_ratios(pools, kib)[1]
    assert machine > 0
    assert swap_ram_ratios(pools, kib, "/same")[1] == pytest.approx(machine)
    assert swap_ram_ratios(pools, kib, "/none")[1] == 0
    assert swap_ram_ratios(pools, kib, "/elsewhere")[1] == machine


def test_smem_capture_records_the_memory_stat_of_the_processes_cgroups():
    out = io.BytesIO()
    source = DirectorySource(str(TREE))
    try:
        write_capture(source, out)
    finally:
        source.close()
    with tarfile.open(fileobj=io.BytesIO(out.getvalue())) as tar:
        members = {m.name: m for m in tar.getmembers()}
        stats = {n: tar.extractfile(m).read() for n, m in members.items() if n.startswith("sys/fs/cgroup/")}
    assert stats == {"sys/fs/cgroup/galaxy-job-232/memory.stat": STAT.read_bytes()}


def test_the_recorded_figures_survive_a_capture(tmp_path):
    archive = tmp_path / "c.tar"
    source = DirectorySource(str(TREE))
    try:
        with open(archive, "wb") as f:
            write_capture(source, f, compression=None)
    finally:
        source.close()
    assert _zswap_column(archive) == _zswap_column(TREE)


@pytest.mark.uses("shells")
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("dash"),
                    reason="needs root, unshare(1) and dash")
def test_smemcap_sh_records_the_memory_stat_of_its_cgroup(tmp_path):
    """smemcap.sh under dash in its own mount and pid namespaces (a fresh /proc: few processes),
    with a tmpfs on /sys/fs/cgroup holding the recorded memory.stat at the shell's cgroup v2 path."""
    inner = ('set -e; cg=$(sed -n "s/^0:://p" /proc/self/cgroup); mount -t tmpfs none /sys/fs/cgroup; '
             'mkdir -p "/sys/fs/cgroup$cg"; cat "$1" >"/sys/fs/cgroup$cg/memory.stat"; '
             'dash "$2" "$3"; echo "$cg"')
    out = tmp_path / "c.tgz"
    res = subprocess.run(["unshare", "-m", "-p", "-f", "--mount-proc", "sh", "-c", inner, "sh", str(STAT),
                          str(SCRIPT), str(out)], capture_output=True, timeout=60)
    if res.returncode != 0 and b"unshare" in res.stderr:
        pytest.skip(f"no namespaces here: {res.stderr.decode().strip()}")
    assert res.returncode == 0, res.stderr
    cgroup = res.stdout.decode().split()[-1]
    with tarfile.open(out) as tar:
        stats = {os.path.normpath(m.name): tar.extractfile(m).read() for m in tar.getmembers()
                 if m.name.startswith("sys/fs/cgroup") and m.isfile()}
    assert stats == {os.path.normpath(f"sys/fs/cgroup/{cgroup}/memory.stat"): STAT.read_bytes()}
