"""Where the kernel's figures are estimates: a kernel built without per-page map counts
(CONFIG_NO_PAGE_MAPCOUNT, Linux 6.15+) is named in a note, from /proc/config.gz, /boot or a
capture's config.gz; --exact says its group USS is approximate there."""

import gzip
import io
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from conftest import FIXTURES, TESTS, run_smem
from smem.capture_writer import write_capture
from smem.parsers.kernel_config import gunzip_config, no_page_mapcount
from smem.sources.directory import DirectorySource

NOTE = "CONFIG_NO_PAGE_MAPCOUNT"


def whole_parse(data):
    """{CONFIG_NAME: value} of every line of a config ("is not set" reads "n", the first line of a
    name wins): the reference the package's verdict from the option's lines alone is held to."""
    options = {}
    for line in data.decode("utf-8", "replace").split("\n"):
        line = line.strip()
        if line.startswith("# CONFIG_") and line.endswith(" is not set"):
            options.setdefault(line[2:-len(" is not set")], "n")
            continue
        key, eq, value = line.partition("=")
        if eq and key.startswith("CONFIG_") and " " not in key:
            options.setdefault(key, value)
    return options


def whole_verdict(options):
    """The verdict of a whole parse: y is True; n, another value, or any option without it False
    (an older config); no option at all None."""
    value = options.get("CONFIG_NO_PAGE_MAPCOUNT")
    if value == "y":
        return True
    return False if value is not None or options else None


def test_this_machines_config_reads():
    path = Path("/proc/config.gz")
    if not path.is_file():
        pytest.skip("no /proc/config.gz")
    text = gunzip_config(path.read_bytes())
    assert whole_parse(text)["CONFIG_MMU"] == "y" and no_page_mapcount(text) in (True, False)


@pytest.mark.parametrize("text, verdict", [
    (b"CONFIG_NO_PAGE_MAPCOUNT=y\nCONFIG_MMU=y\n", True), (b"# CONFIG_NO_PAGE_MAPCOUNT is not set\n", False),
    (b"CONFIG_MMU=y\n", False), (b"", None), (b"\xff\xfe garbage\n", None),
    (b"CONFIG_NO_PAGE_MAPCOUNT=y\nCONFIG_NO_PAGE_MAPCOUNT=n\n", True), (b"CONFIG_NO_PAGE_MAPCOUNT=m\n", False),
    (b"CONFIG_NO_PAGE_MAPCOUNT_X=y\nCONFIG_A=\"CONFIG_NO_PAGE_MAPCOUNT=y\"\n", False),
    (b"# CONFIG_NO_PAGE_MAPCOUNT=y\n", None), (b"  CONFIG_NO_PAGE_MAPCOUNT=y\r", True),
    (b"CONFIG NO_PAGE_MAPCOUNT=y\nCONFIG_NO_PAGE_MAPCOUNT", None),
    (b"# CONFIG_NO_PAGE_MAPCOUNT is not set\nCONFIG_NO_PAGE_MAPCOUNT=y", False),
])
def test_the_verdict(text, verdict):
    assert whole_verdict(whole_parse(text)) is verdict
    assert no_page_mapcount(text) is verdict  # (what a report asks: the option's lines alone)


def test_this_machines_verdict_is_the_whole_parse():
    path = Path("/proc/config.gz")
    if not path.is_file():
        pytest.skip("no /proc/config.gz")
    text = gunzip_config(path.read_bytes())
    for config in (text, text.replace(b"CONFIG_NO_PAGE_MAPCOUNT", b"CONFIG_NO_PAGE_MAPCOUN"),
                   text.replace(b"CONFIG_PAGE_MAPCOUNT=y", b"CONFIG_NO_PAGE_MAPCOUNT=y")):
        assert no_page_mapcount(config) is whole_verdict(whole_parse(config))


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("make", [lambda: b"", lambda: b"not gzip", lambda: gzip.compress(b"x", mtime=0)[:10],
                                  lambda: gzip.compress(bytes(64 << 20), mtime=0)],
                         ids=["empty", "not gzip", "cut", "64 MiB of zeros"])  # (ids alike on every xdist worker)
def test_hostile_config_gz_is_none(make):
    # (made by the test: at collection, every worker would compress the 64 MiB)
    assert gunzip_config(make()) is None


def _tree(tmp_path, config):
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "gpu_proc" / "tree", root)
    if config is not None:
        (root / "config.gz").write_bytes(gzip.compress(config))
    return root


@pytest.mark.parametrize("config, noted", [(b"CONFIG_NO_PAGE_MAPCOUNT=y\n", True),
                                           (b"# CONFIG_NO_PAGE_MAPCOUNT is not set\n", False), (None, False),
                                           (b"\x00" * 100, False)])
def test_a_note_where_the_figures_are_estimates(tmp_path, config, noted):
    root = _tree(tmp_path, config)
    for args in ([], ["-u"], ["-F", "json"]):
        res = run_smem("-S", str(root), *args)
        assert res.returncode == 0
        assert (NOTE in res.stderr.decode()) is noted
    assert NOTE not in run_smem("-S", str(root), "-w").stderr.decode()  # no process figure shown


def test_a_capture_carries_the_config(tmp_path):
    root = _tree(tmp_path, b"CONFIG_NO_PAGE_MAPCOUNT=y\n")
    out = io.BytesIO()
    source = DirectorySource(str(root))
    try:
        write_capture(source, out, compression=None)
    finally:
        source.close()
    path = tmp_path / "c.tar"
    path.write_bytes(out.getvalue())
    with tarfile.open(path) as tar:
        assert gzip.decompress(tar.extractfile("config.gz").read()) == b"CONFIG_NO_PAGE_MAPCOUNT=y\n"
    assert NOTE in run_smem("-S", str(path)).stderr.decode()


def test_exact_says_its_group_uss_is_approximate_there(tmp_path):
    pytest.importorskip("numpy", reason="smem[exact]: numpy not installed")
    from smem.app import _estimated
    source = DirectorySource(str(_tree(tmp_path, b"CONFIG_NO_PAGE_MAPCOUNT=y\n")))
    try:
        notes = _estimated(source, exact=True)
        assert len(notes) == 2 and "group USS is approximate" in notes[1]
        assert len(_estimated(source, exact=False)) == 1
    finally:
        source.close()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare") or not os.path.exists("/proc/config.gz"),
                    reason="needs root, unshare(1) and /proc/config.gz")
def test_the_running_config_is_kept_once_found_not_while_missing():
    """Read once and kept for the run (a watch would unpack it at every frame), but only once
    found: /proc/config.gz comes with `modprobe configs`, /boot may be mounted after smem
    starts.  Hidden under /dev/null in a mount namespace of its own, then shown again."""
    code = textwrap.dedent("""
        import subprocess
        from smem.sources.live import LiveSource
        subprocess.run(["mount", "--bind", "/dev/null", "/proc/config.gz"], check=True)
        print(LiveSource().kernel_config() is not None)
        subprocess.run(["umount", "/proc/config.gz"], check=True)
        print(LiveSource().kernel_config() is not None, LiveSource().kernel_config() is not None)
    """)
    res = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, "-c", code],
                         capture_output=True, text=True, cwd=TESTS.parent, timeout=60)
    if res.returncode != 0 and "unshare" in res.stderr:
        pytest.skip(f"no mount namespace here: {res.stderr.strip()}")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["False", "True", "True"]
