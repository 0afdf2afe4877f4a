"""Captures read in one pass (smem.sources.archive_stream.ArchiveStream.each_process): the same bytes as
the held reading, the extracted directory and the serial pure-Python path, and a peak memory
that does not grow with the capture.

The held reading is forced by writing the same members out of order (a process's members
apart), which the streamed reader hands over to it; the captures are made here from a recorded
one (tests/fixtures/captures/faithful.tar.gz).
"""

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile

import pytest

from conftest import FIXTURES, TESTS, run_smem
from smem.sources import open_source
from smem.sources.base import NeedHeld

RECORDED = FIXTURES / "captures" / "faithful.tar.gz"

ARGS = [[], ["-m"], ["-u"], ["-m", "-U", "root"], ["-P", "bash|sh", "-m", "-t", "-c", "map count pids pss_anon pss"],
        ["-U", "root", "-M", "lib", "-c", "pid user command swap uss pss rss maps"]]


def _members(capture):
    with tarfile.open(capture) as t:
        return [(m, t.extractfile(m).read() if m.isreg() else None) for m in t.getmembers()]


def _pid_of(member):
    head = member.name.partition("/")[0]
    return head if head.isdigit() else None


def _write(path, members):
    with tarfile.open(path, "w") as out:
        for m, data in members:
            out.addfile(m, io.BytesIO(data) if data is not None else None)
    return path


def _smemcap_like(members):
    """No smaps_rollup, no status, no user names in the directories; passwd last."""
    kept = []
    for m, data in members:
        if m.name.endswith(("/smaps_rollup", "/status")) or m.name == "passwd":
            continue
        m = tarfile.TarInfo(m.name) if m.isdir() else m
        if m.name.isdigit():
            original = next(o for o, _ in members if o.name == m.name)
            m.type, m.mode, m.uid = tarfile.DIRTYPE, 0o555, original.uid
        kept.append((m, data))
    return kept + [(m, d) for m, d in members if m.name == "passwd"]


