"""The incremental collection (issue 26): smem serve against process-exporter and a full re-read.

One run, four servers scraped in the same rounds on the same workload (every n-th worker
allocating and freeing all along, the others idle):

* ours as a user runs it: ``smem serve`` (``--max-staleness`` as given: only what changed
  is re-read; the default ``--top 10``): its CPU is the figure compared;
* the same exporting every process (``--top 1000000``): its figures are the ones checked;
* ours re-reading everything at every scrape (``--max-staleness 0``, every process): the
  full read the figures are compared with;
* Debian's prometheus-process-exporter, smaps gathered, grouping by command name.

Every ``interval`` seconds ours is scraped; then the workload is stopped (SIGSTOP to its
process group, so that nothing in it moves while they read it), the servers whose figures are
compared are scraped at once, it is continued, and process-exporter is scraped (so that it
runs, allocating and freeing, for most of the time).

* The two that read every process at every scrape (the full re-read and process-exporter)
  take turns, one a round: what they cost a scrape does not depend on when it comes, while
  ours does (what it re-reads for age is the time since its last scrape over
  ``--max-staleness``), and on two cores a round of all four at 10,000 processes takes longer
  than 15 s, which would measure ours at a longer interval than the one asked.  Odd rounds
  compare figures (``every`` against ``full``); even rounds scrape process-exporter and
  ``cat`` every rollup (R, below); ``ours`` and ``every`` are scraped every round.
* Ours is scraped first and alone, at the interval: a figure kept must be re-read within
  ``--max-staleness`` less what a collection takes in wall time, which a process-exporter
  scrape beside it on two cores would stretch, and what it re-reads for age is the time since
  its last scrape's share of that.

CPU is each server's user + system time from /proc/PID/stat (ticks), taken just before and
after its scrape, summed over the timed scrapes: the machine is shared, and CPU time, unlike
wall time, is not what others' load makes it.  Accuracy: every PSS sample ours exports
(``smem_*_pss_bytes``: processes, programs, users, cgroups) against the same sample of the full
read of the same round; the workload's processes are frozen, the rest of the machine is not,
so the two are given apart.
"""

import os
import re
import signal
import socket
import statistics
import subprocess
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

SAMPLE = re.compile(r'^(smem_\w+_pss_bytes)\{(.*)\} (\S+)$', re.M)
OWN = re.compile(r'^(smem_collection_reread_processes|smem_collection_counted_processes|smem_collection_processes|smem_oldest_figure_age_seconds) '
                 r'(\S+)$', re.M)
REASON = re.compile(r'^smem_collection_reread_by_reason_processes\{reason="(\w+)"\} (\S+)$', re.M)
TICK = os.sysconf('SC_CLK_TCK')

EXPORTER = '/usr/bin/prometheus-process-exporter'
EXPORTER_CONFIG = """process_names:
  - name: "{{.Comm}}"
    cmdline:
    - '.+'
"""


def cpu_seconds(pid):
    """User + system time of ``pid`` and of its waited-for children, seconds."""
    with open(f'/proc/{pid}/stat', 'rb') as f:
        fields = f.read().rsplit(b')', 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / TICK


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _get(url):
    with urllib.request.urlopen(url, timeout=300) as response:
        return response.read().decode()


def _wait_up(url, proc, seconds=600):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            said = ''
            if getattr(proc, 'log', None):  # (what it said before it exited: its last lines)
                with open(proc.log, errors='replace') as f:
                    said = ': ' + ' | '.join(f.read().splitlines()[-5:])
            raise RuntimeError(f'{proc.args[0]} exited with {proc.returncode}{said}')
        try:
            return _get(url)
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f'{url} did not answer')


def _up(server):
    """``server`` (proc, url) once it has answered a scrape (stopped where it does not)."""
    try:
        _wait_up(server[1], server[0])
    except BaseException:
        server[0].kill()
        server[0].wait()
        raise
    return server


