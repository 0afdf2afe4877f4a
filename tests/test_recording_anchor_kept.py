"""A recording played back (smem --all-frames, smem html's charts) opens it again at every frame, and
inflated its anchor (the zstd dictionary, whole in memory) again for each: most of reading a frame
without smaps.  The last anchor inflated is kept (smem/sources/recorded.py): frames in order that
share it inflate it once; one anchor is kept, never more, and one whose file changed is read anew."""

import shutil

import pytest

pytest.importorskip("zstandard", reason="recordings are zstd: smem[compression]")
from conftest import FIXTURES  # noqa: E402
from smem.errors import CaptureError  # noqa: E402
from smem.sources.recorded import Recording  # noqa: E402

#: frames 1 to 3 share anchor 1; frame 4 is a key frame, its own anchor
SMALL = FIXTURES / "recordings" / "small"


def _dictionary(path, number):
    """The dictionary frame ``number`` is read with, the recording opened for it alone, as a
    playback opens it at every frame."""
    with Recording(path) as recording:
        return recording.frame(next(e for e in recording.frames if e.number == number)).dictionary


def test_frames_sharing_an_anchor_inflate_it_once_and_only_the_last_is_kept():
    first = _dictionary(SMALL, 1)
    assert _dictionary(SMALL, 2) is first and _dictionary(SMALL, 3) is first
    fourth = _dictionary(SMALL, 4)
    assert fourth is not first and fourth.as_bytes() != first.as_bytes()
    again = _dictionary(SMALL, 1)  # (anchor 1 was dropped for anchor 4: inflated anew)
    assert again is not first and again.as_bytes() == first.as_bytes()


def test_an_anchor_whose_file_changed_is_read_anew(tmp_path):
    rec = shutil.copytree(SMALL, tmp_path / "rec")
    kept = _dictionary(rec, 1)
    shutil.copyfile(SMALL / "anchors" / "000004.zst", rec / "anchors" / "000001.zst")
    assert _dictionary(rec, 2).as_bytes() == _dictionary(SMALL, 4).as_bytes() != kept.as_bytes()
    (rec / "anchors" / "000001.zst").write_bytes(b"\x28\xb5\x2f\xfd damaged")
    with pytest.raises(CaptureError, match="anchors/000001.zst: damaged"):
        _dictionary(rec, 3)
