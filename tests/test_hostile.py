"""Hostile input (issue #16): damaged, hostile or absurd captures, trees and options.

Each case here is a bug that was (a traceback, a hang, gigabytes of memory); the
corpus at the end runs a few hundred more through the command line, each in a
forked child with a timeout and a memory bound.
"""

import os
import time

import pytest

pytest.importorskip("zstandard", reason="the corpus has zstd archives: smem[compression]")
import hostile_corpus  # noqa: E402
import hostile_inputs as hc  # noqa: E402
import hostile_runner  # noqa: E402
from conftest import TESTS, run_smem
from smem.errors import CaptureError, SmemError, SourceError, UsageError
from smem.sources import open_source
from smem.sources.archive import ArchiveSource
from smem.sources.base import MAX_FRAME_MEMBER_BYTES, MAX_MEMBER_BYTES

# Its module fixtures are costly: one worker builds them and runs every test here.
pytestmark = pytest.mark.xdist_group("hostile")


#: what counts as a hang: a bound on time that no slow or busy machine reaches, not a speed target
HANG = 60


def _refused(data, tmp_path, name="c"):
    """The one-line CaptureError a capture file gives."""
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(CaptureError) as e:
        open_source(str(path))
    message = str(e.value)
    assert "\n" not in message
    return message


def _rss_mib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def _max_rss_growth(function):
    """Run ``function`` in a forked child: (its exit status, how far its peak RSS rose, MiB).

    The child starts with this process's pages, so its growth is its peak less our RSS.
    Exit status 1 for a CaptureError, 2 for another SmemError, 3 for anything else.
    """
    before = _rss_mib()
    pid = os.fork()
    if pid == 0:
        try:
            function()
            os._exit(0)
        except CaptureError:
            os._exit(1)
        except SmemError:
            os._exit(2)
        except BaseException:
            os._exit(3)
    _, status, usage = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024 - before


# -- compressed captures ------------------------------------------------------------------

def test_every_compression_reads_the_same_capture(tmp_path):
    tar = hc.capture_tar()
    for kind in hc.KINDS:
        path = tmp_path / kind
        path.write_bytes(hc.compress(kind, tar))
        src = open_source(str(path))
        assert src.pids() == [1234] and src.read("1234/smaps") == hc.SMAPS, kind


