"""Hostile options (issue #16): -R sizes, regular expressions that do not compile, run away or
repeat past a bound, kernel images (-K) that are no file or a bomb, and ssh:// specs and hosts
that stall or never end.  Each case here is a bug that was (a traceback, a hang, gigabytes of
memory); apart from the captures (test_hostile_captures.py) because these come from the command
line, not from a capture.
"""

import os
import time

import pytest

pytest.importorskip("zstandard", reason="the kernel bombs include zstd streams: smem[compression]")
import hostile_inputs as hc  # noqa: E402
from hostile_bounds import HANG, max_rss_growth  # noqa: E402
from smem.errors import SourceError, UsageError  # noqa: E402
from smem.sources import open_source  # noqa: E402

# In the hostile group with the corpus: one worker runs every hostile test.
pytestmark = pytest.mark.xdist_group("hostile")


# -- -R sizes -----------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", " ", "9" * 5000, "1e24", "2\nG", "2G\n", "\n2G", "٢G", "２G", "2\tG",
                                  "0", "0G", "0.0001", "-1G", "+2G", "16E", "99999999999999999999",
                                  "1" + "0" * 40, "1.5.5G", "GiB", "2iB", ".G", "2 G B", "0x10G"])
def test_hostile_sizes_are_one_line_usage_errors(text):
    from smem.units import read_size
    with pytest.raises(UsageError) as e:
        read_size(text)
    assert "\n" not in str(e.value) and len(str(e.value)) < 200


