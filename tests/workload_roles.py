"""What each workload process does inside itself: the child side of tests/workload.py.

tests/workload.py runs itself as a script (so the command lines smem shows say
``workload.py``) and hands over to :func:`main` here, which maps and touches the
pages of the role the parent asked for (in ``SMEM_WORKLOAD_SPEC``), prints one
JSON line with the pids and the regions' known figures, then waits for the
parent to close its stdin.  Kept apart from the parent side so that each file
owns one side of the conversation.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import mmap
import os
import pwd
import random
import sys
import traceback

from workload import PAGE_SIZE, SPEC_ENV, expected_pss_kib

MADV_PAGEOUT = 21  # include/uapi/asm-generic/mman-common.h, Linux 5.4+
PR_SET_DUMPABLE = 4
PR_SET_MM = 35
PR_SET_MM_MAP = 14


def _libc():
    return ctypes.CDLL(None, use_errno=True)


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
    memory, {"free": true} unmaps the latest of those, {"mergeable": KiB} maps that
    much of one page repeated (with "seed", of pages random.Random(seed) makes) and gives them to
    KSM (MADV_MERGEABLE), {"map": hex path} maps a file MAP_SHARED and reads every page, {"title": hex} sets
    the command line, {"uid": N} sets its uid and gid), answering each with a line; exit at end of file."""
    _set_comm(spec['comm'])
    keep, grown = [], []
    _ready(dict(pids=[os.getpid()]))
    for line in sys.stdin.buffer:
        order = json.loads(line)
        if 'title' in order:
            _set_proctitle(bytes.fromhex(order['title']))
            m = None
        elif 'uid' in order:
            os.setgid(order['uid'])
            os.setuid(order['uid'])
            m = None
        elif 'grow' in order:
            m = _anon(order['grow'], shared=False)
            _touch(m, write=True)
            grown.append(m)
        elif 'free' in order:
            grown.pop().close()
            m = None
        elif 'mergeable' in order:  # pages given to KSM: one page repeated, or seed's pages
            m = _anon(order['mergeable'], shared=False)
            seed = order.get('seed')
            m.write(b'smem' * (len(m) // 4) if seed is None else random.Random(seed).randbytes(len(m)))
            m.madvise(mmap.MADV_MERGEABLE)
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


def main() -> None:
    spec = json.loads(os.environ.pop(SPEC_ENV))
    _ROLES[spec['role']](spec)
