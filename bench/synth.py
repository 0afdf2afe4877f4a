"""Synthetic large captures for the scaling section (layout: docs/capture-format.md).

Both kinds are built from real files of this machine, copied, so the parser sees
what a kernel writes; only their number grows:

* :func:`many_processes` -- N processes, each a copy of one real process's smaps,
  smaps_rollup, cmdline, stat and status (pids renumbered);
* :func:`many_mappings` -- one process whose smaps repeats the mapping entries of a
  real smaps, with fresh non-overlapping addresses, until it has M mappings.
"""

import io
import os
import re
import tarfile
import time

_HEADER = re.compile(rb'^([0-9a-f]+)-([0-9a-f]+) ', re.M)


def read_process(pid):
    """The capture members of a live process, as bytes: smaps, smaps_rollup, cmdline, stat, status."""
    out = {}
    for name in ('smaps', 'smaps_rollup', 'cmdline', 'stat', 'status'):
        try:
            with open(f'/proc/{pid}/{name}', 'rb') as f:
                out[name] = f.read()
        except FileNotFoundError:
            if name != 'smaps_rollup':
                raise
    return out


def _common(tar, now):
    def add(name, data, mode=0o444):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mtime = now
        info.mode = mode
        tar.addfile(info, io.BytesIO(data))

    for name in ('meminfo', 'version'):
        with open(f'/proc/{name}', 'rb') as f:
            add(name, f.read())
    with open('/etc/passwd', 'rb') as f:
        add('passwd', f.read())
    u = os.uname()
    add('capture-info', (f'hostname={u.nodename}\ntime={time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))}\n'
                         f'epoch={now}\npagesize={os.sysconf("SC_PAGESIZE")}\nkernel={u.release}\n'
                         f'machine={u.machine}\ntool=smem bench/synth.py 1\n').encode())
    return add


def _add_process(tar, add, pid, files, now, uid=0):
    d = tarfile.TarInfo(str(pid))
    d.type = tarfile.DIRTYPE
    d.mode = 0o555
    d.mtime = now
    d.uid = d.gid = uid
    d.uname = d.gname = 'root' if uid == 0 else ''
    tar.addfile(d)
    for name, data in files.items():
        if name == 'stat':
            data = str(pid).encode() + data[data.index(b' '):]
        elif name == 'status':
            data = re.sub(rb'^(Pid:\s+)\d+', rb'\g<1>' + str(pid).encode(), data, flags=re.M)
        add(f'{pid}/{name}', data)


def many_processes(path, template, n, first_pid=1000, compresslevel=1, smemcap=False):
    """Write a .tgz capture of ``n`` copies of process ``template`` (from :func:`read_process`).

    ``smemcap=True``: what C smemcap writes, each process's smaps, cmdline and stat only
    (no smaps_rollup: a reader parses every mapping).
    """
    if smemcap:
        template = {k: v for k, v in template.items() if k in ('smaps', 'cmdline', 'stat')}
    now = int(time.time())
    with tarfile.open(path, 'w:gz', compresslevel=compresslevel) as tar:
        add = _common(tar, now)
        for i in range(n):
            _add_process(tar, add, first_pid + i, template, now)


def _entries(smaps):
    """Split a smaps file into (start, end, rest-of-entry) per mapping."""
    heads = list(_HEADER.finditer(smaps))
    out = []
    for i, m in enumerate(heads):
        stop = heads[i + 1].start() if i + 1 < len(heads) else len(smaps)
        out.append((int(m.group(1), 16), int(m.group(2), 16), smaps[m.end():stop]))
    return out


_FIELD = re.compile(rb'^([A-Za-z_]+):\s+(\d+) kB$', re.M)


def _rollup(template, smaps, start, end, copies):
    """A smaps_rollup for ``smaps``: the template's lines, each amount the sum over the mappings.

    Fields only the rollup has (Pss_Anon, Pss_File, Pss_Shmem) are the template's
    scaled by ``copies``, the number of times the template's mappings were repeated.
    """
    sums = {}
    for key, val in _FIELD.findall(smaps):
        sums[key] = sums.get(key, 0) + int(val)
    lines = [b'%08x-%08x ---p 00000000 00:00 0                          [rollup]' % (start, end)]
    for line in template.splitlines()[1:]:
        f = _FIELD.match(line)
        if not f:
            lines.append(line)
            continue
        key = f.group(1)
        val = sums[key] if key in sums else round(int(f.group(2)) * copies)
        lines.append(b'%s%8d kB' % ((key + b':').ljust(16), val))
    return b'\n'.join(lines) + b'\n'


def many_mappings(path, template, m, pid=1000, compresslevel=1):
    """Write a .tgz capture of one process whose smaps has ``m`` mappings copied from ``template``'s.

    Entries are laid out one after another from a low address with a one-page gap,
    so they do not overlap and keep their sizes; [vsyscall] and the like (entries the
    kernel prints above the user address range) are left out of the copies.
    """
    entries = [e for e in _entries(template['smaps']) if e[1] < 1 << 47]
    chunks = []
    addr = 0x10000
    for i in range(m):
        start, end, rest = entries[i % len(entries)]
        size = end - start
        chunks.append(b'%012x-%012x ' % (addr, addr + size) + rest)
        addr += size + 4096
    files = dict(template)
    files['smaps'] = b''.join(chunks)
    if 'smaps_rollup' in files:
        files['smaps_rollup'] = _rollup(files['smaps_rollup'], files['smaps'], 0x10000, addr - 4096,
                                        m / len(entries))
    now = int(time.time())
    with tarfile.open(path, 'w:gz', compresslevel=compresslevel) as tar:
        add = _common(tar, now)
        _add_process(tar, add, pid, files, now)
