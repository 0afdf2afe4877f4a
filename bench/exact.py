"""`smem --exact -u` against plain `smem -u` measured in the same run (issue #26 item 3).

Runs both commands in interleaved rounds under GNU time (``/usr/bin/time``), and prints the
median wall time, the median CPU (user + system, workers included), the peak RSS of each, and
the ratios; with ``--workload N`` it starts bench/workload.py's N processes first.  Root only.

    python3 bench/exact.py --workload 1500 --rounds 5
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def run_once(argv, env):
    with tempfile.NamedTemporaryFile('r') as out:
        subprocess.run(['/usr/bin/time', '-o', out.name, '-f', '%e %U %S %M', *argv], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        wall, user, system, rss = out.read().split()[-4:]
    return float(wall), float(user) + float(system), int(rss) / 1024


def measure(rounds, python):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    commands = {'smem -u': [python, '-m', 'smem', '-u'],
                'smem --exact -u': [python, '-m', 'smem', '--exact', '-u']}
    runs = {name: [] for name in commands}
    for argv in commands.values():  # warm-up
        run_once(argv, env)
    for _ in range(rounds):
        for name, argv in commands.items():
            runs[name].append(run_once(argv, env))
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--workload', type=int, default=0, help='start this many workload processes')
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--python', default=sys.executable)
    args = parser.parse_args()
    import contextlib
    import workload
    groups = max(1, (args.workload - 1) // 10)
    ctx = workload.running(groups, 9, python=args.python) if args.workload else contextlib.nullcontext()
    with ctx:
        load = open('/proc/loadavg').read().split()[:3]
        nproc = sum(e.isdigit() for e in os.listdir('/proc'))
        runs = measure(args.rounds, args.python)
        load_end = open('/proc/loadavg').read().split()[:3]
    med = {name: [statistics.median(r[i] for r in rs) for i in range(3)] for name, rs in runs.items()}
    print(f'processes on the machine: {nproc}; load average {" ".join(load)} -> {" ".join(load_end)}; '
          f'{args.rounds} interleaved rounds, medians')
    print('| command | wall s | CPU s | peak RSS MiB |')
    print('|---|---|---|---|')
    for name, (wall, cpu, rss) in med.items():
        print(f'| `{name}` | {wall:.2f} | {cpu:.2f} | {max(r[2] for r in runs[name]):.1f} |')
    plain, ex = med['smem -u'], med['smem --exact -u']
    print(f'ratio --exact -u / -u: wall {ex[0] / plain[0]:.2f}x (target 3x), CPU {ex[1] / plain[1]:.2f}x; '
          f'peak {max(r[2] for r in runs["smem --exact -u"]):.1f} MiB (target 100 MiB)')


if __name__ == '__main__':
    main()
