"""The peers ours is measured against (smem 1.5, ps_mem, smemstat), found or installed, and the
facts of the machine and the run printed above the tables."""

import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import ours
from ours import REPO

SMEM15 = '/usr/bin/smem'
CACHE = Path(os.environ.get('SMEM_BENCH_CACHE', Path.home() / '.cache' / 'smem-bench'))


@dataclass
class Peers:
    smem15: str = None
    smem15_version: str = None
    ps_mem_python: str = None
    ps_mem_version: str = None
    smemstat: str = None
    smemstat_version: str = None
    missing: dict = field(default_factory=dict)


def _dpkg_version(pkg):
    r = subprocess.run(['dpkg-query', '-W', '-f', '${Version}', pkg], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None


def apt_install(pkg, log):
    if shutil.which('apt-get') is None or os.geteuid() != 0:
        return False
    log(f'  installing Debian package {pkg} ...')
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    r = subprocess.run(['apt-get', 'install', '-y', '-qq', pkg], capture_output=True, env=env)
    if r.returncode != 0:
        subprocess.run(['apt-get', 'update', '-qq'], capture_output=True, env=env)
        r = subprocess.run(['apt-get', 'install', '-y', '-qq', pkg], capture_output=True, env=env)
    return r.returncode == 0


def find_peers(install, log):
    p = Peers()
    # smem 1.5: Debian's /usr/bin/smem (not ours: ours is run from the work tree).
    if not _dpkg_version('smem') and install:
        apt_install('smem', log)
    if os.path.exists(SMEM15) and _dpkg_version('smem'):
        p.smem15, p.smem15_version = SMEM15, _dpkg_version('smem')
    else:
        p.missing['smem 1.5'] = 'Debian package smem not installed (/usr/bin/smem)'
    # smemstat
    path = shutil.which('smemstat')
    if path is None and install and apt_install('smemstat', log):
        path = shutil.which('smemstat')
    if path:
        p.smemstat, p.smemstat_version = path, _dpkg_version('smemstat') or '?'
    else:
        p.missing['smemstat'] = 'Debian package smemstat not installed'
    # ps_mem, from PyPI, in a private venv outside the work tree
    venv = CACHE / 'venv'
    py = venv / 'bin' / 'python'
    def ps_mem_version():
        r = subprocess.run([str(py), '-m', 'pip', 'show', 'ps_mem'], capture_output=True, text=True)
        m = re.search(r'^Version: (\S+)', r.stdout, re.M)
        return m.group(1) if m else None
    def has_our_dependencies():
        return py.exists() and subprocess.run(
            [str(py), '-c', 'import click, tabulate, numpy, matplotlib, prometheus_client'],
            capture_output=True).returncode == 0
    if not (py.exists() and ps_mem_version() and has_our_dependencies()) and install:
        log(f'  installing ps_mem and our dependencies from PyPI into {venv} ...')
        subprocess.run([sys.executable, '-m', 'venv', str(venv)], capture_output=True)
        subprocess.run([str(py), '-m', 'pip', 'install', '-q', '--disable-pip-version-check',
                        'ps_mem', 'click', 'tabulate', 'numpy', 'matplotlib', 'prometheus_client'],
                       capture_output=True)
    if py.exists() and ps_mem_version():
        p.ps_mem_python, p.ps_mem_version = str(py), ps_mem_version()
    else:
        p.missing['ps_mem'] = f'PyPI package ps_mem not installable into {venv}'
    # (matplotlib too: the start-up check that text reports do not import it means nothing
    # where it is not installed.)
    # Ours runs under the same venv interpreter as ps_mem, as a user's `pip install` into a
    # venv (or pipx) runs it: the base interpreter's site-packages may hold .pth files that
    # import modules at every start (docs/benchmarks.md), which neither tool
    # should be charged for.  Without the venv, the benchmark's own interpreter.
    ours.OURS_PYTHON = str(py) if has_our_dependencies() else sys.executable
    return p


# ------------------------------------------------------------------ facts

def read_or_empty(path):
    try:
        return Path(path).read_text()
    except OSError:
        return ''


def machine_facts(peers):
    mem = re.search(r'MemTotal:\s+(\d+)', read_or_empty('/proc/meminfo'))
    model = re.search(r'^model name\s*:\s*(.*)$', read_or_empty('/proc/cpuinfo'), re.M)
    head = subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'],
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(['git', '-C', str(REPO), 'status', '--porcelain', 'smem'],
                           capture_output=True, text=True).stdout.strip()
    py15 = subprocess.run(['/usr/bin/python3', '--version'], capture_output=True, text=True).stdout.strip()
    return {
        'date': datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
        'kernel': platform.release(),
        'CPUs': f'{os.cpu_count()} ({model.group(1).strip() if model else "?"})',
        'memory': f'{int(mem.group(1)) / 1048576:.1f} GiB' if mem else '?',
        'Python (ours, ps_mem)': f'{platform.python_version()} ({ours.OURS_PYTHON})',
        'Python (smem 1.5)': py15 or 'missing',
        'smem (ours)': f'work tree {REPO} at {head or "?"}{" + uncommitted changes in smem/" if dirty else " (smem/ clean)"}',
        'smem 1.5': peers.smem15_version or 'missing',
        'ps_mem': peers.ps_mem_version or 'missing',
        'smemstat': peers.smemstat_version or 'missing',
        'load average at start': read_or_empty('/proc/loadavg').split(' ')[:3],
    }
