"""Section watch: the CPU of watch mode (`smem --interval 1 --count 60`) on the live workload,
against the kernel's floor of a frame."""

import os
import statistics
import time
from pathlib import Path

from measuring import Cmd, run_once, wait_for_quiet
from ours import ours_argv, ours_env, peer_env
from tables import Table, fmt_s, verdict


WATCH_TARGET = 0.10   # of one core, at a 1 s interval (issue 13)


def section_watch(tmp, log, frames, interval):
    """Watch mode's CPU: ``smem --interval 1 --count 60`` on the workload, user + system time.

    Each command runs once (a run takes frames x interval of wall time), output to a file,
    after one run of the same command with ``--count 1`` whose CPU is the start-up and first
    frame: the difference over frames - 1 is the cost of a frame in the steady state.  The
    share of a core is the whole run's CPU over its wall time, start-up included.  Beside it,
    the kernel floor of a frame: the median CPU of ``cat /proc/[0-9]*/smaps_rollup`` (what the
    kernel spends building the files a process view reads), run 9 times just before, one a
    second, since every process on the machine, and the machine's load, costs both alike.
    """
    env = ours_env()
    variants = [('smem', (), {}), ('smem -u', ('-u',), {}), ('smem -F json', ('-F', 'json'), {}),
                ('smem, 2 processes', (), {'SMEM_JOBS': '2'})]
    t = Table(f'Watch mode: CPU of `--interval {interval:g} --count {frames}` (one run each)',
              ['command', 'processes on the machine', 'frames', 'wall s', 'CPU s', 'CPU s start-up + 1 frame',
               'CPU ms per frame', 'kernel floor ms', 'per frame / floor', 'share of a core', 'target', 'met?'],
              note='CPU is user + system time from wait4 (workers included). "per frame" is (CPU of the '
                   'run - CPU of a --count 1 run) / (frames - 1); "kernel floor" the median CPU of `cat '
                   '/proc/[0-9]*/smaps_rollup` run 9 times, a second apart, just before; "share of a core" '
                   'is the run\'s CPU over its wall time, start-up included.')
    floor = Cmd('watch floor', 'cat smaps_rollup', ['/bin/sh', '-c', 'cat /proc/[0-9]*/smaps_rollup > /dev/null'],
                env=peer_env(), ok_codes=(0, 1))
    for label, args, extra in variants:
        argv = ours_argv(*args, '--interval', f'{interval:g}')
        e = dict(env, **extra)
        wait_for_quiet(log)
        log(f'  watch: {label}: the kernel floor, 1 frame, then {frames} frames ({frames * interval:.0f} s) ...')
        floors = []
        for _ in range(9):
            floors.append(run_once(floor, tmp)[1])
            time.sleep(interval)
        floor_cpu = statistics.median(floors)
        one = Cmd(f'watch1 {label}', label, argv + ['--count', '1'], env=e)
        run = Cmd(f'watch {label}', label, argv + ['--count', str(frames)], env=e)
        _, cpu1, _, code1, _, err1 = run_once(one, tmp)
        pids = sum(e.isdigit() for e in os.listdir('/proc'))
        wall, cpu, _, code, out, err = run_once(run, tmp)
        if code or code1:
            msg = Path(err if code else err1).read_text(errors='replace').strip().splitlines()
            t.add(label, pids, frames, '-', '-', '-', '-', '-', '-', '-', '-',
                  f'exit {code or code1}: {msg[-1] if msg else ""}')
            continue
        share = cpu / wall
        per_frame = (cpu - cpu1) / max(frames - 1, 1)
        t.add(f'{" ".join(("smem",) + args)} --interval {interval:g} --count {frames}'
              + (f' ({", ".join(f"{k}={v}" for k, v in extra.items())})' if extra else ''),
              pids, frames, fmt_s(wall), fmt_s(cpu), fmt_s(cpu1), f'{per_frame * 1000:.1f}',
              f'{floor_cpu * 1000:.1f}', f'{per_frame / floor_cpu:.2f}x' if floor_cpu else '-',
              f'{share * 100:.1f}%', f'<= {WATCH_TARGET * 100:.0f}%' if interval == 1 else '(info)',
              verdict(share, WATCH_TARGET) if interval == 1 else '-')
    return [t]
