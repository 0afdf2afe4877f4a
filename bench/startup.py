"""Section startup: the import time of smem.cli, whether the heavy chart libraries are imported,
and the wall time of a bare interpreter and of --help."""

import os
import re
import statistics
import subprocess

import ours
from measuring import Cmd, measure
from ours import ours_argv, ours_env, peer_env
from peers import SMEM15
from tables import Table, fmt_s, verdict


def section_startup(runs, tmp, log):
    """Import time of smem.cli and whether the heavy chart libraries are imported."""
    env = ours_env()

    def importtime(args):
        r = subprocess.run([ours.OURS_PYTHON, '-X', 'importtime', *args], capture_output=True,
                           text=True, env=env, cwd=tmp)
        rows = re.findall(r'^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)', r.stderr, re.M)
        return r, rows

    totals, clis, heavy = [], [], None
    for _ in range(max(runs, 3)):
        _, rows = importtime(['-c', 'import smem.cli'])
        totals.append(sum(int(s) for s, _, _, _ in rows) / 1e6)
        clis.append(sum(int(c) for _, c, ind, name in rows if name == 'smem.cli') / 1e6)
        # rows are printed children first; those between the previous top-level row and
        # smem.cli's are its imports; direct children are indented by 3 more spaces.
        i = next(k for k, r in enumerate(rows) if r[3] == 'smem.cli')
        j = max((k for k in range(i) if len(rows[k][2]) == 1), default=-1)
        kids = [(int(c), name) for _, c, ind, name in rows[j + 1:i] if len(ind) == 3]
        heavy = sorted(kids, reverse=True)[:6]
    t = Table('Start-up', ['check', 'result', 'target', 'met?'])
    t.add('`python -X importtime -c "import smem.cli"`: total (sum of self times, median)',
          f'{statistics.median(totals) * 1000:.0f} ms', '(info)', '-')
    t.add('of which `smem.cli` (cumulative, median)', f'{statistics.median(clis) * 1000:.0f} ms', '(info)', '-')
    t.add('largest imports under smem.cli (cumulative, last run)',
          ', '.join(f'{n} {c / 1000:.0f} ms' for c, n in heavy), '(info)', '-')
    for args in (['--help'], ['-c', 'pid']):
        r, _ = importtime(['-m', 'smem', *args])
        for lib in ('matplotlib', 'numpy'):
            n = len(re.findall(rf'^import time:.*\| +{lib}(\.|$)', r.stderr, re.M))
            t.add(f'`smem {" ".join(args)}`: lines of importtime naming {lib}', n, '0', verdict(n, 0))
    # wall time of a bare interpreter and of smem --help, interleaved
    cmds = [Cmd('py-pass', f'{ours.OURS_PYTHON} -c pass', [ours.OURS_PYTHON, '-c', 'pass'], env=env),
            Cmd('ours-help', 'smem --help', ours_argv('--help'), env=env)]
    system_python = '/usr/bin/python3'
    if os.path.exists(system_python) and os.path.realpath(system_python) != os.path.realpath(ours.OURS_PYTHON):
        cmds.append(Cmd('py15-pass', '/usr/bin/python3 -c pass (smem 1.5\'s interpreter)',
                        ['/usr/bin/python3', '-c', 'pass'], env=peer_env()))
    if os.path.exists(SMEM15):
        cmds.append(Cmd('s15-help', 'smem 1.5 --help', [SMEM15, '--help'], env=peer_env()))
    measure(cmds, runs, tmp, 7, log)
    for c in cmds:
        t.add(f'wall time of `{c.label}` (median of {len(c.results)})', f'{fmt_s(c.median(0))} s', '(info)', '-')
    return [t]