def _ours(ours_argv, env, tmp, staleness, top):
    port = _free_port()
    proc = subprocess.Popen(ours_argv('serve', '--listen', f'127.0.0.1:{port}', '--min-interval', '0',
                                      '--top', str(top), '--max-staleness', f'{staleness:g}'),
                            env=env, cwd=tmp, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    return proc, f'http://127.0.0.1:{port}/metrics'


def _exporter(tmp, env):
    config = os.path.join(tmp, 'process-exporter.yml')
    with open(config, 'w') as f:
        f.write(EXPORTER_CONFIG)
    port = _free_port()
    log = os.path.join(tmp, 'process-exporter.log')
    with open(log, 'wb') as said:
        proc = subprocess.Popen([EXPORTER, '-config.path', config, '-gather-smaps=true',
                                 '-web.listen-address', f'127.0.0.1:{port}'],
                                env=env, cwd=tmp, stdin=subprocess.DEVNULL, stdout=said, stderr=said)
    proc.log = log
    return proc, f'http://127.0.0.1:{port}/metrics'


def _samples(body):
    return {(name, labels): float(value) for name, labels, value in SAMPLE.findall(body)}


def _percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def section_incremental(wl, tmp, log, ours_argv, ours_env, peer_env, Table, scrapes=12, interval=15.0,
                        staleness=60.0):
    """The table of one run (see the module's docstring)."""
    if scrapes < 2:
        raise SystemExit('bench: --scrapes must be 0 or at least 2 (the full re-read and process-exporter take turns)')
    servers = {}
    try:
        # each started and scraped once (imports, the first full read) before the next starts, so
        # that no first read is slowed by another's; ours last, so that its first timed scrape
        # comes an interval after its first reads, as a scraper's second does
        if os.path.exists(EXPORTER):
            servers['exporter'] = _up(_exporter(tmp, peer_env()))
        servers['full'] = _up(_ours(ours_argv, ours_env(), tmp, 0, 1000000))
        servers['every'] = _up(_ours(ours_argv, ours_env(), tmp, staleness, 1000000))
        servers['ours'] = _up(_ours(ours_argv, ours_env(), tmp, staleness, 10))
        workload_pids = {str(p) for p in wl.pids}
        cpu = {name: [] for name in servers}
        errors_wl, errors_rest, missing, reread, ages, reasons, counted, rollups = [], [], 0, [], [], {}, [], []
        worst_rest = (-1.0, None)  # (error, the sample) of the rest's worst: what moved unstopped
        from_counters = []
        start = time.monotonic()
        began = []
        for k in range(1, scrapes + 1):
            time.sleep(max(0.0, start + k * interval - time.monotonic()))
            began.append(time.monotonic())
            bodies, walls = {}, {}

            def scrape(names):
                """Scrape ``names`` at once (each one's CPU is its own: the round is shorter, and the
                gap between two scrapes nearer the interval on a busy machine)."""
                def one(name):
                    proc, url = servers[name]
                    before, t0 = cpu_seconds(proc.pid), time.monotonic()
                    bodies[name] = _get(url)
                    cpu[name].append(cpu_seconds(proc.pid) - before)
                    walls[name] = time.monotonic() - t0
                with ThreadPoolExecutor(4) as pool:
                    list(pool.map(one, names))
            # ours first and alone (a collection's wall time sets how soon its figures are re-read,
            # and the time since its last scrape how many are: the interval); the two whose figures
            # are compared read a stopped workload, the others read it as it runs, so that it is
            # stopped no longer than that (it allocates and frees meanwhile)
            comparing = k % 2 == 1 or 'exporter' not in servers  # (the full re-read's turn: see the docstring)
            scrape(('ours',))
            os.killpg(wl.leader_pid, signal.SIGSTOP)
            try:
                scrape(('every', 'full') if comparing else ('every',))
            finally:
                os.killpg(wl.leader_pid, signal.SIGCONT)
            if not comparing:
                scrape(('exporter',))
            if not comparing or 'exporter' not in servers:
                rollups.append(_cat_rollups_cpu())
            own = dict(OWN.findall(bodies['ours']))
            reread.append(float(own.get('smem_collection_reread_processes', 'nan')))
            ages.append(float(own.get('smem_oldest_figure_age_seconds', 'nan')))
            from_counters.append(float(own.get('smem_collection_counted_processes', 'nan')))
            counted.append(float(own.get('smem_collection_processes', 'nan')))
            for reason, count in REASON.findall(bodies['ours']):
                reasons.setdefault(reason, []).append(float(count))
            log(f'  scrape {k}/{scrapes} at {began[-1] - start:.1f} s: ours {cpu["ours"][-1] * 1000:.0f} ms of CPU in '
                f'{walls["ours"]:.1f} s, '
                f're-read {reread[-1]:.0f} (' + ', '.join(f'{r} {v[-1]:.0f}' for r, v in sorted(reasons.items())) +
                f'), oldest figure {ages[-1]:.1f} s')
            if not comparing:
                continue
            ours, full = _samples(bodies['every']), _samples(bodies['full'])
            for key, exact in full.items():
                got = ours.get(key)
                if got is None:
                    missing += 1
                    continue
                error = abs(got - exact) / exact if exact else (0.0 if got == exact else 1.0)
                pid = re.search(r'pid="(\d+)"', key[1])
                if pid and pid.group(1) in workload_pids:
                    errors_wl.append(error)
                else:
                    errors_rest.append(error)
                    if error > worst_rest[0]:
                        worst_rest = (error, f'{key[0]}{{{key[1][:120]}}}: {got:.0f} against {exact:.0f} bytes')
    finally:
        for proc, _ in servers.values():
            proc.terminate()
        for proc, _ in servers.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    mean = {name: sum(v) / len(v) for name, v in cpu.items()}
    t = Table(f'Incremental collection: smem serve (--max-staleness {staleness:g}) every {interval:g} s, '
              f'{scrapes} scrapes, against process-exporter and a full re-read taking turns in the same run',
              ['measure', 'value', 'target', 'met?'],
              note='CPU: user + system of each server (/proc/PID/stat), just before and after its scrape, '
                   'mean over the scrapes (the full re-read\'s and process-exporter\'s over the rounds each took: odd and '
                   'even). Errors: |ours - full| / full of each smem_*_pss_bytes sample, the '
                   'full read made in the same round with the workload stopped (SIGSTOP); "rest" are the '
                   'machine\'s other processes and the program/user/cgroup sums, which were not stopped.')
    pe = mean.get('exporter')
    t.add('CPU per scrape, ours (incremental, --top 10)', f'{mean["ours"] * 1000:.0f} ms', '', '')
    t.add('CPU per scrape, ours (incremental, every process exported)', f'{mean["every"] * 1000:.0f} ms', '', '')
    t.add('CPU per scrape, ours re-reading everything (every process exported)', f'{mean["full"] * 1000:.0f} ms',
          '', '')
    if pe is not None:
        t.add('CPU per scrape, process-exporter', f'{pe * 1000:.0f} ms', '', '')
        ratio = mean['ours'] / pe
        t.add('ours incremental / process-exporter', f'{ratio:.2f}x', '<= 0.2x', 'met' if ratio <= 0.2 else 'NOT met')
        t.add('ours full / process-exporter', f'{mean["full"] / pe:.2f}x', '', '')
    else:
        t.add('process-exporter', f'MISSING: {EXPORTER} not installed', '', '')
    if pe is not None and rollups:
        _cost_split(t, mean['ours'], pe, statistics.mean(rollups), statistics.median(reread),
                    statistics.median(counted), statistics.median(reasons.get('moved', [0])) +
                    statistics.median(reasons.get('new', [0])), interval, staleness)
    t.add('ours incremental / ours re-reading everything (both exporting every process)',
          f'{mean["every"] / mean["full"]:.2f}x', '', '')
    gaps = [b - a for a, b in zip(began, began[1:])]
    t.add('time between two scrapes (mean; a round that takes longer than the interval delays the next)',
          f'{sum(gaps) / len(gaps):.1f} s' if gaps else '-', '', '')
    t.add('rollups re-read per scrape (median)', f'{statistics.median(reread):.0f} of {len(workload_pids)}+',
          '', '')
    t.add('... of which (medians)', ', '.join(f'{reason} {statistics.median(v):.0f}'
                                            for reason, v in sorted(reasons.items())), '', '')
    t.add('moved, given their figures by their counters, not re-read (median)',
          f'{statistics.median(from_counters):.0f}', '', '')
    t.add('oldest figure at a scrape (max)', f'{max(ages):.1f} s', f'<= {staleness:g} s',
          'met' if max(ages) <= staleness else 'NOT met')
    for label, errors in (('workload processes', errors_wl), ('rest', errors_rest)):
        if errors:
            worst, p99 = max(errors), _percentile(errors, 0.99)
            t.add(f'PSS error, {label}: worst / 99th percentile ({len(errors)} samples)',
                  f'{worst * 100:.3f}% / {p99 * 100:.3f}%', '<= 1%' if label.startswith('workload') else '',
                  ('met' if worst <= 0.01 else 'NOT met') if label.startswith('workload') else '')
    if worst_rest[1] is not None:
        t.add('... the rest\'s worst sample (not stopped: it may move between the two reads)', worst_rest[1], '', '')
    t.add('samples of the full read missing from ours', str(missing), '', '')
    return [t]


def _cat_rollups_cpu():
    """CPU seconds (wait4) of ``cat`` of every process's smaps_rollup: R, what reading every rollup
    costs the kernel, with no parsing."""
    proc = subprocess.Popen(['/bin/sh', '-c', 'cat /proc/[0-9]*/smaps_rollup > /dev/null 2>&1'])
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime


def _cost_split(t, ours, pe, r, reread, n, changed, interval, staleness):
    """Rows splitting the two costs: R (every rollup read, ``cat``), P (what process-exporter pays
    beyond R), S (what ours pays beyond the rollups it re-reads: stat of every process, change
    detection, tables, exposition), and the ratio they predict at other scrape intervals (the
    age re-reads are (N - changed) * interval / staleness of the N processes a scrape)."""
    share = reread / n
    s = ours - share * r
    t.add('R: CPU of cat of every smaps_rollup (mean of one per even round)', f'{r * 1000:.0f} ms over {n:.0f} processes',
          '', '')
    t.add('P: process-exporter beyond R', f'{(pe - r) * 1000:.0f} ms (R / (R + P) = {r / pe:.2f})', '', '')
    t.add('S: ours beyond the rollups it re-read (ours - reread / N * R)',
          f'{s * 1000:.0f} ms ({reread:.0f} / {n:.0f} re-read; S / (R + P) = {s / pe:.3f})', '', '')
    for g in sorted({interval, 15.0, 30.0, 60.0}):
        age = min(n - changed, (n - changed) * g / staleness)
        t.add(f'predicted ours / process-exporter at a {g:g} s scrape (same R, P, S; {changed:.0f} changed)',
              f'{((age + changed) / n * r + s) / pe:.3f}x', '', '')


def _cpu_of_run(argv, env, tmp, out, kernel=False):
    """(CPU seconds, wall seconds, exit status) of ``argv`` run to its end, output to ``out``;
    with ``kernel``, (CPU seconds, of which in the kernel, wall seconds, exit status)."""
    with open(os.path.join(tmp, out), 'wb') as f:
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, env=env, cwd=tmp, stdin=subprocess.DEVNULL, stdout=f,
                                stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    if kernel:
        return cpu, usage.ru_stime, time.monotonic() - t0, proc.returncode
    return cpu, time.monotonic() - t0, proc.returncode


def section_watch_incremental(tmp, log, ours_argv, ours_env, Table, frames=31, interval=2.0, staleness=60.0,
                              views=((), ('-u',))):
    """Watch mode re-reading what changed against re-reading everything each frame, on the same
    workload: the CPU of a frame in the steady state, (CPU of FRAMES frames - CPU of one) /
    (FRAMES - 1), from wait4, of each; and the kernel's part of the incremental frame (system
    time: the rollups, stats and maps it reads) as a share of the whole frame, the floor no
    Python can go under."""
    t = Table(f'Watch mode: `smem --interval {interval:g} --count {frames}` re-reading what changed '
              f'(--max-staleness {staleness:g}) against everything each frame (--max-staleness 0)',
              ['command', 'CPU ms per frame, incremental', 'of which kernel', 'CPU ms per frame, everything',
               'ratio', 'kernel alone', 'target', 'met?'],
              note='CPU is user + system from wait4; per frame: (CPU of the run - CPU of a --count 1 run) / '
                   f'({frames} - 1); "of which kernel" is the system time so counted, and "kernel alone" it over '
                   'the whole frame of everything. Output to a file (one table after each "# TIME" line).')
    env = ours_env()
    for view in views:
        per_frame = {}
        for label, value in (('incremental', staleness), ('everything', 0)):
            argv = ours_argv(*view, '--interval', f'{interval:g}', '--max-staleness', f'{value:g}')
            log(f'  watch {" ".join(view)} ({label}): 1 frame, then {frames} frames ...')
            one, one_sys, _, code1 = _cpu_of_run(argv + ['--count', '1'], env, tmp, 'watch1.out', kernel=True)
            cpu, cpu_sys, _, code = _cpu_of_run(argv + ['--count', str(frames)], env, tmp, 'watch.out', kernel=True)
            per_frame[label] = None if code or code1 else ((cpu - one) / (frames - 1),
                                                           (cpu_sys - one_sys) / (frames - 1))
        inc, full = per_frame['incremental'], per_frame['everything']
        name = ' '.join(('smem',) + view)
        if inc is None or full is None:
            t.add(name, '-', '-', '-', '-', '-', '<= 0.2x', 'failed')
            continue
        ratio = inc[0] / full[0]
        t.add(name, f'{inc[0] * 1000:.0f}', f'{inc[1] * 1000:.0f}', f'{full[0] * 1000:.0f}', f'{ratio:.2f}x',
              f'{inc[1] / full[0]:.2f}x', '<= 0.2x', 'met' if ratio <= 0.2 else 'NOT met')
    return [t]


def section_oneshot(tmp, log, ours_argv, ours_env, Table, rounds=3):
    """A one-shot ``smem`` (the process view, to a file) against ``cat`` of every smaps_rollup on
    the same workload, alternated ``rounds`` times after one untimed run of each: medians of CPU
    (wait4) and wall, and their ratios."""
    cat = ['/bin/sh', '-c', 'cat /proc/[0-9]*/smaps_rollup > /dev/null 2>&1']
    runs = {'smem': [], 'cat': []}
    paired = []  # (smem's CPU, cat's CPU) of each round smem ran in
    env = ours_env()
    for k in range(rounds + 1):
        log(f'\r  one-shot: round {k}/{rounds}', end='')
        order = [('smem', ours_argv()), ('cat', cat)]
        if k % 2:
            order.reverse()
        this_round = {}
        for name, argv in order:
            cpu, wall, code = _cpu_of_run(argv, env if name == 'smem' else None, tmp, f'oneshot-{name}.out')
            if k and (code == 0 or name == 'cat'):
                runs[name].append((cpu, wall))
                this_round[name] = cpu
        if len(this_round) == 2:
            paired.append((this_round['smem'], this_round['cat']))
    log('')
    t = Table(f'One-shot process view: `smem` against `cat /proc/[0-9]*/smaps_rollup`, {rounds} rounds alternated',
              ['measure', 'smem', 'cat', 'ratio', 'target', 'met?'],
              note='CPU: user + system from wait4; wall from the start to the exit; medians. smem decides its '
                   'worker processes (one per CPU from 200 processes up); cat reads every rollup and discards it.')
    if not runs['smem'] or not runs['cat']:
        t.add('smem', 'failed', '-', '-', '<= 1.3x', 'failed')
        return [t]
    for index, label in ((1, 'wall'), (0, 'CPU')):
        ours = statistics.median(r[index] for r in runs['smem'])
        peer = statistics.median(r[index] for r in runs['cat'])
        ratio = ours / peer
        t.add(f'{label}, median', f'{ours:.2f} s', f'{peer:.2f} s', f'{ratio:.2f}x', '<= 1.3x',
              'met' if ratio <= 1.3 else 'NOT met')
    # each round's smem against the cat run beside it: how far one round strays from the medians
    pairs = sorted(ours / peer for ours, peer in paired if peer > 0)
    if len(pairs) >= 4:
        q1, q2, q3 = statistics.quantiles(pairs, n=4)
        t.add('CPU, each round against its cat: min / quartiles / max',
              f'{pairs[0]:.2f}x / {q1:.2f}x / {q2:.2f}x / {q3:.2f}x / {pairs[-1]:.2f}x', '', '', '', '')
    return [t]

