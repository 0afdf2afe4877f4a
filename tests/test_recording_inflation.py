"""A recording given by someone else costs the memory it honestly needs (smem/sources/recorded_frame.py):
a frame is inflated as its members are read, never whole, and an anchor (the dictionary, whole in
memory) only as far as its compressed size can honestly make it.  A 35 KB anchor or frame inflating
to a GiB took 1.07 GiB before it was refused; a recording of 10,000 processes still reads.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

zstandard = pytest.importorskip("zstandard", reason="recordings are zstd: smem[compression]")
import hostile_inputs as hc  # noqa: E402
from smem.sources.recorded_frame import ANCHOR_RATIO, MAX_FRAME_BYTES  # noqa: E402

pytestmark = pytest.mark.uses("cpu")

ROOT = Path(__file__).resolve().parents[1]
#: the peak resident set allowed to smem refusing a hostile recording, MiB (a GiB before)
CEILING = 160
#: an honest frame's capture: one process
CAPTURE = hc.capture_tar(processes={1234: hc.process_files(smaps_rollup=hc.SMAPS)})


#: Runs ``python -m smem ARGS`` as its child and writes that child's peak RSS (KiB) to a file:
#: a child of pytest's own would report pytest's peak too (exec keeps the high-water mark of the
#: memory it replaces, a forked copy's or, after vfork, the parent's itself).
_MEASURED = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[3:], timeout=float(sys.argv[2])); "
             "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
             "sys.exit(code)")


def _smem(*args, timeout=120):
    """``python -m smem ARGS``: (exit status, stdout, stderr lines, its peak RSS in MiB)."""
    with tempfile.TemporaryDirectory() as tmp:
        peak = Path(tmp) / "peak"
        proc = subprocess.run([sys.executable, "-c", _MEASURED, peak, str(timeout), sys.executable, "-m", "smem",
                               *map(str, args)], stdin=subprocess.DEVNULL, capture_output=True, cwd=ROOT,
                              timeout=timeout + 30)
        return proc.returncode, proc.stdout, proc.stderr.decode().splitlines(), int(peak.read_text()) / 1024


def _recording(rec, anchor, frames):
    """A recording at ``rec`` of one anchor file (bytes) and frame files ``frames`` (bytes each)."""
    (rec / "anchors").mkdir(parents=True)
    (rec / "frames").mkdir()
    (rec / "anchors" / "000001.zst").write_bytes(anchor)
    lines = [{"format": "smem-recording", "version": 1}]
    for number, frame in enumerate(frames, 1):
        (rec / "frames" / f"{number:06d}.zst").write_bytes(frame)
        lines.append({"frame": number, "time": 1.7e9 + number, "smaps": True, "anchor": 1})
    (rec / "index.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return rec


def _honest(anchor_tar, tar=CAPTURE):
    dictionary = zstandard.ZstdCompressionDict(anchor_tar, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    return zstandard.ZstdCompressor(level=3, dict_data=dictionary).compress(tar)


def _anchor_of_zeros(rec):
    """Its anchor: 35 KB of zstd frames of zeros, inflating past MAX_FRAME_BYTES."""
    bomb = hc.zeros_stream("zstd", MAX_FRAME_BYTES + (64 << 20))
    assert len(bomb) < 64 << 10
    return _recording(rec, bomb, [_honest(CAPTURE)] * 2)


def _frame_of_zeros(rec):
    """Its last frame: zeros, past MAX_FRAME_BYTES (a tar of no member, then a GiB of its end)."""
    return _recording(rec, hc.compress("zstd", CAPTURE), [_honest(CAPTURE), hc.zeros_stream(
        "zstd", MAX_FRAME_BYTES + (64 << 20))])


def _frame_of_members_no_reader_reads(rec):
    """Its last frame: a capture, then members of 64 MiB of zeros that no reader asks for, past
    MAX_FRAME_BYTES in all: each is read past, and the frame refused once it passes the bound."""
    frame = _honest(CAPTURE, hc.without_end(CAPTURE))
    for i in range(MAX_FRAME_BYTES // (64 << 20) + 1):
        frame += hc.zeros_stream("zstd", 64 << 20, prefix=hc.header(f"junk{i}".encode(), 64 << 20))
    return _recording(rec, hc.compress("zstd", CAPTURE), [_honest(CAPTURE), frame])


@pytest.mark.parametrize("make, says", [
    (_anchor_of_zeros, ("anchors/000001.zst: inflates past ", f" MiB, {ANCHOR_RATIO} times its ",
                        " bytes and 16 MiB more: not an anchor smem record wrote")),
    (_frame_of_zeros, ("frame 2: capture has no meminfo",)),
    (_frame_of_members_no_reader_reads, ("frames/000002.zst: inflates past 1024 MiB: not a frame",)),
], ids=["an anchor of zeros", "a frame of zeros", "a frame of members no reader reads"])
def test_a_recording_inflating_to_a_gib_is_refused_in_little_memory(tmp_path, make, says):
    rec = make(tmp_path / "rec")
    for args in (["-S", rec], ["-S", rec, "-m"], ["diff", rec, "--from", "2", "--to", "2"]):
        code, _, lines, peak = _smem(*args)
        assert peak < CEILING, (args, peak)
        assert code == 1 and len(lines) == 1 and lines[0].startswith("smem: "), (args, code, lines)
        assert all(part in lines[0] for part in says), (args, lines)


def test_a_recording_of_ten_thousand_alike_processes_reads():
    """The most compressible honest anchor: 10,000 copies of one real process, their pids apart
    (tests/fixtures/record_alike_recording.py wrote it with smem record's writer).  Its anchor's
    ratio is what ANCHOR_RATIO must stay well above."""
    rec = ROOT / "tests" / "fixtures" / "recordings" / "alike"
    anchor = rec / "anchors" / "000001.zst"
    inflated = len(zstandard.ZstdDecompressor().stream_reader(anchor.read_bytes(), read_across_frames=True).read())
    assert inflated / anchor.stat().st_size > 50  # (else it does not press on the bound)
    code, out, lines, peak = _smem("-S", rec, "-c", "pid", "-H")
    assert code == 0, lines
    assert len(out.split()) == 10000
