"""Real processes with known memory sharing, for tests and for recording captures.

Each helper is a context manager that starts real processes (this file run as a
script, so their command lines say what they are), waits until every page is
where it should be, yields the pids and the figures the kernel must report, and
always stops the processes on exit.

What is known exactly, and why (Documentation/filesystems/proc.rst, "smaps"):

* Rss of a mapping counts the pages mapped into this process's page tables.
* Pss divides each page by the number of processes mapping it.  The kernel sums
  ``(PAGE_SIZE << 12) // mapcount`` per page and prints ``sum >> 12 >> 10`` kB
  (fs/proc/task_mmu.c, PSS_SHIFT = 12), so :func:`expected_pss_kib` is exact;
  it equals ``kib // mapcount`` whenever the division is exact.
* Private_Clean + Private_Dirty (USS) of a mapping counts pages mapped only by
  this process.

Only the regions a helper creates are known exactly: a process's totals also
hold the interpreter's own memory, which no test can predict.  Regions are
reported by address (``start``/``end`` as in the smaps header), and anonymous
private regions get ``MADV_NOHUGEPAGE`` so they are one VMA of small pages that
never merges with a neighbour.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import mmap
import os
import pwd
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass, field

PAGE_SIZE = mmap.PAGESIZE
PAGE_KIB = PAGE_SIZE // 1024
MADV_PAGEOUT = 21  # include/uapi/asm-generic/mman-common.h, Linux 5.4+
PR_SET_DUMPABLE = 4
PR_SET_MM = 35
PR_SET_MM_MAP = 14
_SPEC_ENV = 'SMEM_WORKLOAD_SPEC'
_THIS = os.path.abspath(__file__)
_DIR, _SCRIPT = os.path.split(_THIS)
READY_TIMEOUT = 60.0


def expected_pss_kib(kib: int, mapcount: int) -> int:
    """Pss in kB the kernel prints for ``kib`` of pages each mapped ``mapcount`` times."""
    pages = kib // PAGE_KIB
    return (pages * ((PAGE_SIZE << 12) // mapcount)) >> 12 >> 10


@dataclass(frozen=True)
class Region:
    """One mapping this workload created, and what smaps must say about it in one process."""
    start: int          # first address, as in the smaps header
    end: int            # end address (exclusive)
    rss_kib: int
    pss_kib: int
    uss_kib: int | None  # None: not exactly known (e.g. shared pages' clean/dirty split)
    swap_kib: int | None = None

    @property
    def size_kib(self) -> int:
        return (self.end - self.start) // 1024


@dataclass
class Workload:
    """Running processes: ``pids`` in start order, ``regions[pid][name]`` -> Region."""
    pids: list[int]
    regions: dict[int, dict[str, Region]] = field(default_factory=dict)
    users: dict[int, str] = field(default_factory=dict)
    info: dict = field(default_factory=dict)


# ---------------------------------------------------------------- parent side

def _libc():
    return ctypes.CDLL(None, use_errno=True)


@contextlib.contextmanager
def _run(role: str, spec: dict, argv: list | None = None, executable=None,
         user: str | None = None, launch=None):
    """Start this file as ``role``; yield its ready message; stop it on exit.

    ``launch``: argv -> the argv that runs it elsewhere (a PID namespace's nsenter), which
    execs the interpreter itself; ``msg['pid']`` is then the launcher's."""
    # argv[0] 'python3' and a relative script keep smem's 27-character command column telling
    cmd = argv if argv is not None else ['python3', _SCRIPT, role]
    executable = executable or sys.executable
    if launch is not None:
        cmd, executable = launch([executable, _THIS, *cmd[2:]]), None
    env = {k: v for k, v in os.environ.items() if k not in ('COLUMNS', 'LINES')}
    env[_SPEC_ENV] = json.dumps(dict(spec, role=role, script=_THIS))
    kwargs = {}
    if user is not None:
        pw = pwd.getpwnam(user)
        kwargs.update(user=pw.pw_uid, group=pw.pw_gid, extra_groups=[])
    proc = subprocess.Popen(cmd, executable=executable, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, start_new_session=True, cwd=_DIR, **kwargs)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT)
        line = proc.stdout.readline() if ready else b''
        if not line:
            proc.kill()
            err = proc.stderr.read().decode(errors='replace')
            raise RuntimeError(f'workload {role} did not start: {err}')
        msg = json.loads(line)
        msg['pid'] = proc.pid
        yield msg
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    """Close the process's stdin (it and its children exit on EOF); kill its group if slow."""
    with contextlib.suppress(OSError):
        proc.stdin.close()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for f in (proc.stdout, proc.stderr):
        f.close()