def test_corrupt_zstd_is_a_capture_error(tmp_path):
    good = hc.compress("zstd", hc.capture_tar())
    checksum = good[:-1] + bytes([good[-1] ^ 0xFF])
    middle = bytearray(good)
    for i in range(len(good) // 3, len(good) // 3 + 16):
        middle[i] ^= 0x5A
    for case, data in {"checksum": checksum, "corrupt": bytes(middle),
                       "window of 2 GiB": hc.zstd_with_window(31),
                       "truncated": good[:len(good) // 2],
                       "trailing garbage": good + b"garbage after the frame"}.items():
        message = _refused(data, tmp_path)
        assert "zstd data is truncated or corrupt" in message, (case, message)


def test_corrupt_data_of_every_compression_is_a_capture_error(tmp_path):
    tar = hc.capture_tar()
    for kind in hc.KINDS[1:]:
        good = hc.compress(kind, tar)
        for cut in (len(good) // 2, len(good) - 3):
            message = _refused(good[:cut], tmp_path)
            assert message.startswith(f"{tmp_path / 'c'}: "), (kind, message)  # the file as given


def test_an_xz_stream_asking_for_4_gib_is_refused_without_the_memory(tmp_path):
    data = hc.xz_with_dictionary(hc.capture_tar())
    message = _refused(data, tmp_path)
    assert "xz data is truncated or corrupt" in message and "emory" in message


def test_a_member_claiming_3_gib_is_refused_before_it_is_inflated(tmp_path):
    for kind in hc.KINDS[1:]:
        tar = hc.without_end(hc.capture_tar())  # no end blocks: another member follows
        bomb = hc.zeros_stream(kind, 8 << 20, prefix=tar + hc.header(b"1234/smaps", 3 << 30))
        path = tmp_path / "bomb"
        path.write_bytes(bomb)
        start = time.monotonic()
        with pytest.raises(CaptureError, match=r"member \d+ \(1234/smaps\) inflates past the limit of 256 MiB"):
            open_source(str(path))
        assert time.monotonic() - start < HANG, kind


def test_zero_padding_after_the_end_is_not_inflated_for_ever(tmp_path):
    # 2 GiB of zeros after a complete archive: read up to the trailer limit only
    for kind in ("gzip", "zstd"):
        data = hc.zeros_stream(kind, 2 << 30, prefix=hc.capture_tar())
        path = tmp_path / kind
        path.write_bytes(data)
        start = time.monotonic()
        assert open_source(str(path)).pids() == [1234]
        assert time.monotonic() - start < HANG, kind


def test_a_bomb_in_an_archive_tarfile_reads_is_bounded(tmp_path):
    # a pax header (left to tarfile) claiming 3 GiB, followed by gigabytes of zeros
    head = hc.without_end(hc.capture_tar()) + hc.header(b"PaxHeader", 3 << 30, kind=b"x")
    path = tmp_path / "pax"
    path.write_bytes(hc.zeros_stream("gzip", 512 << 20, prefix=head))
    code, peak = _max_rss_growth(lambda: open_source(str(path)))
    assert code == 1 and peak < 150


def test_trailing_data_after_a_zstd_frame_is_read_not_ignored(tmp_path):
    good = hc.compress("zstd", hc.capture_tar())
    assert "truncated or corrupt" in _refused(good + b"not a zstd frame" * 4, tmp_path)
    # a bomb after the capture, then garbage: bounded, whatever the answer
    path = tmp_path / "bomb"
    path.write_bytes(hc.zeros_stream("zstd", 2 << 30, prefix=hc.capture_tar()) + b"garbage")
    start = time.monotonic()
    try:
        open_source(str(path))
    except CaptureError:
        pass
    assert time.monotonic() - start < HANG


def test_member_limit_is_sane():
    assert 64 << 20 <= MAX_MEMBER_BYTES <= 256 << 20 <= MAX_FRAME_MEMBER_BYTES <= 4 << 30


# -- directory captures -------------------------------------------------------------------

def _tree(root, processes=None, meminfo=hc.MEMINFO):
    """A directory capture: meminfo and the processes' files ({pid: {leaf: bytes}})."""
    root.mkdir(exist_ok=True)
    if meminfo is not None:
        (root / "meminfo").write_bytes(meminfo)
    for pid, files in (processes if processes is not None else {1234: hc.process_files()}).items():
        (root / str(pid)).mkdir()
        for leaf, data in files.items():
            (root / str(pid) / leaf).write_bytes(data)
    return root


def test_a_directory_capture_reads_no_symlink_device_fifo_or_directory(tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(hc.SMAPS.replace(b"dbus-daemon", b"SECRET"))
    root = _tree(tmp_path / "cap", {1234: hc.process_files(), 2000: hc.process_files(2000),
                                    3000: hc.process_files(3000)})
    (root / "1234" / "smaps").unlink()
    (root / "1234" / "smaps").symlink_to(secret)                 # out of the capture
    (root / "1234" / "status").unlink()
    (root / "1234" / "status").symlink_to("status")              # a loop (ELOOP)
    (root / "2000" / "smaps").unlink()
    os.mkfifo(root / "2000" / "smaps")                           # a FIFO with no writer
    (root / "2000" / "stat").unlink()
    os.mkdir(root / "2000" / "stat")                             # a directory
    (root / "3000" / "smaps").unlink()
    os.mknod(root / "3000" / "smaps", 0o644 | 0o020000, os.makedev(1, 5))  # /dev/zero
    (root / "4000").symlink_to(tmp_path / "cap" / "1234")        # a pid that is a link
    src = open_source(str(root))
    start = time.monotonic()
    for path in ("1234/smaps", "1234/status", "2000/smaps", "2000/stat", "3000/smaps", "4000/smaps"):
        assert src.read_optional(path) is None, path
        with pytest.raises(OSError):
            src.read(path)
    assert src.read("1234/cmdline") == hc.CMDLINE
    assert time.monotonic() - start < HANG


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory", "device", "loop"])
def test_a_meminfo_that_is_no_file_is_refused_at_once(tmp_path, kind):
    root = _tree(tmp_path / "cap", meminfo=None)
    meminfo = root / "meminfo"
    if kind == "fifo":
        os.mkfifo(meminfo)
    elif kind == "symlink":
        (tmp_path / "elsewhere").write_bytes(hc.MEMINFO)
        meminfo.symlink_to(tmp_path / "elsewhere")
    elif kind == "directory":
        meminfo.mkdir()
    elif kind == "device":
        os.mknod(meminfo, 0o644 | 0o020000, os.makedev(1, 5))
    else:
        meminfo.symlink_to("meminfo")
    with pytest.raises(SourceError, match="meminfo is .*not a file: a capture holds regular files only"):
        open_source(str(root))


def test_a_proc_directory_that_is_a_link_out_is_not_followed(tmp_path):
    root = _tree(tmp_path / "cap")
    (root / "proc").symlink_to("/proc")
    src = open_source(str(root))
    assert src.pids() == [1234]


def test_a_fifo_given_as_the_capture_is_a_stream(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    data = hc.compress("gzip", hc.capture_tar())
    pid = os.fork()
    if pid == 0:
        with open(fifo, "wb") as f:
            f.write(data)
        os._exit(0)
    try:
        assert open_source(str(fifo)).pids() == [1234]
    finally:
        os.waitpid(pid, 0)


def test_a_huge_file_in_a_directory_capture_is_refused_unread(tmp_path):
    root = _tree(tmp_path / "cap")
    with open(root / "1234" / "smaps", "r+b") as f:
        f.truncate(MAX_MEMBER_BYTES + 1)  # sparse: nothing to read, but a size
    with pytest.raises(CaptureError, match="1234/smaps is larger than 256 MiB"):
        open_source(str(root)).read("1234/smaps")


# -- pid names ----------------------------------------------------------------------------

def test_pid_names_are_ascii_digits_in_every_source(tmp_path):
    from smem.sources import LiveSource
    names = ["²", "³", "١٢", "１２", "9" * 200, "12a"]
    root = _tree(tmp_path / "cap")
    for name in names:
        (root / name).mkdir()
        (root / name / "smaps").write_bytes(hc.SMAPS)
    assert open_source(str(root)).pids() == [1234]
    assert LiveSource(proc=str(root)).pids() == [1234]
    names.append("9" * 5000)  # past int()'s limit of 4,300 digits
    members = hc.capture_members(extra=[(name, None) for name in names] +
                                       [(f"{name}/smaps", hc.SMAPS) for name in names])
    assert ArchiveSource(hc.tar_of(members), "t").pids() == [1234]


# -- -R sizes -----------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", " ", "9" * 5000, "1e24", "2\nG", "2G\n", "\n2G", "٢G", "２G", "2\tG",
                                  "0", "0G", "0.0001", "-1G", "+2G", "16E", "99999999999999999999",
                                  "1" + "0" * 40, "1.5.5G", "GiB", "2iB", ".G", "2 G B", "0x10G"])
def test_hostile_sizes_are_one_line_usage_errors(text):
    from smem.units import parse_size
    with pytest.raises(UsageError) as e:
        parse_size(text)
    assert "\n" not in str(e.value) and len(str(e.value)) < 200


@pytest.mark.parametrize("text, expected", [("2G", 2 << 30), (" 2 GiB ", 2 << 30), ("1.5g", 3 << 29),
                                            ("512m", 512 << 20), ("2097152K", 2 << 30), ("5", 5),
                                            ("15.99E", int(15.99 * 10 ** 4) * 2 ** 60 // 10 ** 4)])
def test_sizes_still_read(text, expected):
    from smem.units import parse_size
    assert parse_size(text) == expected


# -- absurd numbers -----------------------------------------------------------------------

@pytest.mark.parametrize("line", [b"MemTotal: 1" + b"0" * 30 + b" kB", b"MemFree: -" + b"9" * 25 + b" kB",
                                  b"HugePages_Total: " + b"9" * 21])
def test_a_meminfo_figure_no_machine_has_is_refused_in_one_line(line, tmp_path):
    from smem.loading.process import read_meminfo
    root = _tree(tmp_path / "cap", meminfo=hc.MEMINFO + line + b"\n")
    with pytest.raises(SourceError, match=r"^meminfo: .* past 2\*\*64 bytes: not a real meminfo"):
        read_meminfo(open_source(str(root)))


def test_stat_and_status_numbers_no_machine_has_read_as_unknown():
    from smem.parsers.stat import parse_stat
    from smem.parsers.status import parse_status, status_ids, status_kib
    stat = parse_stat(b"12 (x) S 1 2 3 4 5 " + str(2 ** 70).encode() + b" 0 0 0 0 0 0 0 0 0 0 " +
                      b"9" * 5000 + b" 0 0 " + b"-5 " + str(2 ** 64).encode())
    assert stat.flags is None and stat.num_threads is None and stat.vsize is None and stat.rss_pages is None
    with pytest.raises(ValueError):
        parse_stat(b"9" * 5000 + b" (x) S 1")
    status = parse_status(b"Uid:\t" + str(2 ** 70).encode() + b"\t0\t0\t0\nGid:\t-1\t-1\t-1\t-1\n"
                          b"VmRSS:\t" + b"9" * 5000 + b" kB\nRssAnon:\t" + str(2 ** 60).encode() + b" kB\n")
    assert status_ids(status, "Uid") is None and status_ids(status, "Gid") is None
    assert status_kib(status, "VmRSS") is None and status_kib(status, "RssAnon") is None


def test_address_ranges_past_64_bits_are_not_ram():
    from smem.parsers.boot_memory_line import parse_boot_memory_line
    from smem.parsers.iomem import parse_iomem, system_ram_bytes
    from smem.parsers.memmap import parse_memmap
    iomem = parse_iomem(b"00100000-bfffffff : System RAM\n" + b"f" * 40 + b"-" + b"f" * 41 + b" : System RAM\n"
                        b"ffff0000-00001000 : System RAM\n")
    assert system_ram_bytes(iomem) == 0xbff00000
    for start, end in ((b"0x0", b"0x" + b"f" * 17), (b"0x2000", b"0x1000"), (b"-0x10", b"0x10")):
        with pytest.raises(ValueError):
            parse_memmap([(start, end, b"System RAM")])
    log = b"Memory: " + b"9" * 5000 + b"K/100K available (" + b"9" * 5000 + b"K kernel code, 12K rwdata)"
    assert parse_boot_memory_line(log) is None
    assert parse_boot_memory_line(b"Memory: 10K/20K available (" + b"9" * 5000 + b"K kernel code, 12K rwdata)") \
        == {"available": 10, "total": 20, "rwdata": 12}


def test_a_passwd_copy_with_absurd_uids_is_read_without_them():
    from smem.parsers.passwd import parse_passwd
    assert parse_passwd(b"root:x:0:0\nbig:x:" + str(2 ** 70).encode() + b":0\nneg:x:-1:0\nlong:x:" +
                        b"9" * 5000 + b":0\n") == {0: "root"}


# -- exact-accounting captures ------------------------------------------------------------

def _exact_users(data, tmp_path):
    """``smem --exact -u`` on a capture, in a forked child: (exit status, peak MiB, seconds)."""
    from smem.app import run_report
    from smem.options import Query, ReportRequest
    path = tmp_path / "exact.tar"
    path.write_bytes(data)
    start = time.monotonic()
    code, peak = _max_rss_growth(lambda: run_report(ReportRequest(Query(view="user", source=str(path),
                                                                        exact=True))))
    return code, peak, time.monotonic() - start


def test_frames_spread_one_per_block_cost_what_the_frames_cost(tmp_path):
    # 300,000 frames one per 4,096: tables sized by the largest block took 4.6 GiB and 13 s
    data = hc.exact_capture([4096 * (i + 1) for i in range(300000)])
    code, peak, seconds = _exact_users(data, tmp_path)
    assert code == 0 and peak < 200 and seconds < HANG


def test_the_dense_index_of_spread_frames_gives_the_same_figures():
    import numpy as np
    from smem.exact import ExactAccounting, FrameTable, ProcessFrames
    rng = np.random.default_rng(16)
    base = [rng.integers(0, 5000, size=3000).astype(np.uint64) for _ in range(4)]

    def figures(scale):
        frames = {pid: ProcessFrames(pid, p * np.uint64(scale), np.zeros(0, np.uint64), np.zeros((0, 3), np.uint64))
                  for pid, p in enumerate(base, 1)}
        pfns = np.unique(np.concatenate(base)) * np.uint64(scale)
        counts = (np.arange(len(pfns)) % 7 + 1).astype(np.uint64)
        acc = ExactAccounting(frames, FrameTable(pfns, counts, None), 4096)
        return acc._shift, acc.processes(), acc.groups({"a": [1, 2], "b": [2, 3, 4]}), \
            acc.shared_with([1]).holders
    dense, spread = figures(1), figures(1 << 20)
    assert dense[0] == 12 and spread[0] == 0
    assert dense[1:] == spread[1:]


@pytest.mark.parametrize("case", ["wrapped frames", "wrapped swap", "segment counts wrap", "page size 0",
                                  "page size abc", "page size 2**63", "kpages out of order",
                                  "kpages wrapped", "frames page size 3000"])
def test_damaged_exact_data_is_one_capture_error(case, tmp_path):
    seg = [(0x400000, 3, 0)]
    if case == "wrapped frames":
        data = hc.exact_capture([5, 6, 7], frames=hc.frames_member(seg, [5, 6, (1 << 64) - 1]))
    elif case == "wrapped swap":
        data = hc.exact_capture([5, 6], frames=hc.frames_member([(0x400000, 2, 1)], [5, 6], [1 << 63]))
    elif case == "segment counts wrap":
        data = hc.exact_capture([5, 6, 7], frames=hc.frames_member(
            [(0x400000, 1 << 63, 0), (0x500000, (1 << 63) + 3, 0)], [5, 6, 7]))
    elif case == "page size 0":
        data = hc.exact_capture([5], kpages=hc.kpages_member([5], [1], page_size=0))
    elif case == "page size 2**63":
        data = hc.exact_capture([5], kpages=hc.kpages_member([5], [1], page_size=1 << 63))
    elif case == "page size abc":
        data = hc.tar_of(hc.capture_members(extra=[("kpagecount", bytes(64)), ("capture-info", b"pagesize=abc\n")]))
    elif case == "kpages out of order":
        data = hc.exact_capture([5, 6], kpages=hc.kpages_member([6, 5], [1, 1]))
    elif case == "kpages wrapped":
        data = hc.exact_capture([5, 6], kpages=hc.kpages_member([5, (1 << 64) - 2], [1, 1]))
    else:
        data = hc.exact_capture([5], frames=hc.frames_member([(0x400000, 1, 0)], [5], page_size=3000))
    code, peak, seconds = _exact_users(data, tmp_path)
    assert code == 1 and seconds < HANG


# -- regular expressions ------------------------------------------------------------------

@pytest.mark.parametrize("pattern", ["a{99999999999}", "(" * 100000, "(", "[z-a]", "\\", "a**", "(?P<1>x)",
                                     "(?<", "x{2,1}", "\\p{NoSuchProperty}", "a{5}{5}"])
def test_every_regex_compile_error_is_a_usage_error(pattern):
    from smem.selection import Selection
    for option in ("process", "user", "mapping"):
        with pytest.raises(UsageError) as e:
            Selection(**{option: pattern})
        assert "\n" not in str(e.value) and len(str(e.value)) < 300


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
    code, peak = _max_rss_growth(lambda: read_kernel_file(str(path)))
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


# -- the capture writer -------------------------------------------------------------------

def test_a_hostile_user_name_is_one_passwd_field_in_a_capture(tmp_path):
    import io
    from smem.capture_writer import write_capture
    members = hc.capture_members()
    members[2] = ("1234", None, {"uid": 1000, "uname": "ev:il\nroot:x:0:0::/:/bin/sh"})
    out = io.BytesIO()
    write_capture(ArchiveSource(hc.tar_of(members), "t"), out, None)
    again = ArchiveSource(out.getvalue(), "again")
    assert again.read("passwd") == b"ev?il?root?x?0?0??/?/bin/sh:x:1000:1000::/:/nonexistent\n"
    assert again.user_name(0) is None


# -- the corpus ---------------------------------------------------------------------------

#: How far any case's RSS may rise over the runner's, MiB: far above what smem and numpy (and
#: matplotlib, for the charts) take, far below a bomb read whole (250 MiB of smaps, 3 GiB members).
MEMORY_BOUND = 150

#: Cases that fail in files this work does not own, and the fix each needs there.
def _verdict(result):
    """None if smem behaved (exit 0 with warnings at most, or one error line and exit 1 or 2)."""
    if result["timed_out"]:
        return f"hung (killed after {hostile_runner.TIMEOUT:g} s)"
    err = result["stderr"]
    if "Traceback" in err:
        return "traceback: " + err.strip().splitlines()[-1]
    if result["peak_mib"] > MEMORY_BOUND:
        return f"memory rose {result['peak_mib']:.0f} MiB over the runner's"
    lines = err.splitlines()
    if result["code"] == 0:
        bad = [line for line in lines if not line.startswith("smem: warning: ")]
        return f"exit 0 but stderr {bad[:2]}" if bad else None
    if result["code"] in (1, 2):
        if len(lines) == 1 and lines[0].startswith("smem: ") and err.endswith("\n"):
            return None
        return f"exit {result['code']} with stderr {lines[:3]}"
    return f"exit {result['code']}: {lines[-1:] if lines else ''}"


def _run_runner(cases, workdir, churn=None):
    import pickle
    import subprocess
    import sys
    requests, answers = os.path.join(workdir, "cases.pickle"), os.path.join(workdir, "results.pickle")
    with open(requests, "wb") as f:
        pickle.dump(([case for _, case in cases], str(workdir)), f)
    command = [sys.executable, str(TESTS / "hostile_runner.py"), requests, answers]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS.parent), str(TESTS)]))
    if churn:
        command += [str(c) for c in churn]
        # in a PID namespace of its own, smem sees only the churn, not every process of the machine
        isolated = ["unshare", "--pid", "--fork", "--mount-proc"] + command
        if subprocess.run(isolated, env=env, cwd=workdir, timeout=600).returncode == 0:
            command = None
    if command:
        subprocess.run(command, check=True, env=env, cwd=workdir, timeout=600)
    with open(answers, "rb") as f:
        return pickle.load(f)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("corpus")
    start = time.monotonic()
    cases = hostile_corpus.make_cases(tmp)
    made = time.monotonic() - start
    results = _run_runner(cases, tmp)
    ran = time.monotonic() - start - made
    names = [name for name, _ in cases]
    assert len(set(names)) == len(names), "case names must be unique"
    return {"cases": dict(zip(names, results)), "argv": {n: c["argv"] for n, c in cases}, "made": made, "ran": ran}


def test_the_corpus_covers_every_compression_cut_and_damaged(corpus):
    """Every archive kind is tried intact, cut and damaged, and bombs of each kind are there: the
    verdicts of the next test speak for all of them (what the corpus cost is printed only)."""
    results = corpus["cases"]
    assert len(results) >= 250
    for kind in hc.KINDS:
        for what in ("intact", "cut at 1", "damaged at 0.5", "garbage after", "twice"):
            assert f"{kind}: {what}" in results, (kind, what)
    assert sum(" bomb: " in name for name in results) >= 4
    assert all(results[f"{kind}: intact"]["code"] == 0 for kind in hc.KINDS), "an intact archive was refused"
    peak = max(r["peak_mib"] for r in results.values())
    slowest = sorted(results, key=lambda n: -results[n]["seconds"])[:3]
    print(f"\n{len(results)} cases: made in {corpus['made']:.1f} s, run in {corpus['ran']:.1f} s, "
          f"peak {peak:.0f} MiB; slowest: " + ", ".join(f"{n} {results[n]['seconds']:.1f} s" for n in slowest))


def test_every_hostile_input_is_exit_0_or_one_error_line(corpus):
    failures = {name: (_verdict(r), corpus["argv"][name]) for name, r in corpus["cases"].items()
                if _verdict(r) is not None}
    assert not failures, "\n".join(f"{name}: {why} (smem {' '.join(map(repr, argv))[:200]})"
                                   for name, (why, argv) in failures.items())




# -- churn --------------------------------------------------------------------------------

#: What smem may say on stderr while processes come and go (nothing else).
KNOWN_WARNINGS = ("smem: warning: ",)


def test_reports_under_churn_exit_0_without_an_error_line(tmp_path):
    """While short-lived processes come and go, each view runs 12 times."""
    runs = [[], ["-m"], ["-u"], ["--exact", "-u"]]
    cases = [(f"{' '.join(args)} #{i}", {"argv": args}) for i in range(12) for args in runs]
    start = time.monotonic()
    results = _run_runner(cases, tmp_path, churn=(30, 1000))
    seconds = time.monotonic() - start
    bad = {}
    for (name, _), result in zip(cases, results):
        lines = result["stderr"].splitlines()
        unknown = [line for line in lines if not line.startswith(KNOWN_WARNINGS)]
        if result["code"] != 0 or unknown or result["timed_out"] or "Traceback" in result["stderr"]:
            bad[name] = (result["code"], lines[-3:])
    seen = sum(r["stdout"].count(b"sleep 0.0") for r in results)
    print(f"\n{len(cases)} runs under churn in {seconds:.1f} s, peak "
          f"{max(r['peak_mib'] for r in results):.0f} MiB, {seen} short-lived processes seen")
    assert not bad, bad
    assert seen > 0, "no run saw the churn"


@pytest.mark.parametrize("pattern", ["a{99999999}", "(x{3,20000}|y)", "(?=a{10001})", "b{0,99999}?"])
def test_huge_repeat_counts_are_refused_before_they_are_built(pattern):
    """regex unrolls a counted repeat when it compiles it: a{99999999} took 24 GB."""
    from smem.selection import Selection
    with pytest.raises(UsageError, match="a repeat count over"):
        Selection(process=pattern)
    assert Selection(process="a{10000}|(b+)*c").process is not None  # within the bound, and unbounded


def test_a_kernel_bomb_is_not_inflated_past_its_headers():
    # ELF headers and 128 MiB of zeros in one stream: all were inflated (up to 512 MiB before refusing)
    from smem.errors import KernelImageError
    from smem.parsers.kernel_image import kernel_image_size
    for kind in ("gzip", "zstd"):
        bomb = hc.one_stream(kind, 128 << 20, prefix=hc.elf_header(shoff=64, shnum=3))
        code, peak = _max_rss_growth(lambda: kernel_image_size(hc.bzimage_header(len(bomb)) + bomb))
        assert code in (0, 2) and peak < 50, (kind, peak)
    claim = hc.one_stream("gzip", 1 << 20, prefix=hc.elf_header(shoff=1 << 40, shnum=3))
    with pytest.raises(KernelImageError, match="more than 256 MiB"):
        kernel_image_size(claim)


def test_a_capture_file_is_read_in_place_not_copied(tmp_path):
    # an uncompressed capture holding a 199 MiB member it ignores (an absolute path): the
    # file was read whole into memory before its members were looked at
    path = tmp_path / "big.tar"
    with open(path, "wb") as f:
        f.write(hc.without_end(hc.capture_tar()) + hc.header(b"/99/frames", 199 << 20, kind=b"0"))
        f.truncate(f.tell() + (199 << 20) + 1024)
    code, peak = _max_rss_growth(lambda: open_source(str(path)).pids())
    assert code == 0 and peak < 100
    assert open_source(str(path)).pids() == [1234]


def test_a_counter_no_machine_has_makes_its_process_unreadable(tmp_path):
    """A PSS of 2**70 kB is not shown (nor drawn, nor summed): the process is counted unreadable."""
    path = tmp_path / "c.tar"
    path.write_bytes(hc.capture_tar(processes={1234: hc.process_files(smaps=hc.SMAPS.replace(
        b"150 kB", b"%d kB" % 2 ** 70)), 1235: hc.process_files(1235)}))
    for args in ([], ["-m"], ["-u", "-t"]):
        proc = run_smem("-S", path, *args)
        assert proc.returncode == 0 and str(2 ** 70).encode() not in proc.stdout, args
        assert b"a figure no machine has" in proc.stderr, args