def _apart(members):
    """The same members with each process's split in two: every pid's first half, then the rest."""
    globals_ = [x for x in members if _pid_of(x[0]) is None]
    by_pid = {}
    for x in members:
        if _pid_of(x[0]) is not None:
            by_pid.setdefault(_pid_of(x[0]), []).append(x)
    first = [x for group in by_pid.values() for x in group[:len(group) // 2]]
    rest = [x for group in by_pid.values() for x in group[len(group) // 2:]]
    return globals_[:2] + first + rest + globals_[2:]


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("streamed")
    recorded = _members(RECORDED)
    made = {}
    for kind, members in (("recorded", recorded), ("smemcap", _smemcap_like(recorded))):
        made[kind] = (_write(tmp / f"{kind}.tar", members), _write(tmp / f"{kind}-apart.tar", _apart(members)))
    directory = tmp / "dir" / "proc"
    directory.mkdir(parents=True)
    with tarfile.open(RECORDED) as t:
        t.extractall(directory, numeric_owner=True, filter="fully_trusted")
    return made, directory.parent


@pytest.fixture(scope="module")
def serial(captures):
    """{(kind, capture, args): what smem -S capture args gives, read serially (SMEM_JOBS=1)}: each
    capture both ways (in one pass, and its members apart: held), run once for both tests below."""
    made, _ = captures
    return {(kind, capture, tuple(args)): run_smem("-S", capture, *args, env={"SMEM_JOBS": "1"}, check=True)
            for kind, pair in made.items() for capture in pair for args in ARGS}


def _pure_python_serial(paths):
    """{(path, args): (stdout, stderr)} from one interpreter with the pure-Python parser, serial."""
    code = ("import json, sys; sys.path.insert(0, sys.argv[2]); from conftest import run_smem\n"
            "out = {}\n"
            "for path, args in json.loads(sys.argv[1]):\n"
            "    r = run_smem('-S', path, *args, check=True)\n"
            "    out[json.dumps([path, args])] = [r.stdout.decode('latin-1'), r.stderr.decode('latin-1')]\n"
            "print(json.dumps(out))")
    wanted = [[str(p), a] for p in paths for a in ARGS]
    env = dict(os.environ, SMEM_PURE_PYTHON="1", SMEM_JOBS="1", PYTHONPATH=str(TESTS.parent))
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(wanted), str(TESTS)], capture_output=True, env=env,
                          cwd=TESTS.parent, timeout=120, check=True)
    return {tuple(json.loads(k)[:1]) + (tuple(json.loads(k)[1]),): tuple(v)
            for k, v in json.loads(proc.stdout).items()}


@pytest.mark.uses("cpu")
def test_streamed_held_directory_and_pure_python_give_the_same_bytes(captures, serial):
    made, directory = captures
    for streamed, apart in made.values():  # what each capture exercises: one pass, or the held fallback
        one_pass, held = open_source(str(streamed), streamed=True), open_source(str(apart), streamed=True)
        try:
            assert len(list(one_pass.each_process())) > 50
            with pytest.raises(NeedHeld):
                list(held.each_process())
        finally:
            one_pass.close()
            held.close()
    reference = _pure_python_serial([apart for _, apart in made.values()])
    for kind, (streamed, apart) in made.items():
        for args in ARGS:
            held, one_pass = serial[kind, apart, tuple(args)], serial[kind, streamed, tuple(args)]
            assert one_pass.stdout == held.stdout, (kind, args)
            assert one_pass.stderr == held.stderr, (kind, args)
            assert held.stdout.decode("latin-1") == reference[(str(apart), tuple(args))][0], (kind, args)
            if kind == "recorded":
                assert run_smem("-S", directory, *args, check=True).stdout == held.stdout, args
            assert held.stdout.strip()


_FORKED = []  # pids of workers forked while a test below listens (os.register_at_fork)


def _note_fork():
    if _FORKED and _FORKED[0] == "listening":
        with open(_FORKED[1], "a") as f:
            f.write(f"{os.getpid()}\n")


os.register_at_fork(after_in_child=_note_fork)


@pytest.mark.uses("cpu")
def test_workers_walk_a_streamed_capture_each_and_give_the_same_bytes(captures, serial, tmp_path):
    """SMEM_JOBS=3: one worker (MAX_WALKERS), walking the archive from its start and loading
    every other process (passwd last in the smemcap-like one: -U waits for it in both walkers);
    none where the report keeps mappings (-m, -M); a capture read whole (its members apart)
    gives the same bytes too."""
    made, _ = captures
    forks = tmp_path / "forks"
    for kind, (streamed, apart) in made.items():
        for capture in (streamed, apart):
            for args in ARGS:
                one = serial[kind, capture, tuple(args)]
                _FORKED[:] = ["listening", forks]
                try:
                    parallel = run_smem("-S", capture, *args, env={"SMEM_JOBS": "3"}, check=True)
                finally:
                    _FORKED[:] = []
                assert parallel.stdout == one.stdout, (kind, capture, args)
                assert parallel.stderr == one.stderr, (kind, capture, args)
                if capture == streamed:
                    walkers = 0 if {"-m", "-M"} & set(args) else 1
                    assert (len(forks.read_text().split()) if forks.exists() else 0) == walkers, (kind, args)
                forks.unlink(missing_ok=True)


@pytest.mark.uses("cpu")
def test_a_capture_cut_short_says_so_with_workers_as_without(captures, tmp_path):
    made, _ = captures
    whole = made["recorded"][0].read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(gzip.compress(whole)[:len(gzip.compress(whole)) * 2 // 3])
    serial = run_smem("-S", cut, env={"SMEM_JOBS": "1"})
    parallel = run_smem("-S", cut, env={"SMEM_JOBS": "2"})
    assert serial.returncode != 0 and b"truncated or corrupt" in serial.stderr
    assert (parallel.returncode, parallel.stdout, parallel.stderr) == (serial.returncode, serial.stdout, serial.stderr)


@pytest.mark.uses("cpu")
def test_a_replayed_archive_is_walked_apart_from_the_first(captures):
    """Two walks of one capture file (a process and a worker's) do not move each other's place."""
    made, _ = captures
    source = open_source(str(made["recorded"][0]), streamed=True)
    try:
        first = source.each_process()
        pids = [next(first)[0] for _ in range(10)]
        again = [pid for pid, _ in source.replayed().each_process()]
        pids += [pid for pid, _ in first]
        assert pids == again and len(pids) > 50
    finally:
        source.close()


def _peak_kib(*argv):
    """ru_maxrss (KiB) of ``python -m smem ARGV`` run as its own process."""
    proc = subprocess.Popen([sys.executable, "-m", "smem", *map(str, argv)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=TESTS.parent,
                            env=dict(os.environ, PYTHONPATH=str(TESTS.parent), SMEM_JOBS="1"))
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, proc.stderr.read()
    proc.stderr.close()
    return usage.ru_maxrss


def _copies(path, template, files, n):
    """A capture of ``n`` copies of one recorded process (without smaps_rollup: read from smaps)."""
    with tarfile.open(path, "w") as out:
        for m, data in template:
            out.addfile(m, io.BytesIO(data) if data is not None else None)
        for pid in range(1000, 1000 + n):
            d = tarfile.TarInfo(str(pid))
            d.type, d.mode = tarfile.DIRTYPE, 0o555
            out.addfile(d)
            for leaf, data in files.items():
                info = tarfile.TarInfo(f"{pid}/{leaf}")
                info.size = len(data)
                out.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.uses("cpu")
def test_peak_memory_does_not_grow_with_the_capture(tmp_path):
    """Four times the processes (150 more copies of a 118 KB smaps: 17 MB more to hold, which
    added 25 MiB to the peak before captures were streamed) add less than 4 MiB to the peak of
    the process and mapping views: the rows, not the capture."""
    recorded = _members(RECORDED)
    template = [(m, d) for m, d in recorded if m.name in ("meminfo", "version", "passwd")]
    files = {m.name.partition("/")[2]: d for m, d in recorded
             if m.name.partition("/")[0] == "7895" and m.name.endswith(("/smaps", "/cmdline", "/stat"))}
    small = _copies(tmp_path / "small.tar", template, files, 50)
    large = _copies(tmp_path / "large.tar", template, files, 200)
    for args in ([], ["-m"]):
        growth = _peak_kib("-S", large, *args) - _peak_kib("-S", small, *args)
        assert growth < 4 << 10, (args, f"{growth >> 10} MiB more for 150 more processes")
