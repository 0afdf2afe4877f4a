"""Stats read through descriptors held between collections (smem.sources.held_stats), on real
processes: what changed is handed back, what did not is not, a process that exits is dropped
and its descriptor closed, and a pid reused by another process gives that process's stat,
never the one the descriptor was opened for."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import settled
from smem.parsers.stat import parse_stat
from smem.sources import held_stats as module
from smem.sources.held_stats import FLOOR, HeldStats

pytestmark = pytest.mark.skipif(module._c is None, reason='the C step smem.sources._stat_fds is not built')

SLEEPER = ("import sys\nheld = []\nprint('ready', flush=True)\nfor line in sys.stdin:\n"
           "    held.append(bytearray(int(line)))\n    print(line.strip(), flush=True)\n")


def _sleeper():
    child = subprocess.Popen([sys.executable, '-c', SLEEPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == 'ready\n'
    return child


def _stop(child):
    child.stdin.close()
    child.wait()


def _held_paths():
    """{fd: target} of this process's descriptors at FLOOR or over."""
    out = {}
    for name in os.listdir('/proc/self/fd'):
        if int(name) >= FLOOR:
            try:
                out[int(name)] = os.readlink(f'/proc/self/fd/{name}')
            except FileNotFoundError:
                pass
    return out


def test_only_what_changed_is_handed_back_and_an_exit_closes_its_descriptor():
    child = _sleeper()
    settled(child.pid)
    held = HeldStats('/proc')
    try:
        pids, changed = held.scan()
        assert child.pid in pids and pids == sorted(pids)
        first = dict(changed)
        assert parse_stat(first[child.pid]).pid == child.pid
        assert f'/proc/{child.pid}/stat' in _held_paths().values()  # (held, at FLOOR or over)
        _, changed = held.scan()
        assert child.pid not in dict(changed)  # (blocked on its stdin: its stat is the same)
        child.stdin.write(f'{8 << 20}\n')  # (it faults in 8 MiB: its counters move)
        child.stdin.flush()
        assert child.stdout.readline() == f'{8 << 20}\n'
        _, changed = held.scan()
        now = dict(changed)[child.pid]
        with open(f'/proc/{child.pid}/stat', 'rb') as f:
            fresh = parse_stat(f.read())
        assert parse_stat(now).utime + parse_stat(now).stime <= fresh.utime + fresh.stime
        assert parse_stat(now).minflt > parse_stat(first[child.pid]).minflt
        _stop(child)
        pids, changed = held.scan()
        assert child.pid not in pids and child.pid not in dict(changed)
        assert f'/proc/{child.pid}/stat' not in _held_paths().values()
    finally:
        if child.returncode is None:
            _stop(child)
        held.close()
    assert not any(re.fullmatch(r'/proc/\d+/stat', t) for t in _held_paths().values())


#: The pid-reuse test's body, run in a PID namespace of its own: there ns_last_pid places the
#: namespace's pids only.  Set on the machine, it handed the next processes of everyone (other
#: workers' tests) pids just freed: a test that had watched its process exit found that pid alive.
REUSED = """
import os, subprocess, sys
from smem.parsers.stat import parse_stat
from smem.sources.held_stats import HeldStats
SLEEPER = {sleeper!r}

def sleeper():
    child = subprocess.Popen([sys.executable, '-c', SLEEPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    assert child.stdout.readline() == 'ready\\n'
    return child

def stop(child):
    child.stdin.close()
    child.wait()

held = HeldStats('/proc')
try:
    for _ in range(50):
        first = sleeper()
        held.scan()
        pid = first.pid
        old = parse_stat(held._last[pid])
        stop(first)
        with open('/proc/sys/kernel/ns_last_pid', 'w') as f:
            f.write(str(pid - 1))
        second = sleeper()
        if second.pid == pid:
            break
        stop(second)  # (another process forked first: try again)
    else:
        sys.exit('no pid could be reused in 50 tries')
    try:
        pids, changed = held.scan()
        got = dict(changed)
        assert pid in pids and pid in got, 'the reused pid was not handed back'
        new = parse_stat(got[pid])
        with open(f'/proc/{{pid}}/stat', 'rb') as f:
            fresh = parse_stat(f.read())
        assert new.start_time == fresh.start_time > old.start_time, (new.start_time, fresh.start_time, old.start_time)
    finally:
        stop(second)
finally:
    held.close()
print('ok')
"""


