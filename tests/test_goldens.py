"""Our smem prints what smem 1.5 prints, byte for byte, on recorded captures.

The captures (tests/fixtures/captures/*.tar.gz) are real /proc copies of a
machine running processes with known sharing; the goldens beside them are
smem 1.5's output for each case (tests/fixtures/README.md, record_captures.py).
Only cases whose manifest kind is "identical" bind us: the "smem15-bug" ones
record where smem 1.5 is wrong and are for reference.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import run_smem

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / 'fixtures'
GOLDENS = FIXTURES / 'goldens'
SMEM15 = '/usr/bin/smem'


def _manifests() -> list[tuple[str, Path, dict]]:
    out = []
    for d in sorted(p for p in GOLDENS.iterdir() if (p / 'manifest.json').is_file()):
        out.append((d.name, d, json.loads((d / 'manifest.json').read_text())))
    return out


MANIFESTS = _manifests()


def _cases(kind: str) -> list:
    params = []
    for name, d, manifest in MANIFESTS:
        capture = FIXTURES / manifest['capture']
        for case in manifest['cases']:
            if case['kind'] == kind:
                cid = f"{name}-{case['id']}-{' '.join(case['args']) or 'default'}"
                params.append(pytest.param(capture, d, case, id=cid))
    return params


def run_ours(capture: Path, args: list[str]) -> subprocess.CompletedProcess:
    """Our command line, in this process (conftest.run_smem: stdout and stderr as bytes, no COLUMNS).

    smem 1.5's -a asks stty for the terminal and, with none, assumes 80 columns; off a terminal
    we cut nothing (README), so its -a output is ours on a terminal 80 wide.
    """
    return run_smem('-S', capture, *args, env={'COLUMNS': '80'} if '-a' in args else None)


def _diff(expected: bytes, got: bytes) -> str:
    a = expected.decode('utf-8', 'backslashreplace').splitlines(keepends=True)
    b = got.decode('utf-8', 'backslashreplace').splitlines(keepends=True)
    return ''.join(list(difflib.unified_diff(a, b, 'smem 1.5', 'ours', n=1))[:60])


# What smem 1.5 cannot read: what -w uses to find installed RAM and the kernel image, and
# the kernel's smaps_rollup, which the process and user views use where it will do.
SIZING_MEMBERS = ('iomem', 'dmesg', 'sys/')


def _smem15_reads(name: str) -> bool:
    return not (name.startswith(SIZING_MEMBERS) or name.endswith('/smaps_rollup'))


@pytest.fixture(scope='session')
def smem15_inputs(tmp_path_factory):
    """Each capture without the members smem 1.5 cannot read: the inputs it had (byte-identical then).

    Written as a plain tar: each of the hundred and fifty reports reads it whole, and gunzipping
    it every time was a tenth of their work (that every compression reads alike is test_sources')."""
    made = {}

    def strip(capture: Path) -> Path:
        if capture not in made:
            out = tmp_path_factory.mktemp('smem15-inputs') / capture.name.replace('.tar.gz', '.tar')
            with tarfile.open(capture) as tin, tarfile.open(out, 'w') as tout:
                for m in tin:
                    if _smem15_reads(m.name):
                        tout.addfile(m, tin.extractfile(m) if m.isreg() else None)
            made[capture] = out
        return made[capture]
    return strip


@pytest.mark.parametrize('capture,golden_dir,case', _cases('identical'))
def test_matches_smem15(smem15_inputs, capture: Path, golden_dir: Path, case: dict) -> None:
    expected = (golden_dir / case['files']['stdout']).read_bytes()
    p = run_ours(smem15_inputs(capture), case['args'])
    assert p.stdout == expected, (
        f"stdout differs from smem 1.5 for {case['args']}\n{_diff(expected, p.stdout)}"
        f"\nstderr: {p.stderr.decode(errors='replace')[-2000:]}")
    assert p.returncode == case['status'], p.stderr.decode(errors='replace')[-2000:]


@pytest.mark.parametrize('name,golden_dir,manifest', MANIFESTS, ids=[m[0] for m in MANIFESTS])
def test_goldens_belong_to_capture(name: str, golden_dir: Path, manifest: dict) -> None:
    """Goldens recorded from another version of the capture would test nothing."""
    capture = FIXTURES / manifest['capture']
    assert hashlib.sha256(capture.read_bytes()).hexdigest() == manifest['capture_sha256']
    for case in manifest['cases']:
        for f in case['files'].values():
            assert (golden_dir / f).is_file(), f


# ------------------------------------------------------- goldens still smem 1.5's

def _owner_dependent(args: list[str]) -> bool:
    """Whether output shows or filters by process owner (uid or name)."""
    if '-w' in args or '-m' in args and '-U' not in args:
        return False
    if '-u' in args or '-U' in args:
        return True
    cols = args[args.index('-c') + 1].split() if '-c' in args else ['user']
    sort = args[args.index('-s') + 1] if '-s' in args else None
    return 'user' in cols or sort == 'user'


def _recheck_cases() -> list:
    """A few identical cases per view whose output does not hang on the local user table."""
    picked = []
    for p in _cases('identical'):
        capture, d, case = p.values
        if not d.name == 'faithful' or case.get('uses_names', True):
            continue
        args = case['args']
        view = next((v for v in ('-m', '-u', '-w') if v in args), '')
        if sum(1 for q in picked if q[0] == view) < 3:
            picked.append((view, p))
    return [p for _, p in picked]


@pytest.fixture(scope='module')
def extracted(tmp_path_factory) -> dict:
    """Captures extracted into DIR/proc, the only form smem 1.5 reads."""
    roots = {}
    for name, _, manifest in MANIFESTS:
        root = tmp_path_factory.mktemp(name)
        with tarfile.open(FIXTURES / manifest['capture']) as tar:
            kw = {'filter': 'tar'} if hasattr(tarfile, 'tar_filter') else {}
            tar.extractall(root / 'proc', numeric_owner=True, **kw)
        roots[name] = root
    return roots


@pytest.mark.uses("cpu")
@pytest.mark.skipif(not os.path.exists(SMEM15), reason='smem 1.5 (/usr/bin/smem) not installed')
@pytest.mark.parametrize('capture,golden_dir,case', _recheck_cases())
def test_goldens_are_still_smem15s(extracted, capture: Path, golden_dir: Path, case: dict) -> None:
    if _owner_dependent(case['args']) and os.geteuid() != 0:
        pytest.skip('owners survive extraction only as root')
    env = {k: v for k, v in os.environ.items()
           if k not in ('COLUMNS', 'LINES') and not k.startswith(('PYTHON', 'LC_'))}
    env['LANG'] = 'C.UTF-8'
    p = subprocess.run([SMEM15, '-S', str(extracted[golden_dir.name]), *case['args']],
                       stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=300)
    expected = (golden_dir / case['files']['stdout']).read_bytes()
    assert p.stdout == expected, _diff(expected, p.stdout)
    assert p.returncode == case['status']
