"""Section scaling: `smem -S` on synthetic captures 1x, 4x, 16x larger, and whether its time
grows linearly."""

import os

import synth
from measuring import Cmd, measure
from ours import ours_argv, ours_env
from tables import Table, fmt_mib, fmt_s

SCALE_STEPS = (1, 4, 16)   # (1, 4) with --quick: set by run.py's main()
LINEAR_SLACK = 5.0   # a 4x step may cost at most 5x (4x plus 25%) to count as linear


def section_scaling(runs, tmp, template, base, log, compare15=False):
    """`smem -S` on synthetic captures 1x, 4x, 16x larger: does time grow linearly?"""
    log('  writing synthetic captures ...')
    cmds = []
    env = ours_env()
    sizes = {}
    for k in SCALE_STEPS:
        n = base * k
        path = os.path.join(tmp, f'procs-{n}.tgz')
        synth.many_processes(path, template, n)
        sizes[('procs', k)] = (n, os.path.getsize(path))
        cmds.append(Cmd(f'procs-{k}', f'smem -S <{n} processes>', ours_argv('-S', path), env=env))
    for k in SCALE_STEPS:  # C smemcap's members: no rollup, every mapping parsed (and -m folds them)
        n = base * k
        path = os.path.join(tmp, f'cprocs-{n}.tgz')
        synth.many_processes(path, template, n, smemcap=True)
        sizes[('cprocs', k)] = (n, os.path.getsize(path))
        cmds.append(Cmd(f'cprocs-{k}', f'smem -S <{n} processes, C smemcap>', ours_argv('-S', path), env=env))
        cmds.append(Cmd(f'cprocsm-{k}', f'smem -S <{n} processes, C smemcap> -m', ours_argv('-S', path, '-m'),
                        env=env))
    for k in SCALE_STEPS:
        m = 6250 * k
        path = os.path.join(tmp, f'maps-{m}.tgz')
        synth.many_mappings(path, template, m)
        sizes[('maps', k)] = (m, os.path.getsize(path))
        cmds.append(Cmd(f'maps-{k}', f'smem -S <1 process, {m} mappings>', ours_argv('-S', path), env=env))
        cmds.append(Cmd(f'mapsm-{k}', f'smem -S <1 process, {m} mappings> -m', ours_argv('-S', path, '-m'),
                        env=env))
    measure(cmds, runs, tmp, 11, log)
    t = Table('Scaling (synthetic captures, `smem -S`)',
              ['capture', 'size', 'compressed MiB', 'median s', 'foreign load', 'peak RSS MiB',
               'time x per 4x step', 'RSS x per 4x step', f'linear? (time step <= {LINEAR_SLACK}x)'],
              note=f'Processes: copies of one workload process (its smaps, smaps_rollup, cmdline, stat, '
                   f'status; C smemcap: smaps, cmdline, stat), base {base}.  Mappings: one process whose smaps repeats the mappings of a '
                   f'workload process with fresh addresses (rollup recomputed).  The per-step time ratio '
                   f'includes the constant start-up (~0.1-0.2 s), so it sits below 4x when growth is linear.')
    by = {c.key: c for c in cmds}
    for kind, unit in (('procs', 'processes'), ('cprocs', 'processes'), ('cprocsm', 'processes, -m'),
                       ('maps', 'mappings'), ('mapsm', 'mappings, -m')):
        prev = None
        for k in SCALE_STEPS:
            c = by[f'{kind}-{k}']
            n, size = sizes[(kind.rstrip('m') if kind.startswith(('procs', 'cprocs')) else 'maps', k)]
            step_t = step_r = '-'
            ok = '-'
            if prev and c.median(0) and prev.median(0):
                rt = c.median(0) / prev.median(0)
                rr = c.median(2) / prev.median(2)
                step_t, step_r = f'{rt:.2f}x', f'{rr:.2f}x'
                ok = 'yes' if rt <= LINEAR_SLACK else 'NO'
            fails = f' ({len(c.failures)} failed)' if c.failures else ''
            t.add(c.label, f'{n} {unit}', f'{size / 1048576:.1f}', fmt_s(c.median(0)) + fails,
                  '-' if c.median(3) is None else f'{c.median(3):.2f}', fmt_mib(c.median(2)), step_t, step_r, ok)
            prev = c
    return [t]