@pytest.mark.parametrize("text, expected", [("2G", 2 << 30), (" 2 GiB ", 2 << 30), ("1.5g", 3 << 29),
                                            ("512m", 512 << 20), ("2097152K", 2 << 30), ("5", 5),
                                            ("15.99E", int(15.99 * 10 ** 4) * 2 ** 60 // 10 ** 4)])
def test_sizes_still_read(text, expected):
    from smem.units import read_size
    assert read_size(text).bytes == expected


# -- regular expressions ------------------------------------------------------------------

@pytest.mark.uses("cpu")
@pytest.mark.parametrize("pattern", ["a{99999999999}", "(" * 100000, "(", "[z-a]", "\\", "a**", "(?P<1>x)",
                                     "(?<", "x{2,1}", "\\p{NoSuchProperty}", "a{5}{5}"])
def test_every_regex_compile_error_is_a_usage_error(pattern):
    from smem.selection import Selection
    for option in ("process", "user", "mapping"):
        with pytest.raises(UsageError) as e:
            Selection(**{option: pattern})
        assert "\n" not in str(e.value) and len(str(e.value)) < 300


@pytest.mark.uses("cpu")
def test_a_runaway_match_is_stopped_and_refused(tmp_path, monkeypatch):
    from smem import selection
    from smem.loading import load_reading
    from smem.model import Needs
    from smem.selection import Selection
    # each runaway burns the whole bound: half a second of it shows the stop as well as 1 s does
    monkeypatch.setattr(selection, "MATCH_SECONDS", 0.5)
    long = b"a" * 3000 + b"!"
    path = tmp_path / "c.tar"
    path.write_bytes(hc.capture_tar(processes={1234: hc.process_files(cmdline=long),
                                               1235: hc.process_files(1235, smaps=hc.SMAPS.replace(b"dbus", long))}))
    for option, pattern in (("process", "(a+)+$"), ("mapping", "(a|aa)+$")):
        start = time.monotonic()
        with pytest.raises(UsageError, match=r"matching took more than 0\.5 s"):
            load_reading(open_source(str(path)), Selection(**{option: pattern}), needs=Needs())
        assert time.monotonic() - start < HANG
    # the same kind of pattern, where it matches or fails at once, still selects as re would
    snapshot = load_reading(open_source(str(path)), Selection(process=r"^(a+)+!$"), needs=Needs())
    assert [p.pid for p in snapshot.processes] == [1234]


# -- -K -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "directory", "sparse 2 GiB"])
def test_a_kernel_image_that_is_no_regular_file_is_refused_unread(kind, tmp_path):
    from smem.errors import KernelImageError
    from smem.sizing import read_kernel_file
    path = tmp_path / "vmlinux"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "sparse 2 GiB":
        with open(path, "wb") as f:
            f.truncate(2 << 30)
    else:
        path = "/dev/zero"
    start = time.monotonic()
    code, peak = max_rss_growth(lambda: read_kernel_file(str(path)))
    assert code == 2 and peak < 50 and time.monotonic() - start < HANG
    with pytest.raises(KernelImageError, match="not a regular file|larger than 1 GiB|cannot read"):
        read_kernel_file(str(path))


# -- ssh:// -------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["ssh://[abc", "ssh://[::1", "ssh://host?x", "ssh://host#x", "ssh://host/?",
                                  "ssh://user:secret@host", "ssh://host:99999", "ssh://host:port", "ssh://",
                                  "ssh://-oProxyCommand=x", "ssh://host/path"])
def test_bad_remote_specs_are_one_usage_error(spec):
    from smem.sources.remote import ssh_command
    with pytest.raises(UsageError) as e:
        ssh_command(spec)
    assert "\n" not in str(e.value)


def _fake_ssh(monkeypatch, command, timeout="0.5"):
    monkeypatch.setenv("SMEM_SSH", f"sh -c '{command}' fake-ssh")
    monkeypatch.setenv("SMEM_SSH_TIMEOUT", timeout)


@pytest.mark.uses("network")
def test_a_stalled_host_is_given_up_on(monkeypatch):
    _fake_ssh(monkeypatch, "cat >/dev/null; exec sleep 30")
    start = time.monotonic()
    with pytest.raises(SourceError, match="nothing from the host for 0.5 s"):
        open_source("ssh://host")
    assert time.monotonic() - start < HANG


def test_a_host_sending_without_end_is_refused_at_the_limit(monkeypatch):
    from smem.sources import remote
    monkeypatch.setattr(remote, "MAX_REMOTE_BYTES", 4 << 20)
    _fake_ssh(monkeypatch, "cat >/dev/null; exec yes capture")
    with pytest.raises(SourceError, match="sent more than 4 MiB"):
        open_source("ssh://host")


def test_a_remote_capture_through_the_pipe_still_reads(monkeypatch, tmp_path):
    (tmp_path / "c.tgz").write_bytes(hc.compress("gzip", hc.capture_tar()))
    _fake_ssh(monkeypatch, f"cat >/dev/null; cat {tmp_path}/c.tgz", timeout="5")
    assert open_source("ssh://host").pids() == [1234]
    _fake_ssh(monkeypatch, "cat >/dev/null; printf \"bad\\033[2J news\\n\" >&2; exit 255")
    with pytest.raises(SourceError, match=r"ssh failed: bad\?\[2J news$"):
        open_source("ssh://host")
    monkeypatch.setenv("SMEM_SSH_TIMEOUT", "forever")
    with pytest.raises(UsageError, match="SMEM_SSH_TIMEOUT"):
        open_source("ssh://host")


# -- counted repeats and kernel bombs ---------------------------------------------------

@pytest.mark.parametrize("pattern", ["a{99999999}", "(x{3,20000}|y)", "(?=a{10001})", "b{0,99999}?",
                                     "(a)?(?(1)a{10001})", "(a)?(?(1)b|c{10001})", "(?>a{10001})"])
def test_huge_repeat_counts_are_refused_before_they_are_built(pattern):
    """regex unrolls a counted repeat when it compiles it: a{99999999} took 24 GB.  Each kind of
    group is looked into, a conditional's branches and an atomic group too."""
    from smem.selection import Selection
    with pytest.raises(UsageError, match="a repeat count over"):
        Selection(process=pattern)
    assert Selection(process="a{10000}|(b+)*c").process is not None  # within the bound, and unbounded


@pytest.mark.uses("cpu")
def test_a_kernel_bomb_is_not_inflated_past_its_headers():
    # ELF headers and 128 MiB of zeros in one stream: all were inflated (up to 512 MiB before refusing)
    from smem.errors import KernelImageError
    from smem.parsers.kernel_image import kernel_image_size
    for kind in ("gzip", "zstd"):
        bomb = hc.one_stream(kind, 128 << 20, prefix=hc.elf_header(shoff=64, shnum=3))
        code, peak = max_rss_growth(lambda: kernel_image_size(hc.bzimage_header(len(bomb)) + bomb))
        assert code in (0, 2) and peak < 50, (kind, peak)
    claim = hc.one_stream("gzip", 1 << 20, prefix=hc.elf_header(shoff=1 << 40, shnum=3))
    with pytest.raises(KernelImageError, match="more than 256 MiB"):
        kernel_image_size(claim)
