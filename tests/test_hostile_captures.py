"""Hostile captures (issue #16): compressed, archived and directory captures that are damaged,
hostile or absurd, the figures in them no machine has, and the capture writer given a hostile
name.  Each case here is a bug that was (a traceback, a hang, gigabytes of memory); the corpus
(test_hostile.py) runs a few hundred more through the command line.
"""

import os
import time

import pytest

pytest.importorskip("zstandard", reason="the corpus has zstd archives: smem[compression]")
import hostile_inputs as hc  # noqa: E402
from conftest import run_smem  # noqa: E402
from hostile_bounds import HANG, max_rss_growth  # noqa: E402
from smem.errors import CaptureError, SourceError  # noqa: E402
from smem.sources import open_source  # noqa: E402
from smem.sources.archive import ArchiveSource  # noqa: E402
from smem.sources.base import MAX_FRAME_MEMBER_BYTES, MAX_MEMBER_BYTES  # noqa: E402

# In the hostile group with the corpus: one worker runs every hostile test.
pytestmark = pytest.mark.xdist_group("hostile")


def _refused(data, tmp_path, name="c"):
    """The one-line CaptureError a capture file gives."""
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(CaptureError) as e:
        open_source(str(path))
    message = str(e.value)
    assert "\n" not in message
    return message


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


@pytest.mark.uses("cpu")
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


@pytest.mark.uses("cpu")
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
    code, peak = max_rss_growth(lambda: open_source(str(path)))
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
    names = ["²", "³", "١٢", "１２", "9" * 200, "12a", "12\n"]
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


# -- absurd numbers -----------------------------------------------------------------------

@pytest.mark.parametrize("line", [b"MemTotal: 1" + b"0" * 30 + b" kB", b"MemFree: -" + b"9" * 25 + b" kB",
                                  b"HugePages_Total: " + b"9" * 21])
def test_a_meminfo_figure_no_machine_has_is_refused_in_one_line(line, tmp_path):
    from smem.loading.process import read_meminfo
    root = _tree(tmp_path / "cap", meminfo=hc.MEMINFO + line + b"\n")
    with pytest.raises(SourceError, match=r": meminfo: .* past 2\*\*64 bytes: not a real meminfo"):
        read_meminfo(open_source(str(root)))


@pytest.mark.parametrize("total", [0, -2048000])
def test_a_memtotal_not_more_than_0_is_a_damaged_capture(total, tmp_path):
    """MemTotal 0 or below is no machine's, yet was reported (-w's kernel dynamic memory -512000, -p
    shares of it): the damaged capture a meminfo without MemTotal is.  A negative Committed_AS,
    which old kernels printed, still reads."""
    capture = tmp_path / "c.tar"
    capture.write_bytes(hc.capture_tar(meminfo=hc.MEMINFO.replace(b"2048000", str(total).encode(), 1)))
    for args in (["-w"], ["-u", "-p"]):
        proc = run_smem("-S", capture, *args)
        assert proc.returncode == 1 and proc.stdout == b"", proc
        assert proc.stderr.decode() == (f"smem: capture {capture}: meminfo holds MemTotal {total} kB, which no "
                                        "machine has (not a /proc/meminfo)\n"), proc.stderr
    capture.write_bytes(hc.capture_tar(meminfo=hc.MEMINFO + b"Committed_AS:    -5000 kB\n"))
    assert run_smem("-S", capture, "-w").returncode == 0


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
    code, peak = max_rss_growth(lambda: run_report(ReportRequest(Query(view="user", source=str(path),
                                                                        exact=True))))
    return code, peak, time.monotonic() - start


@pytest.mark.uses("cpu")
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


@pytest.mark.uses("cpu")
def test_a_capture_file_is_read_in_place_not_copied(tmp_path):
    # an uncompressed capture holding a 199 MiB member it ignores (an absolute path): the
    # file was read whole into memory before its members were looked at
    path = tmp_path / "big.tar"
    with open(path, "wb") as f:
        f.write(hc.without_end(hc.capture_tar()) + hc.header(b"/99/frames", 199 << 20, kind=b"0"))
        f.truncate(f.tell() + (199 << 20) + 1024)
    code, peak = max_rss_growth(lambda: open_source(str(path)).pids())
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
