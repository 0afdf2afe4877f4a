"""Real processes with known memory sharing, for tests and for recording captures.

Each helper is a context manager that starts real processes (this file run as a
script, so their command lines say what they are), waits until every page is
where it should be, yields the pids and the figures the kernel must report, and
always stops the processes on exit.  What the processes do inside themselves
is in workload_roles.py.

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
from dataclasses import dataclass, field

PAGE_SIZE = mmap.PAGESIZE
PAGE_KIB = PAGE_SIZE // 1024
SPEC_ENV = 'SMEM_WORKLOAD_SPEC'  # the role and its figures, for workload_roles.main
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
    env[SPEC_ENV] = json.dumps(dict(spec, role=role, script=_THIS))
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
def family_named(prefix: str, shared_kib: int = 4096, private_kib: int = 1024, nworkers: int = 3):
    """forked_workers under a name of this test process's own (``prefix`` and its pid), which -P
    finds and nothing else of the machine matches: yields (the Workload, that name)."""
    comm = f"{prefix}{os.getpid() % 10000}"
    with forked_workers(shared_kib, private_kib, nworkers, comm=comm) as workload:
        yield workload, comm


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

    def free(self) -> None:
        """Unmap the latest private memory it grew."""
        self._order({'free': True})

    def mergeable(self, kib: int, seed: int | None = None) -> None:
        """Map ``kib`` of private pages and give them to KSM (MADV_MERGEABLE): one page repeated,
        or with ``seed``, pages each other's processes given the same seed have too."""
        self._order({'mergeable': kib, **({} if seed is None else {'seed': seed})})

    def map_file(self, path: str) -> None:
        """Map the file at ``path`` (MAP_SHARED, read-only) and read every page of it."""
        self._order({'map': os.fsencode(path).hex()})

    def retitle(self, title: bytes) -> None:
        """Write ``title`` over its command line, as setproctitle(3) does (its name stays)."""
        self._order({'title': title.hex()})

    def become(self, uid: int) -> None:
        """setgid and setuid to ``uid``, as a server dropping root does (its name stays; root only)."""
        self._order({'uid': uid})

    def stop(self) -> None:
        """Exit (and be reaped) now."""
        _stop(self.proc)


@contextlib.contextmanager
def obedient_process(comm: str = 'smem-obedient'):
    """A process that grows or maps files when told, and exits when stopped or on leaving."""
    env = {k: v for k, v in os.environ.items() if k not in ('COLUMNS', 'LINES')}
    env[SPEC_ENV] = json.dumps(dict(role='obedient', comm=comm, script=_THIS))
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
def ksm_running():
    """ksmd merging (/sys/kernel/mm/ksm/run 1) for the block, as it was after; skips where the
    kernel has no KSM or this is no root.  A test using it is marked ``xdist_group("ksm")``:
    ksmd is the machine's, and another test stopping it midway leaves pages unmerged."""
    import pytest
    control, pace = '/sys/kernel/mm/ksm/run', '/sys/kernel/mm/ksm/pages_to_scan'
    if os.geteuid() != 0 or not os.path.exists(control) or not hasattr(mmap, 'MADV_MERGEABLE'):
        pytest.skip('KSM needs root and CONFIG_KSM')
    with open(control) as f:
        was = f.read().strip()
    with open(pace) as f:
        pace_was = f.read().strip()
    try:
        # ten times the default 100 pages a wake-up: the tests wait on its merging, not its pace
        with open(pace, 'w') as f:
            f.write('1000')
        with open(control, 'w') as f:
            f.write('1')
        yield
    finally:
        with open(control, 'w') as f:
            f.write(was)
        with open(pace, 'w') as f:
            f.write(pace_was)


def ksm_merged(pid: int | str, pages: int, seconds: float = 20.0) -> int:
    """Wait until KSM merged ``pages`` of process ``pid`` (ksmd scans 100 pages each 20 ms by
    default, 1,000 in ksm_running: well under a second for a few MiB); its merged pages, or a skip
    after ``seconds``."""
    import time
    import pytest
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(f'/proc/{pid}/ksm_merging_pages') as f:
            merging = int(f.read())
        if merging >= pages:
            return merging
        time.sleep(0.1)
    pytest.skip('ksmd did not merge the pages')


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


if __name__ == '__main__':
    # the processes run this file, so their command lines say workload.py; what they do is there
    from workload_roles import main
    main()
