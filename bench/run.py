#!/usr/bin/env python3
"""Performance benchmark of smem against its peers, on a workload it builds itself.

    python3 bench/run.py              # full run (about 5 minutes on 2 cores)
    python3 bench/run.py --quick      # smoke check: small workload, 3 runs
    python3 bench/run.py --only mapping --runs 9 --markdown

See bench/README.md for what is measured and how to read the table.  Not a test:
nothing here runs under pytest.
"""

import argparse
import gzip
import os
import re
import shutil
import signal
import statistics
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
import synth  # noqa: E402
import workload  # noqa: E402
from measuring import GNU_TIME, QUIET, Cmd, measure, run_once, wait_for_quiet  # noqa: E402
from ours import REPO, ours_argv, ours_env, peer_env, snapshot_ours  # noqa: E402
from peers import SMEM15, apt_install, find_peers, machine_facts, read_or_empty  # noqa: E402
from tables import Table, command_table, fmt_mib, fmt_s, ratio_row, verdict  # noqa: E402

SECTIONS = ('process', 'mapping', 'capture', 'memory', 'exact', 'serve', 'scaling', 'startup', 'watch',
            'incremental')
SCALE_STEPS = (1, 4, 16)
LINEAR_SLACK = 5.0   # a 4x step may cost at most 5x (4x plus 25%) to count as linear


# ------------------------------------------------------------------ sections

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
    if os.path.exists('/usr/bin/python3') and os.path.realpath('/usr/bin/python3') != os.path.realpath(ours.OURS_PYTHON):
        cmds.append(Cmd('py15-pass', '/usr/bin/python3 -c pass (smem 1.5\'s interpreter)',
                        ['/usr/bin/python3', '-c', 'pass'], env=peer_env()))
    if os.path.exists(SMEM15):
        cmds.append(Cmd('s15-help', 'smem 1.5 --help', [SMEM15, '--help'], env=peer_env()))
    measure(cmds, runs, tmp, 7, log)
    for c in cmds:
        t.add(f'wall time of `{c.label}` (median of {len(c.results)})', f'{fmt_s(c.median(0))} s', '(info)', '-')
    return [t]


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
        global SCALE_STEPS
        SCALE_STEPS = (1, 4)
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


def _scrape(url):
    """(wall seconds of one GET, {sample name: value} of smem's unlabelled self metrics)."""
    import urllib.request
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = response.read().decode()
    wall = time.perf_counter() - t0
    own = dict(re.findall(r'^(smem_collection\w*) (\S+)$', body, re.M))
    return wall, {k: float(v) for k, v in own.items()}, len(body)


def section_serve(runs, tmp, log):
    """smem serve against the live workload: the wall time of a GET /metrics that makes a fresh
    collection (--min-interval 0), serial and in worker processes; and eight scrapes at once."""
    from concurrent.futures import ThreadPoolExecutor
    t = Table('smem serve: GET /metrics with a fresh collection (--min-interval 0), live workload',
              ['server', 'scrapes', 'median s', 'min s', 'max s', 'collection s (its own metric)',
               'processes read', 'response KiB', 'target', 'met?'],
              note='Wall time from the request to the last byte of the answer (urllib, same machine); the '
                   'collection time is smem_collection_duration_seconds of the same answers. "8 at once": '
                   'eight concurrent GETs on a server with --min-interval 5, timed until the last answer, '
                   'and how many collections served them.')
    for label, extra in (('serial (-j 1)', ['-j', '1', '--min-interval', '0']),
                         ('2 processes (-j 2)', ['-j', '2', '--min-interval', '0']),
                         ('8 at once, -j 1', ['-j', '1', '--min-interval', '5'])):
        argv = ours_argv('serve', '--listen', '127.0.0.1:0', *extra)
        proc = subprocess.Popen(argv, env=ours_env(), cwd=tmp, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            line = proc.stderr.readline().decode()
            m = re.search(r'serving (http://\S+)', line)
            if not m:
                t.add(label, 0, '-', '-', '-', '-', '-', '-', '< 1 s', f'failed: {line.strip()[:60]}')
                continue
            url = m.group(1)
            _scrape(url)  # warm-up: imports, the first collection
            if label.startswith('8'):
                proc_before = _scrape(url)[1].get('smem_collections_total', 0)
                time.sleep(5.5)  # the cached collection expires
                wait_for_quiet(log)
                t0 = time.perf_counter()
                with ThreadPoolExecutor(8) as pool:
                    answers = list(pool.map(_scrape, [url] * 8))
                wall = time.perf_counter() - t0
                made = max(a[1].get('smem_collections_total', 0) for a in answers) - proc_before
                t.add(label, 8, fmt_s(wall), fmt_s(min(a[0] for a in answers)), fmt_s(wall),
                      fmt_s(answers[0][1].get('smem_collection_duration_seconds')),
                      int(answers[0][1].get('smem_collection_processes', 0)), f'{answers[0][2] / 1024:.0f}',
                      '1 collection', f'{int(made)} collection(s)')
                continue
            results = []
            for _ in range(runs):
                wait_for_quiet(log)
                results.append(_scrape(url))
            walls = [r[0] for r in results]
            median = statistics.median(walls)
            t.add(label, len(results), fmt_s(median), fmt_s(min(walls)), fmt_s(max(walls)),
                  fmt_s(statistics.median(r[1].get('smem_collection_duration_seconds', 0) for r in results)),
                  int(results[-1][1].get('smem_collection_processes', 0)), f'{results[-1][2] / 1024:.0f}',
                  '< 1 s', 'met' if median < 1 else 'NOT met')
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return [t]


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


if __name__ == '__main__':
    sys.exit(main())