def _regions(raw: dict) -> dict[int, dict[str, Region]]:
    return {int(pid): {name: Region(**r) for name, r in regs.items()} for pid, regs in raw.items()}


@contextlib.contextmanager
def forked_workers(shared_kib: int, private_kib: int, nworkers: int,
                   shared_path: str | None = None, comm: str = 'smem-fw', launch=None):
    """A leader and ``nworkers`` forked children sharing one MAP_SHARED region.

    The leader maps ``shared_kib`` MAP_SHARED|MAP_ANONYMOUS (shown in smaps as
    ``/dev/zero (deleted)``; pass ``shared_path`` to back it by that tmpfs file
    instead, which shows as the path) and ``private_kib`` MAP_PRIVATE|MAP_ANONYMOUS,
    writes every page of both, then forks.  Each child reads every shared page
    (shared mappings' page tables are not copied by fork) and writes every
    private page, so copy-on-write gives it its own copy; once all children
    have written, the leader's originals are mapped once too.

    Exactly known, in every one of the ``nworkers + 1`` processes:
      shared:  Rss = shared_kib, Pss = expected_pss_kib(shared_kib, nworkers + 1)
               (= shared_kib / (nworkers + 1) when exact), USS = 0
      private: Rss = Pss = USS = private_kib
    Yields a Workload: pids[0] is the leader, regions[pid]['shared'|'private'].
    ``launch`` as for _run: started in a PID namespace, the pids are the namespace's.
    """
    spec = dict(shared_kib=shared_kib, private_kib=private_kib, nworkers=nworkers,
                shared_path=shared_path, comm=comm)
    with _run('forked-workers', spec, launch=launch) as msg:
        yield Workload(pids=msg['pids'], regions=_regions(msg['regions']), info=msg)


@contextlib.contextmanager
def shm_server(kib: int, users=('root', 'daemon', 'nobody'), name: str | None = None,
               comm: str = 'smem-shm'):
    """A server that creates a POSIX shared memory segment and one client per entry of ``users``.

    The server creates ``/dev/shm/<name>`` (mode 0644), maps it MAP_SHARED and
    writes every page.  Each client is forked from the server, drops to its user
    (setgroups/setgid/setuid, then PR_SET_DUMPABLE so /proc/PID stays owned by
    that user), opens the file, maps it read-only MAP_SHARED and reads every page.

    Exactly known, in the server and every client (mapcount = 1 + len(users)):
      segment: Rss = kib, Pss = expected_pss_kib(kib, 1 + len(users)), USS = 0.
    Yields a Workload: pids[0] is the server; users[pid] is each process's user;
    info['path'] is the segment.  The segment is unlinked on exit.
    """
    name = name or f'smem-test-{os.getpid()}-{id(users):x}'
    path = f'/dev/shm/{name}'
    spec = dict(kib=kib, path=path, users=list(users), comm=comm)
    try:
        with _run('shm-server', spec) as msg:
            wl = Workload(pids=msg['pids'], regions=_regions(msg['regions']), info=msg)
            wl.users = {int(k): v for k, v in msg['users'].items()}
            wl.info['path'] = path
            yield wl
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def swap_active() -> bool:
    """True if /proc/swaps lists any swap area."""
    with open('/proc/swaps') as f:
        return len(f.read().splitlines()) > 1


