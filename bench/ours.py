"""How ours is run: under which interpreter, from a frozen copy of the work tree's smem/, in
which environment (and the environment the peers run in)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

#: The work tree whose smem/ is benchmarked.
REPO = Path(__file__).resolve().parent.parent

#: The interpreter ours runs under (set by peers.find_peers).
OURS_PYTHON = sys.executable


def ours_argv(*args):
    return [OURS_PYTHON, '-m', 'smem', *args]


#: Where ours is imported from: a frozen copy of the work tree's smem/ (see snapshot_ours).
OURS_ROOT = REPO


def snapshot_ours(tmp, ref=None):
    """Copy smem/ (the work tree's, or commit ``ref``'s) into ``tmp``; run that copy all along.

    The benchmark takes minutes, and the code under test may be edited meanwhile; a
    frozen copy keeps every run of every section on one version.  Returns a digest of
    the copied sources, printed with the results so a table can be tied to the code.
    """
    import hashlib
    global OURS_ROOT
    dest = Path(tmp) / 'ours'
    if ref:
        dest.mkdir()
        archive = subprocess.run(['git', '-C', str(REPO), 'archive', ref, 'smem'], capture_output=True)
        if archive.returncode:
            sys.exit(f'bench: git archive {ref}: {archive.stderr.decode(errors="replace").strip()}')
        subprocess.run(['tar', 'x', '-C', str(dest)], input=archive.stdout, check=True)
    else:
        shutil.copytree(REPO / 'smem', dest / 'smem', ignore=shutil.ignore_patterns('__pycache__'))
    # Build the optional C smaps parser into the copy, as `pip install` does where a compiler is
    # found (setup.py); without it (no compiler, or a revision before it) ours runs pure Python.
    if (dest / 'smem' / 'parsers' / '_smaps.c').exists() and (REPO / 'setup.py').exists():
        shutil.copy(REPO / 'setup.py', dest / 'setup.py')
        subprocess.run([OURS_PYTHON, 'setup.py', '-q', 'build_ext', '--inplace'], cwd=dest,
                       capture_output=True)
        shutil.rmtree(dest / 'build', ignore_errors=True)
    # Byte-compile the copy as `pip install` does: otherwise every run would compile every
    # module again where PYTHONDONTWRITEBYTECODE is set (docs/benchmarks.md: what it costs a start).
    subprocess.run([sys.executable, '-m', 'compileall', '-q', str(dest / 'smem')], check=True)
    h = hashlib.sha256()
    for p in sorted((dest / 'smem').rglob('*')):
        if p.is_file() and '__pycache__' not in p.parts and p.suffix != '.so':
            h.update(str(p.relative_to(dest)).encode() + b'\0' + p.read_bytes())
    OURS_ROOT = dest
    return h.hexdigest()[:12]


def ours_env():
    env = {k: v for k, v in os.environ.items() if k not in ('COLUMNS', 'LINES', 'PYTHONPATH')}
    env['PYTHONPATH'] = str(OURS_ROOT)
    return env


def peer_env():
    return {k: v for k, v in os.environ.items() if k not in ('COLUMNS', 'LINES', 'PYTHONPATH')}
