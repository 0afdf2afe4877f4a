"""Hostile input (issue #16): damaged, hostile or absurd captures, trees and options.

Each case here is a bug that was (a traceback, a hang, gigabytes of memory); the
corpus at the end runs a few hundred more through the command line, each in a
forked child with a timeout and a memory bound.
"""

import os
import resource
import time

import pytest

import hostile_corpus as hc
from smem.errors import CaptureError, SmemError, SourceError, UsageError
from smem.sources import open_source
from smem.sources import capture


def _refused(data, tmp_path, name="c"):
    """The one-line CaptureError a capture file gives."""
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(CaptureError) as e:
        open_source(str(path))
    message = str(e.value)
    assert "\n" not in message
    return message


def _max_rss_growth(function):
    """Run ``function`` in a forked child; (its exit status, its peak RSS in MiB)."""
    pid = os.fork()
    if pid == 0:
        try:
            function()
            os._exit(0)
        except SmemError:
            os._exit(1)
        except BaseException:
            os._exit(3)
    _, status, usage = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024


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
            assert message.startswith("c: "), (kind, message)


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
        with pytest.raises(CaptureError, match=r"member \d+ \(1234/smaps\) inflates past the limit of 1 GiB"):
            open_source(str(path))
        assert time.monotonic() - start < 2, kind


def test_zero_padding_after_the_end_is_not_inflated_for_ever(tmp_path):
    # 2 GiB of zeros after a complete archive: read up to the trailer limit only
    for kind in ("gzip", "zstd"):
        data = hc.zeros_stream(kind, 2 << 30, prefix=hc.capture_tar())
        path = tmp_path / kind
        path.write_bytes(data)
        start = time.monotonic()
        assert open_source(str(path)).pids() == [1234]
        assert time.monotonic() - start < 2, kind


def test_a_bomb_in_an_archive_tarfile_reads_is_bounded(tmp_path):
    # a pax header (left to tarfile) claiming 3 GiB, followed by gigabytes of zeros
    head = hc.without_end(hc.capture_tar()) + hc.header(b"PaxHeader", 3 << 30, kind=b"x")
    path = tmp_path / "pax"
    path.write_bytes(hc.zeros_stream("gzip", 512 << 20, prefix=head))
    code, peak = _max_rss_growth(lambda: open_source(str(path)))
    assert code == 1 and peak < 200


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
    assert time.monotonic() - start < 2


def test_member_limit_is_sane():
    assert 64 << 20 <= capture.MAX_MEMBER_BYTES <= 4 << 30