@contextlib.contextmanager
def _swap(enable: bool):
    """Make sure swap is on; if ``enable`` and root and no swap, add a temporary swapfile."""
    if swap_active() or not enable or os.geteuid() != 0:
        yield None
        return
    fd, path = tempfile.mkstemp(prefix='smem-test-swap-', dir='/var/tmp')
    os.close(fd)
    added = False
    try:
        os.chmod(path, 0o600)
        with open(path, 'wb') as f:
            f.write(b'\0' * (64 << 20))
        subprocess.run(['mkswap', path], check=True, capture_output=True)
        subprocess.run(['swapon', path], check=True, capture_output=True)
        added = True
        yield path
    finally:
        if added:
            subprocess.run(['swapoff', path], check=False, capture_output=True)
        os.unlink(path)


@contextlib.contextmanager
def swapped_process(kib: int, enable_swap: bool = False, comm: str = 'smem-swapped'):
    """A process whose ``kib`` of private anonymous memory was pushed to swap with MADV_PAGEOUT.

    Swap must be active; with ``enable_swap=True`` and root, a 64 MiB swapfile
    under /var/tmp is added for the duration (and removed after).  The process
    writes every page, calls madvise(MADV_PAGEOUT), and reads back its own
    smaps.  Yields a Workload with info['swapped'] (True if the region's smaps
    Swap > 0) and regions[pid]['anon'] holding the Rss/Swap the process saw
    (the kernel decides how much it pages out, so only Swap > 0 is promised).
    """
    with _swap(enable_swap) as added:
        with _run('swapped', dict(kib=kib, comm=comm)) as msg:
            wl = Workload(pids=msg['pids'], regions=_regions(msg['regions']), info=msg)
            wl.info['swapfile_added'] = added
            wl.info['swapped'] = bool(wl.regions[wl.pids[0]]['anon'].swap_kib)
            yield wl


