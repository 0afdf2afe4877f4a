"""A recording's frame is built member by member (smem/recording/frames.py): a capture's members,
its two tars and their zstd frames are never all held, so adding a frame costs what smem keeps of
it (the anchor), not what the capture inflates to.  Each add runs in a child whose peak is measured.
"""

import io

import pytest

zstandard = pytest.importorskip("zstandard", reason="recordings are zstd: smem[compression]")
import hostile_inputs as hc  # noqa: E402
from conftest import run_smem  # noqa: E402
from hostile_bounds import max_rss_growth  # noqa: E402
from smem.recording.store import RecordingWriter  # noqa: E402
from smem.sources.recorded import Recording, anchor_path, frame_path  # noqa: E402

pytestmark = pytest.mark.uses("cpu")

#: the peak growth allowed for adding a frame of either capture below, MiB
CEILING = 96


def _gzip_members(members, unit=64 << 20, count=4):
    """gzip of a small capture, then ``count`` zero-filled members of ``unit`` bytes named by
    ``members(i)``: under a MiB, inflating to count * unit."""
    data = hc.compress("gzip", hc.without_end(hc.capture_tar(processes={1234: hc.process_files(
        smaps_rollup=hc.SMAPS)})))
    for i in range(count):
        data += hc.zeros_stream("gzip", unit, prefix=hc.header(members(i).encode(), unit))
    return data + hc.compress("gzip", bytes(1024))


def _added(tmp_path, capture, with_smaps):
    rec = tmp_path / "rec"

    def add():
        with RecordingWriter(str(rec)) as writer:
            writer.add(io.BytesIO(capture), with_smaps=with_smaps)
    code, peak = max_rss_growth(add)
    return rec, code, peak


@pytest.mark.parametrize("with_smaps", [True, False])
def test_a_frame_of_a_capture_of_unread_members_holds_none_of_them(tmp_path, with_smaps):
    rec, code, peak = _added(tmp_path, _gzip_members(lambda i: f"junk{i}"), with_smaps)
    assert code == 0 and peak < CEILING, (code, peak)
    with Recording(str(rec)) as recording:
        assert [f.number for f in recording.frames] == [1]
    listed = run_smem("-S", rec, "-c", "pid name", "-H", check=True).stdout
    assert b"1234" in listed and b"dbus-daemon" in listed


def test_a_frame_of_large_members_is_copied_not_held(tmp_path):
    """Members a reader reads (here four processes' smaps of 64 MiB each): the key frame holds them,
    spooled to a temporary file and compressed from it; its anchor, without those smaps (each
    process has a smaps_rollup), is what stays in memory."""
    capture = hc.compress("gzip", hc.without_end(hc.capture_tar(processes={
        pid: hc.process_files(pid, smaps_rollup=hc.SMAPS, smaps=None) for pid in (1, 2, 3, 4)})))
    for pid in (1, 2, 3, 4):
        capture += hc.zeros_stream("gzip", 64 << 20, prefix=hc.header(f"{pid}/smaps".encode(), 64 << 20))
    capture += hc.compress("gzip", bytes(1024))
    rec, code, peak = _added(tmp_path, capture, True)
    assert code == 0 and peak < CEILING, (code, peak)
    frame, anchor = ((rec / path(1)).read_bytes() for path in (frame_path, anchor_path))
    assert zstandard.frame_content_size(frame) > 4 * (64 << 20) > 1000 * zstandard.frame_content_size(anchor)
