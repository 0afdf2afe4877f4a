#!/usr/bin/env python3
"""Performance benchmark of smem against its peers, on a workload it builds itself.

    python3 bench/run.py              # full run (about 5 minutes on 2 cores)
    python3 bench/run.py --quick      # smoke check: small workload, 3 runs
    python3 bench/run.py --only mapping --runs 9 --markdown

See bench/README.md for what is measured and how to read the table.  Not a test:
nothing here runs under pytest.
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import incremental  # noqa: E402
import measuring  # noqa: E402
import ours  # noqa: E402
import scaling  # noqa: E402
import synth  # noqa: E402
import workload  # noqa: E402
from live import live_sections  # noqa: E402
from measuring import GNU_TIME, QUIET  # noqa: E402
from ours import REPO, ours_argv, ours_env, peer_env, snapshot_ours  # noqa: E402
from peers import apt_install, find_peers, machine_facts, read_or_empty  # noqa: E402
from scaling import section_scaling  # noqa: E402
from serve import section_serve  # noqa: E402
from startup import section_startup  # noqa: E402
from tables import Table  # noqa: E402
from watch import section_watch  # noqa: E402

SECTIONS = ('process', 'mapping', 'capture', 'memory', 'exact', 'serve', 'scaling', 'startup', 'watch',
            'incremental')


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--runs', type=int, default=None, help='timed runs of each command (default 7; 3 with --quick)')
    ap.add_argument('--quick', action='store_true', help='small workload, 3 runs: a smoke check')
    ap.add_argument('--only', action='append', choices=SECTIONS, metavar='SECTION',
                    help=f'run only this section (repeatable): {", ".join(SECTIONS)}')
    ap.add_argument('--markdown', action='store_true', help='print markdown tables (for docs/benchmarks.md)')
    ap.add_argument('--groups', type=int, default=None, help='workload groups (default 30; 4 with --quick)')
    ap.add_argument('--processes', type=int, default=None,
                    help='workload size in processes, e.g. 1500 (sets --groups: 1 + groups x (per-group + 1))')
    ap.add_argument('--per-group', type=int, default=9, help='workers per group (default 9)')
    ap.add_argument('--scale-base', type=int, default=None,
                    help='processes in the 1x synthetic capture (default 300; 50 with --quick)')
    ap.add_argument('--no-install', action='store_true', help='do not apt-get/pip install missing peers')
    ap.add_argument('--ref', metavar='REV',
                    help='benchmark smem/ as committed at git revision REV (default: the work tree as it is)')
    ap.add_argument('--seed', type=int, default=1, help='seed of the run order shuffle')
    ap.add_argument('--watch-frames', type=int, default=None,
                    help='frames of each watch-mode run (default 60; 10 with --quick)')
    ap.add_argument('--watch-interval', type=float, default=1.0, help='seconds between frames (default 1)')
    ap.add_argument('--scrapes', type=int, default=12, help='incremental: timed scrapes (default 12; 0: no servers)')
    ap.add_argument('--scrape-interval', type=float, default=15.0,
                    help='incremental: seconds between two scrapes (default 15)')
    ap.add_argument('--max-staleness', type=float, default=60.0,
                    help='incremental: smem serve --max-staleness (default 60)')
    ap.add_argument('--oneshot-rounds', type=int, default=0,
                    help='incremental: also time a one-shot `smem` against cat of every smaps_rollup, '
                         'alternated this many rounds on the same workload (default 0: not)')
    ap.add_argument('--active-every', type=int, default=9,
                    help='incremental: every n-th worker allocates and frees (default 9: 10%% of the processes)')
    ap.add_argument('--quiet-wait', type=float, default=20.0,
                    help='seconds each round may wait for other work on the machine to stop (default 20; 0: never)')
    args = ap.parse_args(argv)
    runs = args.runs or (3 if args.quick else 7)
    groups = args.groups or (4 if args.quick else 30)
    if args.processes:
        groups = max(1, round((args.processes - 1) / (args.per_group + 1)))
    base = args.scale_base or (50 if args.quick else 300)
    if args.quick:
        scaling.SCALE_STEPS = (1, 4)
    only = set(args.only or SECTIONS)
    QUIET['max_wait'] = args.quiet_wait
    log = lambda *a, **k: print(*a, file=sys.stderr, flush=True, **k)

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    started = time.monotonic()
    log('finding peers ...')
    peers = find_peers(not args.no_install, log)
    if not os.path.exists(GNU_TIME) and not args.no_install:
        apt_install('time', log)
    measuring.RSS_METHOD = 'gnu-time' if os.path.exists(GNU_TIME) else 'wait4'
    facts = machine_facts(peers)
    tables = []
    with tempfile.TemporaryDirectory(prefix='smem-bench-') as tmp:
        digest = snapshot_ours(tmp, args.ref)
        if args.ref:
            rev = subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', args.ref],
                                 capture_output=True, text=True).stdout.strip()
            facts['smem (ours)'] = f'commit {rev} ({args.ref}) of {REPO}'
        facts['smem (ours)'] += f'; smem/ sources sha256 {digest}, copied at start and run from the copy'
        # `python -m` puts the working directory first on sys.path: work where no smem/ is
        cwd = os.getcwd()
        os.chdir(tmp)
        where = subprocess.run([ours.OURS_PYTHON, '-c', 'import smem; print(smem.__file__)'], env=ours_env(),
                               capture_output=True, text=True).stdout.strip()
        if not where.startswith(str(ours.OURS_ROOT)):
            sys.exit(f'bench: smem imports from {where!r}, not from the frozen copy {ours.OURS_ROOT}')
        impl = subprocess.run([ours.OURS_PYTHON, '-c', 'import smem.parsers.smaps as s; print(s.IMPLEMENTATION)'],
                              env=ours_env(), capture_output=True, text=True).stdout.strip()
        facts['smem (ours)'] += f'; smaps parser: {impl or "?"}'
        pre = subprocess.run(ours_argv('-c', 'pid pss'), env=ours_env(), capture_output=True, text=True)
        if pre.returncode != 0:
            sys.exit(f'bench: smem -c "pid pss" fails (exit {pre.returncode}) on the copy under test: '
                     f'{pre.stderr.strip()[-500:]}')
        try:
            tables += run_sections(args, only, runs, groups, base, peers, facts, tmp, log)
        except KeyboardInterrupt:
            log('\ninterrupted: workload stopped, temporary files removed')
            return 130
        finally:
            os.chdir(cwd)
    facts['load average at end'] = read_or_empty('/proc/loadavg').split(' ')[:3]
    facts['benchmark wall time'] = f'{time.monotonic() - started:.0f} s'
    cmdline = 'python3 bench/run.py ' + ' '.join(argv if argv is not None else sys.argv[1:])
    facts['command'] = cmdline.strip()
    facts['peak RSS from'] = ('GNU time %M (the child\'s own ru_maxrss)' if measuring.RSS_METHOD == 'gnu-time' else
                              'wait4 ru_maxrss: GNU time missing, so every figure includes the harness\'s '
                              '~19 MiB (see run_once)')
    facts['runs per command'] = f'{runs} timed (after 1 untimed warm-up), interleaved in shuffled rounds'
    facts['quiet-machine gate'] = (f'{QUIET["rounds"]} rounds waited {QUIET["waited"]:.0f} s in all for other '
                                   f'work to drop under 0.3 CPU; {QUIET["busy_rounds"]} started busy after '
                                   f'{QUIET["max_wait"]:.0f} s')
    ft = Table('Machine and run', ['fact', 'value'])
    for k, v in facts.items():
        ft.add(k, ' '.join(v) if isinstance(v, list) else v)
    for name, why in peers.missing.items():
        ft.add(f'MISSING peer: {name}', why)
    print(ft.text(args.markdown))
    for t in tables:
        print(t.text(args.markdown))
    return 0


def run_sections(args, only, runs, groups, base, peers, facts, tmp, log):
    tables = []
    need_workload = only & {'process', 'mapping', 'capture', 'memory', 'exact', 'serve', 'scaling', 'watch'}
    template = None
    if need_workload:
        log(f'starting workload: {1 + groups * (args.per_group + 1)} processes ...')
        with workload.running(groups, args.per_group) as wl:
            d = wl.describe()
            facts['workload'] = (f'{d["processes"]} processes (1 leader, {groups} groups of '
                                 f'{args.per_group + 1}), {d["maps_min"]}-{d["maps_max"]} mappings each '
                                 f'(median {d["maps_median"]}); shared: {d["shared_kib"] // 1024} MiB '
                                 f'(4 files in 24 file mappings, a /dev/shm file, MAP_SHARED anon, a region '
                                 f'per group); {d["private_kib_each"]} KiB private anon written per process')
            facts['processes on the machine'] = str(sum(e.isdigit() for e in os.listdir('/proc')))
            template = synth.read_process(wl.pids[-1])
            if only & {'process', 'mapping', 'capture', 'memory', 'exact'}:
                tables += live_sections(only, runs, peers, tmp, log, args.seed)
            if 'serve' in only:
                log('smem serve ...')
                tables += section_serve(runs, tmp, log)
            if 'watch' in only:
                frames = args.watch_frames or (10 if args.quick else 60)
                tables += section_watch(tmp, log, frames, args.watch_interval)
        if 'scaling' in only:
            log('scaling ...')
            tables += section_scaling(runs, tmp, template, base, log)
    if 'incremental' in only:
        log(f'incremental: workload of {1 + groups * (args.per_group + 1)} processes, every '
            f'{args.active_every}th worker active ...')
        with workload.running(groups, args.per_group, active_every=args.active_every) as wl:
            facts['incremental workload'] = f'{len(wl.pids)} processes'
            facts['processes on the machine (incremental)'] = str(sum(e.isdigit() for e in os.listdir('/proc')))
            if args.scrapes:  # (0: only the one-shot or watch runs)
                tables += incremental.section_incremental(
                    wl, tmp, log, ours_argv, ours_env, peer_env, Table, scrapes=args.scrapes,
                    interval=args.scrape_interval, staleness=args.max_staleness)
            if args.oneshot_rounds:
                tables += incremental.section_oneshot(tmp, log, ours_argv, ours_env, Table, args.oneshot_rounds)
            if args.watch_frames != 0:
                tables += incremental.section_watch_incremental(tmp, log, ours_argv, ours_env, Table,
                                                                frames=args.watch_frames or 31,
                                                                staleness=args.max_staleness)
    if 'startup' in only:
        log('start-up ...')
        tables += section_startup(runs, tmp, log)
    return tables



if __name__ == '__main__':
    sys.exit(main())
