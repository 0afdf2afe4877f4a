"""The benchmark's workload: a few hundred real processes with real sharing.

Run by ``bench/run.py`` through :func:`running`; this file is also the program the
processes run (``python -I -S workload.py ...``: no site, so each interpreter has few
mappings of its own and little memory).

One leader sets up, before forking, what every process will share:

* ``NFILES`` regular files, each mapped read-only MAP_SHARED in ``FILE_PIECES`` pieces
  and read, so each piece is a file-backed mapping whose page-cache pages every process
  maps (the kind of sharing shared libraries give);
* one tmpfs file under /dev/shm, mapped MAP_SHARED in ``SHM_PIECES`` pieces and written
  (POSIX shared memory);
* one MAP_SHARED|MAP_ANONYMOUS region, written (shows as ``/dev/zero (deleted)``);
* ``PRIV_REGIONS`` private anonymous regions, written by the leader.

It then forks ``groups`` group leaders; each maps a MAP_SHARED|MAP_ANONYMOUS region of
its own, writes it and forks ``per_group`` workers, so that region is shared by one
group only.  Every process other than the leader then writes every page of the private
regions (copy-on-write gives it its own copy), maps and writes a private anonymous region
of its own, says it is ready, and blocks reading standard input.  All of them exit when
standard input reaches end of file, which happens when the benchmark closes the pipe or
dies, however it dies.

Adjacent anonymous regions alternate ``MADV_NOHUGEPAGE`` (different vm_flags) and file
pieces are mapped in an order whose offsets are not contiguous with their neighbours', so
the kernel cannot merge them: each stays one line of smaps.
"""

import mmap
import os
import select
import signal
import sys
import time

PAGE = mmap.PAGESIZE
NFILES = 4
FILE_PIECES = 6          # mappings per file
FILE_KIB = 1536          # size of each file
SHM_KIB = 8192
SHM_PIECES = 2
SHARED_ANON_KIB = 16384
GROUP_KIB = 512          # per group, shared by the group
PRIV_REGIONS = 12
PRIV_REGION_KIB = 32     # each process copies PRIV_REGIONS * PRIV_REGION_KIB on write
OWN_KIB = 128            # each process's own private region
READY_TIMEOUT = 120.0     # seconds for the processes to be ready, or 30 ms each where more (10,000 on a busy machine)
CHURN_SECONDS = 1.0      # an active worker allocates or frees about this often
CHURN_KIB = 256
CHURN_MAX = 4


def _ready_timeout(processes):
    return max(READY_TIMEOUT, 0.03 * processes)


def _touch(m, write):
    """Fault in every page of mapping ``m`` (write: dirty it, else just read it)."""
    n = len(m)
    if write:
        for off in range(0, n, PAGE):
            m[off] = 1
    else:
        total = 0
        for off in range(0, n, PAGE):
            total += m[off]
        return total


def _anon(kib, flags, nohuge):
    m = mmap.mmap(-1, kib * 1024, flags=flags | mmap.MAP_ANONYMOUS)
    if nohuge:
        m.madvise(mmap.MADV_NOHUGEPAGE)
    return m


def _child_main(ready_w, own_nohuge, private, active=False):
    """Copy the private regions, make one of our own, say ready, wait for EOF on stdin
    (an ``active`` one allocating and freeing meanwhile: _churn)."""
    for m in private:
        _touch(m, True)
    own = _anon(OWN_KIB, mmap.MAP_PRIVATE, own_nohuge)
    _touch(own, True)
    os.write(ready_w, b'.')
    os.close(ready_w)
    if active:
        _churn()
    else:
        _wait_eof()
    return own


def _churn():
    """Until EOF on stdin: every CHURN_SECONDS or so (at random, 0.5x to 1.5x), map and write
    a CHURN_KIB region, or unmap one, keeping up to CHURN_MAX: a process that allocates and
    frees, as a busy one does between two scrapes."""
    import random
    held = []
    while True:
        r, _, _ = select.select([0], [], [], CHURN_SECONDS * random.uniform(0.5, 1.5))
        if r:
            try:
                if not os.read(0, 4096):
                    return
            except OSError:
                return
            continue
        if held and (len(held) >= CHURN_MAX or random.random() < 0.5):
            held.pop(random.randrange(len(held))).close()
        else:
            m = _anon(CHURN_KIB, mmap.MAP_PRIVATE, False)
            _touch(m, True)
            held.append(m)


def _wait_eof():
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass


def _reap(pids):
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _fork(fn):
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            fn()
        except BaseException:  # the child must never return into the parent's code
            code = 1
        os._exit(code)
    return pid