@contextlib.contextmanager
def odd_cmdline_process(argv, comm: str | bytes | None = None, argv0=None,
                        exe_link_name: str | bytes | None = None, anon_kib: int = 0,
                        files=(), empty_cmdline: bool = False, zombies: int = 0,
                        user: str | None = None, proctitle: str | bytes | None = None):
    """A blocked process with the command line ``python3 workload.py hold *argv``.

    ``argv`` items may be str or bytes (bytes go to the kernel verbatim, so a
    cmdline can hold bytes that are not UTF-8).  Options:
      argv0          replaces argv[0] (the interpreter still runs);
      exe_link_name  execs the interpreter through a symlink of this name in a
                     temporary directory (the kernel sets comm to its first 15
                     bytes); argv[0] is then the symlink's path;
      comm           written to /proc/self/comm after start (may contain ')' or spaces);
      anon_kib       private anonymous memory written page by page (region 'anon');
      files          (path, kib, unlink) tuples: create the file, map it
                     MAP_SHARED, read every page, then unlink it if asked
                     (smaps then shows "PATH (deleted)"); path may be bytes;
      empty_cmdline  PR_SET_MM_ARG_END = arg_start, so /proc/PID/cmdline is
                     empty although the process has memory;
      zombies        fork this many children that exit and are never reaped;
      proctitle      rewrite the argv area like setproctitle(3), so cmdline is
                     this title and one NUL (argv must be longer than it);
      user           run as this user.
    Yields a Workload; info['cmdline'] is the exact /proc/PID/cmdline (bytes),
    info['zombies'] the zombie pids.
    """
    tmp = tempfile.mkdtemp(prefix='smem-odd-')
    try:
        os.chmod(tmp, 0o755)
        # another user may not reach this interpreter (e.g. under /root): use the system one
        python = sys.executable if user is None else (shutil.which('python3', path='/usr/bin:/bin')
                                                      or sys.executable)
        executable = None
        if exe_link_name is not None:
            link = os.path.join(os.fsencode(tmp), os.fsencode(exe_link_name))
            os.symlink(os.fsencode(python), link)
            executable = link
        files_spec = [(os.fsencode(p).hex(), k, bool(u)) for p, k, u in files]
        spec = dict(comm=os.fsencode(comm).hex() if comm is not None else None, anon_kib=anon_kib,
                    files=files_spec, empty_cmdline=empty_cmdline, zombies=zombies,
                    proctitle=os.fsencode(proctitle).hex() if proctitle else None)
        if argv0 is None:
            argv0 = executable if executable is not None else 'python3'
        cmd = [argv0, _SCRIPT, 'hold', *argv]
        with _run('hold', spec, argv=cmd, executable=executable or python,
                  user=user) as msg:
            wl = Workload(pids=msg['pids'], regions=_regions(msg['regions']), info=msg)
            wl.info['cmdline'] = bytes.fromhex(msg['cmdline'])
            if user:
                wl.users = {wl.pids[0]: user}
            yield wl
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class Obedient:
    """A running process that grows or maps a file when told (:func:`obedient_process`)."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.pid = proc.pid

    def _order(self, order: dict) -> None:
        self.proc.stdin.write((json.dumps(order) + '\n').encode())
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], READY_TIMEOUT)
        if not ready or json.loads(self.proc.stdout.readline()) != {'done': True}:
            raise RuntimeError(f'pid {self.pid} did not do {order}')

    def grow(self, kib: int) -> None:
        """Map and write ``kib`` more of private memory."""
        self._order({'grow': kib})

    def map_file(self, path: str) -> None:
        """Map the file at ``path`` (MAP_SHARED, read-only) and read every page of it."""
        self._order({'map': os.fsencode(path).hex()})

    def retitle(self, title: bytes) -> None:
        """Write ``title`` over its command line, as setproctitle(3) does (its name stays)."""
        self._order({'title': title.hex()})

    def stop(self) -> None:
        """Exit (and be reaped) now."""
        _stop(self.proc)


@contextlib.contextmanager
def obedient_process(comm: str = 'smem-obedient'):
    """A process that grows or maps files when told, and exits when stopped or on leaving."""
    env = {k: v for k, v in os.environ.items() if k not in ('COLUMNS', 'LINES')}
    env[_SPEC_ENV] = json.dumps(dict(role='obedient', comm=comm, script=_THIS))
    proc = subprocess.Popen(['python3', _SCRIPT, 'obedient'], executable=sys.executable, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True,
                            cwd=_DIR)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT)
        if not ready or not proc.stdout.readline():
            proc.kill()
            raise RuntimeError(f'obedient process did not start: {proc.stderr.read().decode(errors="replace")}')
        yield Obedient(proc)
    finally:
        if proc.returncode is None:
            _stop(proc)


@contextlib.contextmanager
def next_pid_above(floor: int = 100000):
    """Make the next forked pid exceed ``floor`` (root only); restore pid_max after.

    Raises /proc/sys/kernel/pid_max if needed and writes ``floor`` to
    /proc/sys/kernel/ns_last_pid (Documentation/admin-guide/sysctl/kernel.rst).
    Another process may fork first, so check the pid you get.
    """
    with open('/proc/sys/kernel/pid_max') as f:
        old_max = int(f.read())
    try:
        if old_max <= floor + 1000:
            with open('/proc/sys/kernel/pid_max', 'w') as f:
                f.write(str(floor + 100000))
        with open('/proc/sys/kernel/ns_last_pid', 'w') as f:
            f.write(str(floor))
        yield
    finally:
        with open('/proc/sys/kernel/pid_max', 'w') as f:
            f.write(str(old_max))


# ---------------------------------------------------------------- child side

def _set_comm(comm: bytes | str | None) -> None:
    if comm is None:
        return
    if isinstance(comm, str):
        comm = comm.encode()
    with open('/proc/self/comm', 'wb') as f:
        f.write(comm[:15])


def _addr(m: mmap.mmap, ino: int | None = None) -> int:
    """Start address of ``m``; read-only mappings are found by inode in /proc/self/maps."""
    if ino is None:
        return ctypes.addressof(ctypes.c_char.from_buffer(m))
    with open('/proc/self/maps', 'rb') as f:
        for line in f:
            fields = line.split()
            if int(fields[4]) == ino and int(fields[2], 16) == 0:
                return int(fields[0].split(b'-')[0], 16)
    raise RuntimeError(f'no mapping of inode {ino}')


def _touch(m: mmap.mmap, write: bool, byte: int = 1) -> None:
    view = memoryview(m)
    total = 0
    for off in range(0, len(m), PAGE_SIZE):
        if write:
            view[off] = byte
        else:
            total += view[off]
    view.release()


def _anon(kib: int, shared: bool) -> mmap.mmap:
    flags = (mmap.MAP_SHARED if shared else mmap.MAP_PRIVATE) | mmap.MAP_ANONYMOUS
    m = mmap.mmap(-1, kib * 1024, flags=flags)
    if not shared:
        m.madvise(mmap.MADV_NOHUGEPAGE)
    return m


def _own_smaps_region(start: int) -> dict[str, int]:
    """Fields (kB) of this process's smaps entry starting at ``start``."""
    out, inside = {}, False
    with open('/proc/self/smaps', 'rb') as f:
        for line in f:
            head = line.split(b' ', 1)[0]
            if b'-' in head and b':' not in head:
                if inside:
                    break
                inside = int(head.split(b'-')[0], 16) == start
            elif inside and line.rstrip().endswith(b'kB'):
                k, v = line.split()[:2]
                out[k[:-1].decode()] = int(v)
    return out


