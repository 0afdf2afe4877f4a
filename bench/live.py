"""Sections process, mapping, capture, memory and exact: one-shot reports of the live workload
(and of captures of it), measured in the same rounds as the peers, and their tables."""

import gzip
import os
import shutil
import subprocess
import time

from measuring import Cmd, measure
from ours import ours_argv, ours_env, peer_env
from tables import Table, command_table, fmt_mib, ratio_row


def variant_table(name, variants, g, s15=None, ps_mem=None, floor=None):
    """The C parser and the worker processes, each against serial pure Python and the peers."""
    t = Table(f'`{name}`: C parser and worker processes (SMEM_PURE_PYTHON, SMEM_JOBS), median wall time',
              ['ours', 'peer', 'ours median s', 'peer median s', 'ratio (wall)', 'ratio (CPU)',
               'target', 'met?'])
    py = g(f'ours {name} py')
    for key, _, _ in variants:
        c = g(f'ours {name} {key}')
        if c is None:
            continue
        if key != 'py':
            ratio_row(t, c, py, None)
        if key == 'jobs2':
            ratio_row(t, c, g(f'ours {name} serial'), None)
        for peer in (s15, ps_mem, floor):
            if peer is not None:
                ratio_row(t, c, peer, None)
    return t


def live_sections(only, runs, peers, tmp, log, seed):
    env, penv = ours_env(), peer_env()
    s15 = peers.smem15
    cmds = {}

    def add(key, label, argv, e, ok=(0,)):
        cmds[key] = Cmd(key, label, argv, env=e, ok_codes=ok)

    want_proc = only & {'process', 'memory', 'exact'}
    want_map = only & {'mapping', 'memory'}
    want_cap = only & {'capture', 'memory'}
    proc_args = [(), ('-t', '-k'), ('-u',)]
    map_args = [('-m',), ('-M', 'libc')]
    for args in (proc_args if want_proc else []) + (map_args if want_map else []):
        name = ' '.join(('smem',) + args)
        add(f'ours {name}', name, ours_argv(*args), env)
        if s15:
            add(f's15 {name}', f'smem 1.5: {name}', [s15, *args], penv)
    # the same, serial and pure Python (the fallback without the C parser), and in 2 processes
    variants = [('serial', 'serial, C parser', {'SMEM_JOBS': '1'}),
                ('py', 'serial, pure Python', {'SMEM_JOBS': '1', 'SMEM_PURE_PYTHON': '1'}),
                ('jobs2', '2 processes', {'SMEM_JOBS': '2'})]
    for args in ([proc_args[0]] if 'process' in only else []) + ([map_args[0]] if 'mapping' in only else []):
        name = ' '.join(('smem',) + args)
        for key, label, extra in variants:
            add(f'ours {name} {key}', f'{name} ({label})', ours_argv(*args), dict(env, **extra))
    # cat of many /proc files races with exiting processes: a vanished one makes cat exit 1
    if 'process' in only:
        if peers.ps_mem_python:
            add('ps_mem', 'ps_mem -d', [peers.ps_mem_python, '-m', 'ps_mem', '-d'], penv)
        if peers.smemstat:
            add('smemstat', 'smemstat (one report)', [peers.smemstat], penv)
        add('cat rollup', 'cat /proc/[0-9]*/smaps_rollup',
            ['/bin/sh', '-c', 'cat /proc/[0-9]*/smaps_rollup > /dev/null'], penv, (0, 1))
    if 'mapping' in only:
        add('cat smaps', 'cat /proc/[0-9]*/smaps',
            ['/bin/sh', '-c', 'cat /proc/[0-9]*/smaps > /dev/null'], penv, (0, 1))
    exact_args = [('--exact', '-u', '-t'), ('--exact', '-g', '-t'), ('--exact', '-t')]
    if 'exact' in only:
        # page-by-page accounting (pagemap + kpagecount, numpy) of the whole workload, root only
        for args in exact_args:
            name = ' '.join(('smem',) + args)
            add(f'ours {name}', name, ours_argv(*args), env)
    capinfo = None
    if want_cap:
        cap = os.path.join(tmp, 'capture.tgz')
        log('  smem capture -o capture.tgz ...')
        t0 = time.perf_counter()
        r = subprocess.run(ours_argv('capture', '-o', cap), env=env, capture_output=True, text=True)
        capinfo = (time.perf_counter() - t0, r.returncode, r.stderr.strip()[-200:])
        if r.returncode == 0:
            add('ours -S', 'smem -S capture.tgz', ours_argv('-S', cap), env)
            dest = os.path.join(tmp, 'extracted', 'proc')
            os.makedirs(dest)
            subprocess.run(['tar', 'xzf', cap, '-C', dest], check=True)  # as docs/capture-format.md says
            add('ours -S dir', 'smem -S DIR (extracted)', ours_argv('-S', os.path.join(tmp, 'extracted')), env)
            if s15:
                add('s15 -S', 'smem 1.5: smem -S DIR', [s15, '-S', os.path.join(tmp, 'extracted')], penv)
        # C smemcap (Debian's smem package): smaps, cmdline and stat of each process, no
        # smaps_rollup, so every mapping is parsed; gzip-compressed as `smemcap | gzip` would
        smemcap = shutil.which('smemcap')
        if smemcap:
            log('  smemcap | gzip > csmemcap.tgz ...')
            raw = subprocess.run([smemcap], capture_output=True).stdout
            ccap = os.path.join(tmp, 'csmemcap.tgz')
            with gzip.open(ccap, 'wb') as f:
                f.write(raw)
            cdest = os.path.join(tmp, 'cextracted', 'proc')
            os.makedirs(cdest)
            subprocess.run(['tar', 'xzf', ccap, '-C', cdest], check=True)
            add('ours -S c', 'smem -S csmemcap.tgz (C smemcap)', ours_argv('-S', ccap), env)
            add('ours -S c -m', 'smem -S csmemcap.tgz -m', ours_argv('-S', ccap, '-m'), env)
            if s15:
                add('s15 -S c', 'smem 1.5: smem -S DIR (C smemcap, extracted)',
                    [s15, '-S', os.path.join(tmp, 'cextracted')], penv)
                add('s15 -S c -m', 'smem 1.5: smem -S DIR -m', [s15, '-S', os.path.join(tmp, 'cextracted'), '-m'],
                    penv)
    log(f'measuring {len(cmds)} commands: {runs} rounds + 1 warm-up ...')
    measure(list(cmds.values()), runs, tmp, seed, log)

    g = cmds.get
    tables = []
    ratio_hdr = ['ours', 'peer', 'ours median s', 'peer median s', 'ratio (wall)', 'ratio (CPU)',
                 'target', 'met?']
    if 'process' in only:
        t = Table('Process view: ours / peer, median wall time', ratio_hdr)
        for args in proc_args:
            name = ' '.join(('smem',) + args)
            ratio_row(t, g(f'ours {name}'), g('ps_mem'), 0.7, missing='ps_mem -d')
            ratio_row(t, g(f'ours {name}'), g(f's15 {name}'), 0.15, missing=f'smem 1.5: {name}')
            ratio_row(t, g(f'ours {name}'), g('cat rollup'), 1.3)
            if g('smemstat'):
                ratio_row(t, g(f'ours {name}'), g('smemstat'), None)
        tables.append(t)
        tables.append(variant_table('smem', variants, g, ps_mem=g('ps_mem'), floor=g('cat rollup')))
    if 'mapping' in only:
        t = Table('Mapping view: ours / peer, median wall time', ratio_hdr)
        for args in map_args:
            name = ' '.join(('smem',) + args)
            ratio_row(t, g(f'ours {name}'), g(f's15 {name}'), 0.25, missing=f'smem 1.5: {name}')
            ratio_row(t, g(f'ours {name}'), g('cat smaps'), 1.5)
        tables.append(t)
        tables.append(variant_table('smem -m', variants, g, s15=g('s15 smem -m'), floor=g('cat smaps')))
    if 'capture' in only:
        note = None
        if capinfo:
            note = (f'Capture written by `smem capture -o` of the live workload in {capinfo[0]:.2f} s '
                    f'(exit {capinfo[1]}{", " + capinfo[2] if capinfo[1] else ""}).')
        t = Table('Captures: ours / peer, median wall time', ratio_hdr, note=note)
        if g('ours -S'):
            ratio_row(t, g('ours -S'), g('s15 -S'), 0.3, missing='smem 1.5: smem -S DIR')
            ratio_row(t, g('ours -S dir'), g('s15 -S'), None, missing='smem 1.5: smem -S DIR')
        if g('ours -S c'):
            ratio_row(t, g('ours -S c'), g('s15 -S c'), 0.3, missing='smem 1.5: smem -S DIR')
            ratio_row(t, g('ours -S c -m'), g('s15 -S c -m'), None, missing='smem 1.5: smem -S DIR -m')
        tables.append(t)
    if 'exact' in only:
        t = Table('Exact accounting (--exact) against the smaps report it extends, median wall time',
                  ratio_hdr, note='Info: --exact reads every mapping\'s pagemap and the map count of '
                  'every frame found; the ratio is its cost over the plain report.')
        plain = {'-u': 'ours smem -u', '-g': 'ours smem -u', '-t': 'ours smem'}
        for args in exact_args:
            name = ' '.join(('smem',) + args)
            ratio_row(t, g(f'ours {name}'), g(plain[args[1]]), None)
        tables.append(t)
    if 'memory' in only:
        t = Table('Memory: peak RSS (MiB) ours / smem 1.5, same arguments',
                  ['ours', 'peer', 'ours MiB', 'peer MiB', 'ratio', '-', 'target', 'met?'])
        pairs = [(f'ours {" ".join(("smem",) + a)}', f's15 {" ".join(("smem",) + a)}', 1.25 if a in proc_args else None)
                 for a in proc_args + map_args] + [('ours -S', 's15 -S', None), ('ours -S c', 's15 -S c', None),
                                                   ('ours -S c -m', 's15 -S c -m', None)]
        for o, p, target in pairs:
            if g(o):
                ratio_row(t, g(o), g(p), target, metric=2, fmt=fmt_mib, missing='smem 1.5')
        tables.append(t)
        t = Table('Memory: peak RSS (MiB) of ours against the 40 MiB bound of issue #12 (-m and -S)',
                  ['ours', 'ours MiB', 'target', 'met?'])
        for key in ('ours smem -m', 'ours smem -m jobs2', 'ours smem -m serial', 'ours -S', 'ours -S c',
                    'ours -S c -m'):
            if g(key) and g(key).median(2) is not None:
                mib = g(key).median(2) / 1024
                t.add(g(key).label, f'{mib:.1f}', '<= 40 MiB', 'met' if mib <= 40 else 'NOT met')
        tables.append(t)
    tables.append(command_table('Every command (medians; output lines from the warm-up run)',
                                list(cmds.values())))
    return tables
