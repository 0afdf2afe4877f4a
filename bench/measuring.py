"""Measuring commands: each run's wall time, CPU time and peak RSS, in shuffled rounds that each
wait for a quiet machine.  Used by bench/run.py's sections and by bench/suite.py."""

import os
import random
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Cmd:
    key: str                      # unique id
    label: str                    # what is shown
    argv: list
    env: dict = None
    ok_codes: tuple = (0,)
    results: list = field(default_factory=list)   # (wall_s, cpu_s, maxrss_kib)
    failures: list = field(default_factory=list)
    out_lines: int = None

    def median(self, i):
        vals = [r[i] for r in self.results if r[i] is not None]
        return statistics.median(vals) if vals else None


GNU_TIME = '/usr/bin/time'
#: How peak RSS is read: 'gnu-time' or 'wait4' (see run_once).  Set by run.py's main().
RSS_METHOD = 'wait4'


def run_once(cmd, outdir):
    """Run ``cmd`` once: (wall seconds, CPU seconds, peak RSS KiB, exit status, stdout, stderr paths).

    The clock starts just before posix_spawn and stops when the child is reaped by
    os.wait4, whose resource usage gives the CPU time (user + system, of the child and
    the descendants it waited for).

    Peak RSS needs care: the kernel carries the RSS high-water mark of the address space
    a process had before execve into its ru_maxrss (fs/exec.c, exec_mmap:
    setmax_mm_hiwater_rss), and a child spawned by this Python harness starts out with
    the harness's address space (vfork) or a copy of it (fork), so its ru_maxrss is at
    least the harness's RSS (~19 MiB): it would hide everything smaller.  So the command
    runs under GNU time (a ~1 MiB C program that forks and execs it, and prints the
    waited child's ru_maxrss as %M); only when GNU time is missing is the wait4 figure
    used, and the report says so.
    """
    out = os.path.join(outdir, f'{cmd.key}.out')
    err = os.path.join(outdir, f'{cmd.key}.err')
    rus = os.path.join(outdir, f'{cmd.key}.rusage')
    argv = cmd.argv
    if RSS_METHOD == 'gnu-time':
        argv = [GNU_TIME, '-f', '%M', '-o', rus, *argv]
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, '/dev/null', os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        (os.POSIX_SPAWN_OPEN, 2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
    ]
    env = cmd.env if cmd.env is not None else os.environ
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    maxrss = ru.ru_maxrss
    if RSS_METHOD == 'gnu-time':
        # "Command exited with non-zero status N" may come first; %M is the last line
        lines = Path(rus).read_text().split()
        maxrss = int(lines[-1]) if lines and lines[-1].isdigit() else None
    return wall, ru.ru_utime + ru.ru_stime, maxrss, code, out, err


_TICK = os.sysconf('SC_CLK_TCK')
#: Per measure() call: seconds spent waiting for a quiet machine, rounds started busy.
QUIET = {'max_wait': 20.0, 'waited': 0.0, 'busy_rounds': 0, 'rounds': 0}


def cpu_busy_seconds():
    """CPU seconds all CPUs have spent not idle since boot (/proc/stat, first line)."""
    with open('/proc/stat', 'rb') as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
    guest = sum(v[8:10]) if len(v) > 9 else 0   # guest time is already in user/nice
    return (sum(v) - idle - guest) / _TICK


def wait_for_quiet(log, threshold=0.3, window=0.5):
    """Wait (up to QUIET['max_wait'] s) until other work uses under ``threshold`` of a CPU.

    The machine may be shared; starting each round on a quiet machine keeps other
    people's bursts out of most runs.  Rounds that start busy anyway are counted.
    """
    t0 = time.monotonic()
    while True:
        b0 = cpu_busy_seconds()
        time.sleep(window)
        load = (cpu_busy_seconds() - b0) / window
        if load < threshold:
            break
        if time.monotonic() - t0 > QUIET['max_wait']:
            QUIET['busy_rounds'] += 1
            break
        log(f'\r  waiting for a quiet machine (others use {load:.1f} CPUs) ', end='')
    QUIET['waited'] += time.monotonic() - t0
    QUIET['rounds'] += 1


def measure(cmds, runs, outdir, seed, log):
    """One untimed warm-up of each command, then ``runs`` rounds, each running every
    command once in a fresh random order (interleaved, so drift and neighbours' load hit
    every command alike).

    Each run also records the foreign load: CPU time the whole machine spent busy
    during the run, less the command's own, per second of wall time (0 on an
    otherwise idle machine, 1.0 = another process kept one CPU busy throughout).
    """
    rng = random.Random(seed)
    total = len(cmds) * (runs + 1)
    done = 0
    for rnd in range(runs + 1):
        order = list(cmds)
        rng.shuffle(order)
        if rnd:
            wait_for_quiet(log)
        for cmd in order:
            b0 = cpu_busy_seconds()
            wall, cpu, rss, code, out, err = run_once(cmd, outdir)
            foreign = max(0.0, (cpu_busy_seconds() - b0 - cpu) / wall)
            done += 1
            if code not in cmd.ok_codes:
                msg = Path(err).read_text(errors='replace').strip().splitlines()
                cmd.failures.append(f'exit {code}: {msg[-1] if msg else ""}')
            elif rnd == 0:
                with open(out, 'rb') as f:
                    cmd.out_lines = f.read().count(b'\n')
            else:
                cmd.results.append((wall, cpu, rss, foreign))
            log(f'\r  round {rnd}/{runs} ({"warm-up" if rnd == 0 else "timed"}), '
                f'{done}/{total} runs', end='')
    log('')
