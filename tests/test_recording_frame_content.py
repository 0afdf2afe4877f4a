"""A recording's frame whose capture holds a meminfo no kernel writes (``smem record --listen``
keeps what a target pushes once it reads as a capture) is a damaged frame: it costs only itself.
It ended the playback (--all-frames, --speed) at that frame and made the whole recording's page
fail, where a frame damaged on disk is skipped with a line."""

import io

import pytest

import hostile_inputs as hc
from conftest import run_smem

#: meminfo of a frame: none at all (not a /proc/meminfo), a figure no machine has, and a MemTotal of 0
BAD_MEMINFO = {"no MemTotal": b"garbage\n", "a figure no machine has": b"MemTotal: 1" + b"0" * 30 + b" kB\n",
               "MemTotal 0": b"MemTotal: 0 kB\n"}


def _recording(tmp_path, meminfo):
    """Three frames, the second of a capture with ``meminfo``."""
    from smem.recording.store import RecordingWriter
    rec = tmp_path / "rec"
    with RecordingWriter(str(rec), smaps_every=1) as writer:
        for i in range(3):
            capture = hc.capture_tar(meminfo=meminfo if i == 1 else hc.MEMINFO)
            writer.add(io.BytesIO(capture), taken=1796598000 + 10 * i)
    return rec


@pytest.mark.parametrize("kind", sorted(BAD_MEMINFO))
def test_all_frames_skips_a_frame_whose_meminfo_no_kernel_writes(tmp_path, kind):
    rec = _recording(tmp_path, BAD_MEMINFO[kind])
    proc = run_smem("-S", rec, "--all-frames", "-F", "csv", "-c", "pid pss")
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, lines
    assert "frame 2" in lines[0] and lines[0].endswith(": skipped, the other frames played"), lines
    assert {row.split(",")[1] for row in proc.stdout.decode().splitlines()[1:]} == {"1", "3"}, proc.stdout


@pytest.mark.parametrize("kind", sorted(BAD_MEMINFO))
def test_the_page_of_a_recording_leaves_out_a_frame_whose_meminfo_no_kernel_writes(tmp_path, kind):
    pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
    rec = _recording(tmp_path, BAD_MEMINFO[kind])
    page = tmp_path / "page.html"
    proc = run_smem("html", "-S", rec, "-o", page)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 0 and page.stat().st_size > 0, lines
    assert [line for line in lines if "frame 2" in line and line.endswith(": left out of the page")], lines
