"""Figures of the user, mapping and system views that add up (smem 1.5 got them wrong), and -p
without swap."""

import os
import re
import subprocess
import tarfile

import pytest

from conftest import rows, run_smem

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs /proc smaps")


@pytest.mark.uses("cpu")
def test_user_view_vss_is_vss_and_avguss_works(tmp_path):
    cap = tmp_path / "c.tgz"
    run_smem("capture", "-o", cap, check=True)
    per_process = rows(run_smem("-S", cap, "-H", "-c", "user vss pss", "-U", "^root$"))
    users = rows(run_smem("-S", cap, "-H", "-u", "-c", "user vss pss", "-U", "^root$"))
    (root,) = users
    assert int(root.split()[1]) == sum(int(l.split()[1]) for l in per_process)
    assert int(root.split()[2]) == sum(int(l.split()[2]) for l in per_process)
    assert root.split()[1] != root.split()[2]
    # avguss of a mapping: its USS in each process that maps it (the process view filtered to
    # that mapping, -M), averaged over those processes
    maps = rows(run_smem("-S", cap, "-H", "-m", "-a", "-c", "pids avguss map", "-s", "pids", "-r",
                         env={"COLUMNS": "300"}))
    checked = 0
    for line in maps[:8]:
        pids, avguss, name = line.split(None, 2)
        name = name.rstrip()
        if name == "<anonymous>" or " " in name:
            continue
        per_process = rows(run_smem("-S", cap, "-H", "-M", f"^{re.escape(name)}$", "-c", "pid uss"))
        assert len(per_process) == int(pids), name
        assert int(avguss) == sum(int(l.split()[1]) for l in per_process) // int(pids), name
        checked += 1
    assert checked >= 3


def test_system_view_with_realmem_is_integers_that_add_up(tmp_path):
    for size, kib in (("1.5G", 1572864), ("64GiB", 64 << 20), ("512MB", 512 << 10),
                      ("16g", 16 << 20), (str(32 << 30), 32 << 20), ("33554432K", 32 << 20)):
        proc = run_smem("-w", "-t", "-R", size)
        lines = rows(proc)
        table = lines[:lines.index("-" * len(lines[0])) + 2]  # footnotes may follow
        assert not any("." in l for l in table)
        used = [int(l[25:].split()[0]) for l in table[1:-2]]
        total = int(table[-1].split()[0])
        assert sum(used) == total
        if kib >= int(open("/proc/meminfo").read().split()[1]):
            assert total == kib, size


NOSWAP = os.path.join(os.path.dirname(__file__), "fixtures", "goldens", "armv7-noswap")


def _noswap_cases(kind):
    import json
    manifest = json.load(open(os.path.join(NOSWAP, "manifest.json")))
    return [pytest.param(c, id=" ".join(c["args"])) for c in manifest["cases"] if c["kind"] == kind]


@pytest.mark.parametrize("case", _noswap_cases("differs"))
def test_percent_without_swap_shows_absent_not_na(case, tmp_path):
    """-p on a machine without swap (two real ARM smaps, a real ARM meminfo with SwapTotal 0):
    smem 1.5 (the golden) shows the swap share as N/A, smem as -, as every absent figure; the rest
    is byte for byte smem 1.5's."""
    from conftest import FIXTURES
    golden = open(os.path.join(NOSWAP, case["files"]["stdout"]), "rb").read()
    assert b"N/A" in golden
    if os.path.exists("/usr/bin/smem"):  # the golden is still smem 1.5's
        with tarfile.open(FIXTURES / "captures" / "armv7-noswap.tar.gz") as tar:
            tar.extractall(tmp_path / "proc", filter="tar")
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES") and not k.startswith("PYTHON")}
        theirs = subprocess.run(["/usr/bin/smem", "-S", tmp_path, *case["args"]], capture_output=True,
                                stdin=subprocess.DEVNULL, cwd="/tmp", env=env)
        assert theirs.stdout == golden
    ours = run_smem("-S", FIXTURES / "captures" / "armv7-noswap.tar.gz", *case["args"])
    assert ours.returncode == case["status"] == 0
    assert ours.stdout == golden.replace(b"     N/A", b"       -")