@pytest.mark.uses("cpu")
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('unshare'),
                    reason='placing a pid needs root (ns_last_pid) and a PID namespace of its own (unshare)')
def test_a_pid_reused_gives_the_new_process_stat_not_the_old_one():
    """The first process's descriptor stays open while it exits and another takes its pid: the
    scan after gives the second one's stat (its own start time)."""
    out = subprocess.run(['unshare', '--pid', '--fork', '--mount-proc', sys.executable, '-c',
                          REUSED.format(sleeper=SLEEPER)], capture_output=True, text=True, timeout=300,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.stdout == 'ok\n', out.stderr


def test_without_room_for_held_descriptors_every_stat_is_still_read():
    """A soft and hard limit under FLOOR: no descriptor can be held, each stat is read and closed."""
    code = """
import os, resource, subprocess, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
from smem.sources.held_stats import HeldStats
held = HeldStats('/proc')
pids, changed = held.scan()
assert os.getpid() in pids and os.getpid() in dict(changed), 'own stat missing'
assert not held._fds, held._fds
assert max(int(n) for n in os.listdir('/proc/self/fd')) < 256
child = subprocess.Popen([sys.executable, '-c', 'import sys; sys.stdin.read()'], stdin=subprocess.PIPE)
pids, changed = held.scan()
assert child.pid in dict(changed) and os.getpid() in dict(changed)
child.stdin.close(); child.wait()
pids, changed = held.scan()
assert child.pid not in pids and child.pid not in dict(changed)
print('ok')
"""
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.stdout == 'ok\n', out.stderr


THREADED = ("import sys, threading\nheld = []\ndef work():\n    for line in sys.stdin:\n"
            "        held.append(bytearray(int(line)))\n        print(line.strip(), flush=True)\n"
            "worker = threading.Thread(target=work)\nworker.start()\nprint('ready', flush=True)\nworker.join()\n")


def test_a_process_that_has_not_run_is_not_read_but_one_whose_thread_ran_is():
    """The schedstat gate: an idle process of one thread has its schedstat held and its stat not
    handed back; a process whose first thread waits while another faults in 8 MiB is handed back
    (a schedstat is one thread's: a process of several is not gated)."""
    child = _sleeper()
    threaded = subprocess.Popen([sys.executable, '-c', THREADED], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True)
    held = HeldStats('/proc')
    try:
        assert threaded.stdout.readline() == 'ready\n'
        settled(child.pid)
        settled(threaded.pid)
        held.stats()
        held.stats()
        _, touched = held.stats()
        assert child.pid not in touched
        assert f'/proc/{child.pid}/schedstat' in _held_paths().values()
        assert f'/proc/{threaded.pid}/schedstat' not in _held_paths().values()
        threaded.stdin.write(f'{8 << 20}\n')
        threaded.stdin.flush()
        assert threaded.stdout.readline() == f'{8 << 20}\n'
        seen, touched = held.stats()
        assert threaded.pid in touched
        assert seen[threaded.pid].rss_pages * os.sysconf('SC_PAGE_SIZE') >= 8 << 20
    finally:
        _stop(child)
        threaded.stdin.close()
        threaded.wait()
        held.close()


PAGED = ("import ctypes, sys\nheld = bytearray(8 << 20)\nfor i in range(0, len(held), 4096):\n    held[i] = 1\n"
         "print(ctypes.addressof((ctypes.c_char * len(held)).from_buffer(held)), flush=True)\nsys.stdin.read()\n")


def _page_out(pid, address, length):
    """process_madvise(MADV_PAGEOUT) of another process's range, as a reclaimer does (the process
    does not run for it); False where the kernel or swap does not allow it."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = libc.syscall(434, pid, 0)  # pidfd_open
    if pidfd < 0:
        return False

    class Iovec(ctypes.Structure):
        _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
    start = (address + 4095) & ~4095  # (whole pages: madvise's ranges start on a page)
    iov = Iovec(start, (address + length - start) & ~4095)
    libc.syscall.restype = ctypes.c_long
    try:
        return libc.syscall(440, pidfd, ctypes.byref(iov), 1, 21, 0) > 0  # process_madvise, MADV_PAGEOUT
    finally:
        os.close(pidfd)


@pytest.mark.xdist_group("swap")
def test_pages_taken_from_a_process_that_does_not_run_are_seen(zram_swap):
    """Another process pages out an idle process's memory: it does not run, its schedstat is the
    same, but its stat is read and handed back (/proc/vmstat's pswpout moved)."""
    child = subprocess.Popen([sys.executable, '-c', PAGED], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    held = HeldStats('/proc')
    try:
        address = int(child.stdout.readline())
        settled(child.pid)
        held.stats()
        held.stats()
        seen, touched = held.stats()
        assert child.pid not in touched
        assert f'/proc/{child.pid}/schedstat' in _held_paths().values()  # (gated)
        before = seen[child.pid].rss_pages
        if not _page_out(child.pid, address, 8 << 20):
            pytest.skip('process_madvise(MADV_PAGEOUT) refused')
        seen, touched = held.stats()
        assert child.pid in touched
        assert seen[child.pid].rss_pages < before
    finally:
        child.stdin.close()
        child.wait()
        held.close()


def test_where_the_kernel_keeps_no_run_time_no_schedstat_is_read(tmp_path):
    """A kernel that keeps no run time says "0 0 0" in every schedstat (or has none): nothing is
    gated, every stat is read, and no schedstat is held for nothing."""
    (tmp_path / 'self').mkdir()
    (tmp_path / 'self' / 'schedstat').write_text('0 0 0\n')
    (tmp_path / 'vmstat').write_text('pgsteal_kswapd 0\npswpout 0\n')
    (tmp_path / '4242').mkdir()
    (tmp_path / '4242' / 'schedstat').write_text('0 0 0\n')
    line = '4242 (idle) S 1 4242 4242 0 -1 4194304 {} 0 0 0 1 1 0 0 20 0 1 0 500 10000000 250 ' + ' '.join(['0'] * 27)
    (tmp_path / '4242' / 'stat').write_text(line.format(100))
    held = HeldStats(str(tmp_path))
    try:
        seen, _ = held.stats()
        assert seen[4242].num_threads == 1
        held.stats()
        (tmp_path / '4242' / 'stat').write_text(line.format(101))
        seen, touched = held.stats()
        assert 4242 in touched and seen[4242].minflt == 101
        assert str(tmp_path / '4242' / 'schedstat') not in _held_paths().values()
    finally:
        held.close()


SPAWNER = ("import sys, threading\nprint('ready', flush=True)\nsys.stdin.readline()\n"
           "threading.Thread(target=sys.stdin.read).start()\nprint('threaded', flush=True)\n")


def test_a_process_that_starts_a_thread_is_no_longer_gated_and_its_schedstat_let_go():
    child = subprocess.Popen([sys.executable, '-c', SPAWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    held = HeldStats('/proc')
    try:
        assert child.stdout.readline() == 'ready\n'
        settled(child.pid)
        held.stats()
        for _ in range(20):  # (a scan gates only where the kernel took no page from sleepers since the last)
            held.stats()
            if f'/proc/{child.pid}/schedstat' in _held_paths().values():
                break
        else:
            pytest.skip('the kernel reclaimed pages at every scan: none was gated (busy machine)')
        child.stdin.write('go\n')
        child.stdin.flush()
        assert child.stdout.readline() == 'threaded\n'
        seen, touched = held.stats()
        assert child.pid in touched and seen[child.pid].num_threads == 2
        held._passive = ('pgsteal_kswapd', -1)  # (as if reclaim took pages since: this scan reads every stat)
        held.stats()  # (let go at the next scan, whether that one gates or reads every stat)
        assert f'/proc/{child.pid}/schedstat' not in _held_paths().values()
        assert f'/proc/{child.pid}/stat' in _held_paths().values()
    finally:
        child.stdin.close()
        child.wait()
        held.close()


def test_the_pids_listed_count_the_kernel_threads_whose_stats_are_held_too():
    """smem.sources.held_files leaves the held stats room for every pid they list: kernel threads
    have a stat held too, though they are no process smem reports (one on each CPU, and more)."""
    if not os.path.exists('/proc/2/stat') or parse_stat(open('/proc/2/stat', 'rb').read()).comm != 'kthreadd':
        pytest.skip("no kernel threads in this /proc (a PID namespace's)")
    held = HeldStats('/proc')
    try:
        seen, _ = held.stats()
        stats_held = sum(1 for target in _held_paths().values() if target.endswith('/stat'))
        assert held.listed >= stats_held > len(seen)  # (the kernel threads' stats are held, not seen)
    finally:
        held.close()
