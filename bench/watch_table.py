"""Watch mode's table kept between frames (smem.table_memo), against every cell computed.

Reads this machine every 2 s as watch mode does (watch._Frames: the incremental collection),
and after each reading makes the frame's table and its classic rendering both ways: with the
frames' RowMemo (what ``smem --interval`` does) and with every cell computed (make_table with no
memo).  Whichever way runs first also computes the new processes' lazy sums, so each goes first
every other frame.  Prints the median CPU (time.process_time) of each way per frame, the first
frame left out, and fails if the two texts differ.  ``--no-gc`` holds the garbage collector off
while both are made (it runs at whatever allocation crosses its threshold, in either).

    python bench/watch_table.py [--view user] [--frames 11] [--no-gc]
"""

import argparse
import gc
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))

from smem import report  # noqa: E402
from smem.app import plan  # noqa: E402
from smem.formats import FORMATS, Rendering  # noqa: E402
from smem.options import Query, ReportRequest, TableOptions, WatchOptions  # noqa: E402
from smem.watch import _Frames  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--view', default='process')
    ap.add_argument('--frames', type=int, default=11)
    ap.add_argument('--no-gc', action='store_true')
    args = ap.parse_args()
    request = ReportRequest(query=Query(view=args.view, jobs=1), table=TableOptions(),
                            watch=WatchOptions(interval=2.0, max_staleness=60.0))
    frames, options = _Frames(request, plan(request)), request.table
    stream = FORMATS['classic'].stream
    times, rows, computed = {'kept': [], 'full': []}, [], []

    def kept():
        return stream(Rendering(frames.table(options), options, frames.current, frame=frames.frame, memo=frames.memo))

    def full():
        table = report.make_table([frames.baseline, frames.current], frames.plan.view, options, request.system)
        table = frames._folded(table, options) if frames.since_first else table
        rows.append(len(table.rows))
        return stream(Rendering(table, options, frames.current, frame=frames.frame))

    for number in range(1, args.frames + 1):
        started = time.monotonic()
        frames.read(number)
        if args.no_gc:
            gc.collect()
            gc.disable()
        out = {}
        for way in ('kept', 'full') if number % 2 else ('full', 'kept'):
            before = time.process_time()
            out[way] = (kept if way == 'kept' else full)()
            if number > 1:
                times[way].append(time.process_time() - before)
        gc.enable()
        if out['kept'] != out['full']:
            raise SystemExit(f'frame {number}: the kept table differs from the one with every cell computed')
        if number > 1:
            computed.append(frames.memo.computed)
        time.sleep(max(0.0, started + 2 - time.monotonic()))
    k, f = (statistics.median(times[w]) * 1000 for w in ('kept', 'full'))
    print(f'{args.view}: {args.frames - 1} frames of {min(rows)}-{max(rows)} rows, cells computed for '
          f'{statistics.median(computed):.0f} a frame (median); table + classic rendering, CPU a frame (median): '
          f'kept {k:.1f} ms, every cell {f:.1f} ms, {k / f:.2f}x; load {os.getloadavg()[0]:.1f}')


if __name__ == '__main__':
    main()
