#!/usr/bin/env python3
"""The size of a recording (smem record) against the same frames kept as full captures.

    python3 bench/recording_size.py                       # 12 frames, 10 s apart, this machine
    python3 bench/recording_size.py --frames 360 --smaps-every 360   # an hour: one key frame cycle

Takes FRAMES full captures of this machine INTERVAL seconds apart, adds each to a recording
(smem.recording.store, as smem record does, key frames every SMAPS_EVERY) and gzips each
as ``smem capture`` would keep it.  Prints the bytes of each kind of frame per process, and
projects both to PROCESSES processes every 10 s for a day: a key frame (and its anchor)
every SMAPS_EVERY frames, the other frames at their measured size per process.  The target of
issue #23 is 150 MiB for 300 processes.  Not a test: nothing here runs under pytest.
"""

import argparse
import gzip
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from smem.capture_writer import write_capture  # noqa: E402
from smem.recording.store import RecordingWriter  # noqa: E402
from smem.sources import open_source  # noqa: E402
from smem.sources.recorded import frame_path  # noqa: E402

DAY_FRAMES = 24 * 3600 // 10
TARGET_MIB = 150


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=12)
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--smaps-every", type=int, default=360,
                        help="key frames in the projection (the run keeps one at its start)")
    parser.add_argument("--processes", type=int, default=300)
    args = parser.parse_args()
    rows = []  # (processes, key, anchor bytes or 0, frame bytes, gzip capture bytes)
    churn = []  # (frame bytes, processes also in its anchor, processes started since) of the other frames
    anchor_pids = set()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rec")
        with RecordingWriter(path, smaps_every=args.smaps_every) as writer:
            next_at = time.monotonic()
            for n in range(args.frames):
                time.sleep(max(0.0, next_at - time.monotonic()))
                next_at += args.interval
                full = io.BytesIO()
                source = open_source(None)
                try:
                    write_capture(source, full, compression=None)  # every smaps: the full capture
                finally:
                    source.close()
                gz = len(gzip.compress(full.getvalue(), 9))  # as smem capture (tarfile's gzip, level 9)
                pids = _pids(full.getvalue())
                full.seek(0)
                entry = writer.add(full, with_smaps=n == 0)
                size = os.path.getsize(os.path.join(path, frame_path(entry.number)))
                anchor = writer.written - size
                rows.append((entry.processes, entry.smaps, anchor, size, gz))
                if entry.anchor == entry.number:
                    anchor_pids = pids
                else:
                    churn.append((size, len(pids & anchor_pids), len(pids - anchor_pids)))
                print(f"frame {entry.number:4d}: {entry.processes:5d} processes, frame {size:9,d} B"
                      f"{' (key frame)' if entry.smaps else ''}{' + a new anchor %s B' % format(anchor, ',') if anchor else ''}"
                      f", as a gzip capture {gz:10,d} B", flush=True)
        index_bytes = os.path.getsize(os.path.join(path, "index.jsonl"))

    per = lambda values: statistics.mean(values)
    key = [(a + s) / p for p, k, a, s, _ in rows if k]
    delta = [(a + s) / p for p, k, a, s, _ in rows if not k]  # with the anchors they renewed
    full = [g / n for n, *_, g in rows]
    index_line = index_bytes / (len(rows) + 1)
    p = args.processes
    keys = -(-DAY_FRAMES // args.smaps_every)
    projected = keys * per(key) * p + (DAY_FRAMES - keys) * per(delta) * p + DAY_FRAMES * index_line
    as_captures = DAY_FRAMES * per(full) * p
    print()
    renewed = sum(1 for _, k, a, _, _ in rows if a and not k)
    print(f"anchors renewed by drift: {renewed} in {len(rows)} frames")
    print(f"per process: key frame with anchor {per(key):,.0f} B, other frames {per(delta):,.1f} B "
          f"(median {statistics.median(delta):,.1f}, last {delta[-1]:,.1f}), gzip capture {per(full):,.0f} B")
    print(f"projected, {p} processes every 10 s for 24 h, a key frame every {args.smaps_every}: "
          f"{projected / 2**20:,.1f} MiB (target {TARGET_MIB} MiB); as full gzip captures "
          f"{as_captures / 2**30:,.2f} GiB; ratio {as_captures / projected:,.0f}x")
    if len(churn) >= 10:
        import numpy
        sizes, steady, started = (numpy.array(c, dtype=float) for c in zip(*churn))
        (each, new, fixed), *_ = numpy.linalg.lstsq(numpy.column_stack([steady, started, numpy.ones_like(steady)]),
                                                    sizes, rcond=None)
        if min(each, new, fixed) <= 0:
            print(f"(too few frames, or too little churn, to part steady processes from new ones: {len(churn)})")
            return
        quiet = keys * per(key) * p + (DAY_FRAMES - keys) * (each * p + fixed) + DAY_FRAMES * index_line
        print(f"a frame (least squares over {len(churn)} frames): {each:,.1f} B per process also in its anchor, "
              f"{new:,.0f} B per process started since, {fixed:,.0f} B the rest; {started.mean():,.1f} processes "
              f"a frame were new since the anchor")
        print(f"projected for a target whose {p} processes stay (a router, a set-top box): {quiet / 2**20:,.1f} MiB; "
              f"ratio to full gzip captures {as_captures / quiet:,.0f}x")


def _pids(tar_bytes):
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        return {m.name for m in tar if m.isdir() and m.name.isdigit()}


if __name__ == "__main__":
    main()