def leader(groups, per_group, filedir, shm_path, active_every=0):
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the benchmark decides when we stop
    keep = []
    for i in range(NFILES):
        path = os.path.join(filedir, f'mapped-{i}.dat')
        with open(path, 'wb') as f:
            f.write(os.urandom(FILE_KIB * 1024))
        fd = os.open(path, os.O_RDONLY)
        piece = FILE_KIB * 1024 // FILE_PIECES
        for p in range(FILE_PIECES):
            m = mmap.mmap(fd, piece, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ, offset=p * piece)
            _touch(m, False)
            keep.append(m)
        os.close(fd)
    fd = os.open(shm_path, os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(fd, SHM_KIB * 1024)
    piece = SHM_KIB * 1024 // SHM_PIECES
    for p in range(SHM_PIECES):
        m = mmap.mmap(fd, piece, flags=mmap.MAP_SHARED, offset=p * piece)
        _touch(m, True)
        keep.append(m)
    os.close(fd)
    shared = _anon(SHARED_ANON_KIB, mmap.MAP_SHARED, False)
    _touch(shared, True)
    keep.append(shared)
    private = [_anon(PRIV_REGION_KIB, mmap.MAP_PRIVATE, i % 2) for i in range(PRIV_REGIONS)]
    for m in private:
        _touch(m, True)

    ready_r, ready_w = os.pipe()

    def group(g):
        os.close(ready_r)
        region = _anon(GROUP_KIB, mmap.MAP_SHARED, g % 2)
        _touch(region, True)
        kids = [_fork(lambda w=w: _child_main(ready_w, True, private,
                                              bool(active_every) and (g * per_group + w) % active_every == 0))
                for w in range(per_group)]
        _child_main(ready_w, False, private)
        _reap(kids)

    kids = [_fork(lambda g=g: group(g)) for g in range(groups)]
    os.close(ready_w)
    want = groups * (per_group + 1)
    got = 0
    deadline = time.monotonic() + _ready_timeout(want)
    while got < want:
        left = deadline - time.monotonic()
        r, _, _ = select.select([ready_r], [], [], max(left, 0))
        if not r:
            break
        chunk = os.read(ready_r, 4096)
        if not chunk:
            break
        got += len(chunk)
    sys.stdout.write(f'ready {got} {want}\n')
    sys.stdout.flush()
    _wait_eof()
    _reap(kids)
    # the benchmark removes these too; doing it here covers a benchmark killed by SIGKILL
    for path in [shm_path] + [os.path.join(filedir, f'mapped-{i}.dat') for i in range(NFILES)]:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    try:
        os.rmdir(filedir)
    except OSError:
        pass


# ------------------------------------------------------------------ parent side
# (imported only by the benchmark: the workload's own processes stay lean)

import contextlib  # noqa: E402

class Workload:
    """Handle on the running workload: ``leader_pid``, ``pids`` (every process of it)."""

    def __init__(self, proc, filedir, shm_path, groups, per_group):
        self.proc = proc
        self.leader_pid = proc.pid
        self.filedir = filedir
        self.shm_path = shm_path
        self.groups = groups
        self.per_group = per_group

    @property
    def pids(self):
        """Every live process in the workload's process group (pgid = leader pid)."""
        out = []
        for e in os.listdir('/proc'):
            if not e.isdigit():
                continue
            try:
                with open(f'/proc/{e}/stat', 'rb') as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(b')') + 2:].split()
            if int(fields[2]) == self.leader_pid:
                out.append(int(e))
        return sorted(out)

    def mapping_counts(self):
        counts = []
        for pid in self.pids:
            try:
                with open(f'/proc/{pid}/maps', 'rb') as f:
                    counts.append(f.read().count(b'\n'))
            except OSError:
                continue
        return counts

    def describe(self):
        counts = sorted(self.mapping_counts())
        n = len(counts)
        return dict(processes=n, maps_min=counts[0] if n else 0,
                    maps_median=counts[n // 2] if n else 0, maps_max=counts[-1] if n else 0,
                    shared_kib=NFILES * FILE_KIB + SHM_KIB + SHARED_ANON_KIB + self.groups * GROUP_KIB,
                    private_kib_each=PRIV_REGIONS * PRIV_REGION_KIB + OWN_KIB)


def _kill_group(proc):
    """Close stdin (everyone exits on EOF); SIGKILL the process group if that is slow."""
    import subprocess
    with contextlib.suppress(OSError):
        proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    # Workers may outlive the leader by a moment; kill whatever is left of the group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    for f in (proc.stdout, proc.stderr):
        if f is not None:
            f.close()


@contextlib.contextmanager
def running(groups=30, per_group=9, python=sys.executable, active_every=0):
    """Start the workload (``1 + groups * (per_group + 1)`` processes), yield a Workload, stop it.
    ``active_every``: every n-th worker allocates and frees memory all along (0: none).

    The processes run in a new session (their own process group), so a Ctrl-C at the
    terminal does not reach them; on leaving the block, normally or by an exception
    (KeyboardInterrupt included), the group is stopped and its files removed.
    """
    import shutil
    import subprocess
    import tempfile
    filedir = tempfile.mkdtemp(prefix='smem-bench-', dir='/var/tmp')
    shm_path = f'/dev/shm/smem-bench-{os.getpid()}'
    proc = None
    try:
        proc = subprocess.Popen(
            [python, '-I', '-S', os.path.abspath(__file__), 'leader',
             str(groups), str(per_group), filedir, shm_path, str(active_every)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, cwd='/')
        r, _, _ = select.select([proc.stdout], [], [], _ready_timeout(groups * (per_group + 1)) + 10)
        line = proc.stdout.readline().decode() if r else ''
        parts = line.split()
        if len(parts) != 3 or parts[0] != 'ready' or parts[1] != parts[2]:
            err = b''
            if proc.poll() is not None:
                err = proc.stderr.read()
            raise RuntimeError(f'workload did not become ready ({line.strip()!r}): '
                               f'{err.decode(errors="replace")}')
        yield Workload(proc, filedir, shm_path, groups, per_group)
    finally:
        if proc is not None:
            _kill_group(proc)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(shm_path)
        shutil.rmtree(filedir, ignore_errors=True)


if __name__ == '__main__':
    if len(sys.argv) in (6, 7) and sys.argv[1] == 'leader':
        leader(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6]) if len(sys.argv) == 7 else 0)
    else:
        sys.exit('usage: workload.py leader GROUPS PER_GROUP FILEDIR SHM_PATH [ACTIVE_EVERY]')