def _region(m: mmap.mmap, rss: int, pss: int, uss, swap=None, ino=None) -> dict:
    a = _addr(m, ino)
    return dict(start=a, end=a + len(m), rss_kib=rss, pss_kib=pss, uss_kib=uss, swap_kib=swap)


def _ready(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + '\n')
    sys.stdout.flush()


def _wait_stdin() -> None:
    """Block until the parent closes our stdin."""
    while os.read(0, 4096):
        pass


def _child_block(rfd: int) -> None:
    """In a forked child: block until the leader's pipe closes, then leave without cleanup."""
    try:
        while os.read(rfd, 4096):
            pass
    finally:
        os._exit(0)


@contextlib.contextmanager
def _child_guard():
    """In a forked child: never return into the parent's code, whatever happens."""
    try:
        yield
    except BaseException:
        traceback.print_exc()
        os._exit(1)
    os._exit(0)


def _forked_workers(spec: dict) -> None:
    n, skib, pkib = spec['nworkers'], spec['shared_kib'], spec['private_kib']
    _set_comm(spec['comm'])
    if spec['shared_path']:
        fd = os.open(spec['shared_path'], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.ftruncate(fd, skib * 1024)
        shared = mmap.mmap(fd, skib * 1024, flags=mmap.MAP_SHARED)
        os.close(fd)
    else:
        shared = _anon(skib, shared=True)
    private = _anon(pkib, shared=False)
    _touch(shared, write=True)
    _touch(private, write=True, byte=2)
    block_r, block_w = os.pipe()
    ready_r, ready_w = os.pipe()
    kids = []
    for i in range(n):
        pid = os.fork()
        if pid == 0:
            with _child_guard():
                os.close(block_w)
                os.close(ready_r)
                _set_comm(spec['comm'] + '-w')
                _touch(shared, write=False)
                _touch(private, write=True, byte=3 + i)
                os.write(ready_w, b'.')
                os.close(ready_w)
                _child_block(block_r)
        kids.append(pid)
    os.close(block_r)
    os.close(ready_w)
    got = b''
    while len(got) < n:
        chunk = os.read(ready_r, n)
        if not chunk:
            raise RuntimeError('a worker died before it was ready')
        got += chunk
    pids = [os.getpid()] + kids
    sh = _region(shared, skib, expected_pss_kib(skib, n + 1), 0)
    pr = _region(private, pkib, pkib, pkib)
    # fork keeps addresses, so every process has both regions at the same place
    _ready(dict(pids=pids, regions={p: dict(shared=sh, private=pr) for p in pids}))
    _wait_stdin()
    os.close(block_w)
    for pid in kids:
        os.waitpid(pid, 0)
    if spec['shared_path']:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(spec['shared_path'])


def _shm_server(spec: dict) -> None:
    kib, path, users = spec['kib'], spec['path'], spec['users']
    _set_comm(spec['comm'])
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    os.fchmod(fd, 0o644)
    os.ftruncate(fd, kib * 1024)
    seg = mmap.mmap(fd, kib * 1024, flags=mmap.MAP_SHARED)
    os.close(fd)
    _touch(seg, write=True)
    block_r, block_w = os.pipe()
    ready_r, ready_w = os.pipe()
    kids, who = [], {os.getpid(): pwd.getpwuid(os.getuid()).pw_name}
    for i, user in enumerate(users):
        pw = pwd.getpwnam(user)
        pid = os.fork()
        if pid == 0:
            with _child_guard():
                os.close(block_w)
                os.close(ready_r)
                seg.close()  # drop the inherited mapping; map it again as the client's user
                _set_comm(spec['comm'] + '-c')
                os.setgroups([])
                os.setgid(pw.pw_gid)
                os.setuid(pw.pw_uid)
                # a credential change makes the task non-dumpable and /proc/PID root-owned
                _libc().prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
                cfd = os.open(path, os.O_RDONLY)
                mine = mmap.mmap(cfd, kib * 1024, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
                ino = os.fstat(cfd).st_ino
                os.close(cfd)
                _touch(mine, write=False)
                os.write(ready_w, json.dumps([os.getpid(), _addr(mine, ino)]).encode() + b'\n')
                os.close(ready_w)
                _child_block(block_r)
        kids.append(pid)
    os.close(block_r)
    os.close(ready_w)
    with os.fdopen(ready_r, 'rb') as f:
        lines = [f.readline() for _ in kids]
    if not all(lines):
        raise RuntimeError('a client died before it was ready')
    addrs = dict(json.loads(line) for line in lines)
    pss = expected_pss_kib(kib, 1 + len(users))
    regions = {os.getpid(): dict(segment=_region(seg, kib, pss, 0))}
    for pid, user in zip(kids, users):
        a = addrs[pid]
        regions[pid] = dict(segment=dict(start=a, end=a + kib * 1024, rss_kib=kib,
                                         pss_kib=pss, uss_kib=0, swap_kib=None))
        who[pid] = user
    _ready(dict(pids=[os.getpid()] + kids, regions=regions, users=who))
    _wait_stdin()
    os.close(block_w)
    for pid in kids:
        os.waitpid(pid, 0)


def _swapped(spec: dict) -> None:
    _set_comm(spec['comm'])
    m = _anon(spec['kib'], shared=False)
    _touch(m, write=True, byte=7)
    m.madvise(MADV_PAGEOUT)
    fields = _own_smaps_region(_addr(m))
    r = _region(m, fields.get('Rss', 0), fields.get('Pss', 0),
                fields.get('Private_Clean', 0) + fields.get('Private_Dirty', 0),
                fields.get('Swap', 0))
    _ready(dict(pids=[os.getpid()], regions={os.getpid(): dict(anon=r)}))
    _wait_stdin()


class _PrctlMmMap(ctypes.Structure):
    """struct prctl_mm_map, include/uapi/linux/prctl.h."""
    _fields_ = [(n, ctypes.c_uint64) for n in (
        'start_code', 'end_code', 'start_data', 'end_data', 'start_brk', 'brk',
        'start_stack', 'arg_start', 'arg_end', 'env_start', 'env_end')] + [
        ('auxv', ctypes.c_void_p), ('auxv_size', ctypes.c_uint32), ('exe_fd', ctypes.c_uint32)]


def _empty_cmdline() -> None:
    """Make /proc/self/cmdline empty: PR_SET_MM_MAP with arg_end = arg_start.

    PR_SET_MM_ARG_END alone needs CAP_SYS_RESOURCE, which containers often
    drop; PR_SET_MM_MAP (kernel/sys.c, prctl_set_mm_map) does not, but sets
    every field at once, so the current values are passed back unchanged.
    """
    with open('/proc/self/stat', 'rb') as f:
        stat = f.read()
    v = stat[stat.rindex(b')') + 2:].split()  # v[0] is field 3 (state)
    fld = lambda n: int(v[n - 3])  # noqa: E731 - proc(5) field numbers
    libc = _libc()
    libc.sbrk.restype = ctypes.c_void_p
    libc.sbrk.argtypes = [ctypes.c_long]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p,
                           ctypes.c_ulong, ctypes.c_ulong]
    m = _PrctlMmMap(start_code=fld(26), end_code=fld(27), start_data=fld(45), end_data=fld(46),
                    start_brk=fld(47), start_stack=fld(28), arg_start=fld(48),
                    arg_end=fld(48), env_start=fld(50), env_end=fld(51),
                    auxv=None, auxv_size=0, exe_fd=0xFFFFFFFF)
    m.brk = libc.sbrk(0)
    if libc.prctl(PR_SET_MM, PR_SET_MM_MAP, ctypes.addressof(m), ctypes.sizeof(m), 0) != 0:
        raise OSError(ctypes.get_errno(), 'prctl(PR_SET_MM_MAP)')


def _set_proctitle(title: bytes) -> None:
    """Overwrite our argv area as setproctitle(3) does: title, a NUL, then non-NUL filler.

    The last byte of the area is then not NUL, so the kernel reads cmdline up to
    and including the first NUL only (fs/proc/base.c, get_mm_proctitle): one
    string with spaces and no inner NULs, as nginx or postgres workers show.
    """
    with open('/proc/self/stat', 'rb') as f:
        stat = f.read()
    v = stat[stat.rindex(b')') + 2:].split()
    start, end = int(v[48 - 3]), int(v[49 - 3])
    if len(title) + 2 > end - start:
        raise ValueError('proctitle longer than the argument area')
    area = title + b'\0' + b' ' * (end - start - len(title) - 1)
    ctypes.memmove(start, area, len(area))


def _hold(spec: dict) -> None:
    _set_comm(bytes.fromhex(spec['comm']) if spec['comm'] else None)
    regions, keep = {}, []
    if spec['anon_kib']:
        m = _anon(spec['anon_kib'], shared=False)
        _touch(m, write=True, byte=5)
        keep.append(m)
        k = spec['anon_kib']
        regions['anon'] = _region(m, k, k, k)
    for i, (hexpath, kib, unlink) in enumerate(spec['files']):
        path = bytes.fromhex(hexpath)
        with open(path, 'wb') as f:
            f.write(bytes([65 + i]) * (kib * 1024))
        fd = os.open(path, os.O_RDONLY)
        m = mmap.mmap(fd, kib * 1024, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        ino = os.fstat(fd).st_ino
        os.close(fd)
        _touch(m, write=False)
        keep.append(m)
        if unlink:
            os.unlink(path)
        regions[f'file{i}'] = _region(m, kib, kib, None, ino=ino)
    zombies = []
    for _ in range(spec['zombies']):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        zombies.append(pid)
    if spec['empty_cmdline']:
        _empty_cmdline()
    if spec['proctitle']:
        _set_proctitle(bytes.fromhex(spec['proctitle']))
    with open('/proc/self/cmdline', 'rb') as f:
        cmdline = f.read()
    me = os.getpid()
    _ready(dict(pids=[me], regions={me: regions} if regions else {}, cmdline=cmdline.hex(),
                zombies=zombies))
    _wait_stdin()


def _obedient(spec: dict) -> None:
    """Do what each line of stdin says (JSON: {"grow": KiB} maps and writes that much private
    memory, {"map": hex path} maps a file MAP_SHARED and reads every page, {"title": hex} sets
    the command line), answering each with a line; exit at end of file."""
    _set_comm(spec['comm'])
    keep = []
    _ready(dict(pids=[os.getpid()]))
    for line in sys.stdin.buffer:
        order = json.loads(line)
        if 'title' in order:
            _set_proctitle(bytes.fromhex(order['title']))
            m = None
        elif 'grow' in order:
            m = _anon(order['grow'], shared=False)
            _touch(m, write=True)
        else:
            fd = os.open(bytes.fromhex(order['map']), os.O_RDONLY)
            m = mmap.mmap(fd, os.fstat(fd).st_size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
            os.close(fd)
            _touch(m, write=False)
        keep.append(m)
        sys.stdout.write('{"done": true}\n')
        sys.stdout.flush()


_ROLES = {'forked-workers': _forked_workers, 'shm-server': _shm_server,
          'swapped': _swapped, 'hold': _hold, 'obedient': _obedient}


def _main() -> None:
    spec = json.loads(os.environ.pop(_SPEC_ENV))
    _ROLES[spec['role']](spec)


if __name__ == '__main__':
    _main()
