"""The C smaps parser (smem/parsers/_smaps*.c) gives what the pure-Python one gives.

Both run on every smaps and smaps_rollup in tests/fixtures (the captures' members
included) and ../shared/realproc, on hand-made quirks, and on thousands of
corrupted copies of recorded files: same mappings (header line, name, non-UTF-8
bytes as surrogate escapes), same counters (absent keys absent, in the same
order), same errors with the same messages.

Where the extension is not built (a source checkout run with PYTHONPATH), the
test builds it into a temporary directory with setuptools; it is skipped only
where there is no C compiler or no Python headers.
"""

import importlib.util
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile

import pytest

from conftest import FIXTURES, REALPROC, TESTS, realproc_files, run_smem, run_smem_process
from smem.model import uss_of
from smem.parsers import smaps

KERNEL_KEYS = ("Size", "KernelPageSize", "MMUPageSize", "Rss", "Pss", "Pss_Dirty", "Pss_Anon", "Pss_File",
               "Pss_Shmem", "Shared_Clean", "Shared_Dirty", "Private_Clean", "Private_Dirty", "Referenced",
               "Anonymous", "KSM", "LazyFree", "AnonHugePages", "ShmemPmdMapped", "FilePmdMapped",
               "Shared_Hugetlb", "Private_Hugetlb", "Swap", "SwapPss", "Locked", "THPeligible", "VmFlags")
KEY_SETS = [
    frozenset(KERNEL_KEYS + ("NotACounter",)),
    frozenset({"Pss", "Private_Clean", "Private_Dirty"}),  # the default process/mapping columns
    frozenset({"Rss"}),
    frozenset(),
    frozenset(KERNEL_KEYS + tuple(f"Unknown{i}" for i in range(50))),  # more than the C walk's 64: searched
]


@pytest.fixture(scope="module")
def c_module(tmp_path_factory):
    if smaps._c is not None:
        return smaps._c
    try:
        from smem.parsers import _smaps
        return _smaps
    except ImportError:
        pass
    compiler = sysconfig.get_config_var("CC") or "cc"
    if not shutil.which(compiler.split()[0]) or not os.path.exists(
            os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        pytest.skip("no C compiler or Python headers: the extension cannot be built here")
    out = tmp_path_factory.mktemp("build")
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(out),
                    "--build-temp", str(out / "temp")], cwd=TESTS.parent, check=True, capture_output=True)
    (built,) = (out / "smem" / "parsers").glob("_smaps*.so")
    spec = importlib.util.spec_from_file_location("smem.parsers._smaps", built)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outcome(call):
    try:
        return call()
    except Exception as e:  # noqa: BLE001 - the error itself is what is compared
        return ("raised", type(e), str(e))


LOOKED_UP = KERNEL_KEYS + ("Nope", "Pss")


#: On a big file (BIG below) mapping i looks up the kernel keys i, i + SHARE, ... (each key on a
#: quarter of the file's mappings, hundreds to thousands, each mapping on some keys), then "Nope"
#: and "Pss" (again, from the cache, where its share held it); every key on every mapping of the
#: smaller files, the quirks and the corrupted copies.
SHARE = 4


def _lazy(mappings, share=1):
    # keys looked up first (Counters._find, in C or Python), then everything listed (Counters._all)
    found = []
    for i, m in enumerate(mappings):
        keys = LOOKED_UP if share == 1 else KERNEL_KEYS[i % share::share] + ("Nope", "Pss")
        try:
            found.append([m.get(key) for key in keys])
        except Exception:  # noqa: BLE001 - then key by key, each error compared (a found value is kept: the same)
            found.append([_outcome(lambda: m.get(key)) for key in keys])
    return found, [(m._header, m.name, _outcome(lambda: list(m.counters.items())), m.attributes)
                   for m in mappings]


def _summed(result):
    totals, had_pss, count = result
    return list(totals.items()), had_pss, count  # (the order too)


def _by_name(result):
    rows, totals, count, had_pss = result
    return had_pss, count, list(totals.items()), [(name, index, mappings, list(sums.items()), values, shared)
                                                  for name, index, mappings, sums, values, shared in rows]  # (the order too)


#: fields worked out by name: the page's (sums of one or two counters), one of a counter no key
#: set keeps, one of none, one naming a counter twice
FIELDS = (("Swap",), ("Private_Clean", "Private_Dirty"), ("Pss",), ("Rss",), ("SwapPss",), ("NotKept",), (),
          ("Rss", "Rss", "Size"))


def _kept(result):
    mappings, had_pss = result
    return had_pss, [(m._header, m.name, list(m.counters.items())) for m in mappings]


#: Files larger than this (whole smaps of big processes: a second of pure-Python parsing each)
#: are compared on the lazy parse (a SHARE of the keys looked up on each mapping), every key kept
#: and the default columns' keys, and summed (alone and by name) on the default columns' keys;
#: every key set, with and without a wider set of counters also checked, runs on the quirks, the
#: captures' members, the smaller recorded files and the 1,500 corrupted copies, where the
#: parsers' handling of keys is what differs.
BIG = 64 * 1024


def _compare(c_module, data, monkeypatch):
    """Every entry point, Python then C, on ``data``; returns how many mappings the Python parse found."""
    big = len(data) > BIG
    cases = [("lazy", lambda: _lazy(smaps._parse(data), SHARE if big else 1))]
    first = _outcome(lambda: smaps._parse_python(data))
    if isinstance(first, list) and first:
        cases.append(("keys of the first mapping", lambda: _kept(smaps._parse_kept(data, frozenset(first[0].counters)))))
    for keys in (KEY_SETS[0], KEY_SETS[1]) if big else KEY_SETS:
        cases.append((sorted(keys), lambda keys=keys: _kept(smaps._parse_kept(data, keys))))
        if not big:
            cases.append((sorted(keys), lambda keys=keys: _kept(smaps._parse_kept(data, keys, keys | {"Rss", "Size"}))))
    lib = re.compile(r"lib|heap|\(deleted\)").search
    cases.append(("-M", lambda: _kept(smaps._parse_kept(data, KEY_SETS[1], None, lib))))
    for keys in (KEY_SETS[1],) if big else KEY_SETS:  # summed, no mapping made
        cases.append((f"sum {sorted(keys)}", lambda keys=keys: _summed(smaps.sum_smaps_kept(data, keys))))
    cases.append(("sum without Pss", lambda: _summed(smaps.sum_smaps_kept(data, KEY_SETS[1], {"Rss", "Size"}))))
    for keys in (KEY_SETS[1],) if big else KEY_SETS:  # summed by name, the page's figures worked out
        cases.append((f"by name {sorted(keys)}", lambda keys=keys: _by_name(smaps.sum_smaps_by_name(data, keys, None, FIELDS))))
    cases.append(("by name, no field", lambda: _by_name(smaps.sum_smaps_by_name(data, KEY_SETS[1]))))
    cases.append(("by name without Pss", lambda: _by_name(smaps.sum_smaps_by_name(data, KEY_SETS[1], {"Rss", "Size"}, FIELDS))))
    python = {"_parse": smaps._parse_python, "_parse_kept": smaps._parse_kept_python, "_find_in": smaps._find_python,
              "_sum_kept": smaps._sum_kept_python, "_sum_by_name": smaps._sum_by_name_python}
    c = {"_c": c_module, "_parse": smaps._parse_c, "_parse_kept": smaps._parse_kept_c, "_find_in": c_module.find,
         "_sum_kept": smaps._sum_kept_c, "_sum_by_name": smaps._sum_by_name_c}
    for name in c:  # put back when the test ends; switched below with a plain setattr, as often as needed
        monkeypatch.setattr(smaps, name, getattr(smaps, name))
    for what, call in cases:
        for name, value in python.items():
            setattr(smaps, name, value)
        want = _outcome(call)
        for name, value in c.items():
            setattr(smaps, name, value)
        got = _outcome(call)
        assert got == want, (what, data[:200])
    return len(first) if isinstance(first, list) else 0


def _recorded():
    files = [p for p in FIXTURES.rglob("*") if p.is_file() and "smaps" in p.name]
    for name in ("smaps", "smaps_rollup", "smaps_short", "smaps_rollup_from_test_cpp"):
        files += realproc_files(name)
    return files


def _capture_members():
    members = []
    for capture in sorted((FIXTURES / "captures").glob("*.tar.gz")):
        with tarfile.open(capture) as tar:
            for m in tar:
                if m.isreg() and m.name.rsplit("/", 1)[-1].startswith("smaps"):
                    members.append((f"{capture.name}:{m.name}", tar.extractfile(m).read()))
    return members


RECORDED = _recorded()


def test_there_is_recorded_data_to_compare():
    assert len(_capture_members()) >= 20
    if not REALPROC.is_dir():
        pytest.skip("../shared/realproc is not available")
    assert len(RECORDED) >= 20


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("path", RECORDED, ids=str)
def test_c_and_python_agree_on_every_recorded_smaps(c_module, monkeypatch, path):
    data = path.read_bytes()
    found = _compare(c_module, data, monkeypatch)
    assert found or not data.strip()
    # the sums by name (in whichever parser is in use) add up to the sums over the mappings
    rows, totals, count, _ = smaps.sum_smaps_by_name(data, KEY_SETS[1], None, FIELDS)
    assert count == found == sum(row[2] for row in rows)
    assert totals == smaps.sum_smaps_kept(data, KEY_SETS[1])[0]
    for name, _, _, sums, values, _ in rows:
        assert values[1] == uss_of(sums)  # (None where neither counter is there)
        assert values[2] == sums.get("Pss") and values[5:7] == (None, None)


@pytest.mark.uses("cpu")
def test_c_and_python_agree_on_every_captured_smaps(c_module, monkeypatch):
    # each distinct text once: the captures hold empty smaps (kernel threads) and processes of
    # one program alike to the byte, in faithful.tar.gz and again in quirks.tar.gz
    for data in dict.fromkeys(data for _, data in _capture_members()):
        _compare(c_module, data, monkeypatch)


QUIRKS = [
    b"",
    b"\n",
    b"garbage before\n00400000-00401000 r-xp 00000000 08:01 12 /bin/x\nRss: 4 kB\n",
    b"\n00400000-00401000 r-xp 00000000 08:01 12 /bin/x\nRss: 4 kB",  # leading newline, no final one
    b"00400000-00401000 r-xp 00000000 08:01 12 /opt/caf\xe9/bin \xff(deleted)\nRss:  4 kB\n",
    b"00400000-00401000 r-xp 00000000 08:01 12    name with  spaces  \r\nRss: 4 kB\r\nPss: 2 kB\r\n",
    b"00400000-00401000 r-xp 00000000 08:01 12\nRss: 4 kB\n",                    # anonymous, no space
    b"00400000-00401000 r-xp 00000000 08:01 12 \r\r\nRss: 4 kB\n",                # a name of carriage returns
    b"00400000-00401000\tr-xp\t00000000\t08:01\t12\t/tab/sep\nRss:\t4\tkB\n",
    b"00400000-00401000 r-xp 0000zz00 08:01 12 /bad/offset\nRss: 4 kB\n",
    b"00400000-00401000 r-xp 00000000 08:01 1x /bad/inode\nRss: 4 kB\n",
    b"00400000-00401000 r-xp 00000000\nRss: 4 kB\n",                              # too few fields
    b"00400000-00401000 r-xp 00000000 08:01 12 /a\nRss: 4 kB\n0-1 r 0 0 x /b\n",  # the second header bad
    b"00400000-00401000 r-xp 00000000 08:01 12 /a\nRss: 1x kB\nPss: 2 kB\n",      # a garbled value
    b"00400000-00401000 r-xp 00000000 08:01 12 /a\nRss: kB\nPss: +2 kB\nSize: 1_000 kB\n",
    b"00400000-00401000 r-xp 00000000 08:01 12 /a\nRss: 123456789012345678901234 kB\nPss: 000012 kB\n",
    b"00400000-00401000 r-xp 00000000 08:01 12 /a\nRss: 999999999999999999 kB\nPss: -3 kB\n",
    # two counters that fit a C integer and whose sum does not
    b"00400000-00401000 r-xp 00000000 08:01 12 /a\nRss: 9000000000000000000 kB\nPss: 1 kB\n"
    b"00500000-00501000 r-xp 00000000 08:01 12 /a\nRss: 9000000000000000000 kB\nPss: 1 kB\n",
    b"00400000-00401000 r-xp 00000000 08:01 12 /a\nRss:4 kB\nRss: 8 kB\nPss: 2kB\nSize: 3 KB\n",
    b"00400000-00401000 r-xp 00000000 08:01 12 /a\nRss: \xd9\xa1 kB\n",            # not an ASCII digit
    b"00400000-00401000 r-xp 00000000 08:01 12 /a\nRss: 4 kB \x0b\nPss: 4\x0c kB\n",
    b"00400000-00401000 r-xp 00000000 08:01 12 /a\nRss: 4\x00 kB\n",
    b"00400000-00401000 r-xp 00000000 08:01 12 /a\nVmFlags: rd mr\nTHPeligible: 0\nRss: 4 kB\n",
    b"00400000-00401000 r-xp 00000000 08:01 12 /a\nNoPss: 4 kB\nXPss: 3 kB\nRss: 4 kB\n",  # no Pss: the other keys
    b"00400000-00401000 r-xp 00000000 08:01 12 /a\n00500000-00501000 rw-p 00000000 00:00 0 \nRss: 4 kB\n",
    b"[rollup]\n00400000-ff401000 ---p 00000000 00:00 0 [rollup]\nRss: 4 kB\nPss_Anon: 1 kB\n",
    b"g0400000-00401000 r-xp 00000000 08:01 12 /not/a/header\nRss: 4 kB\n",
    b"00400000-00401000 r-xp 00000000 08:01 12 /a\n-00401000 r-xp\n00400000- r-xp\nRss: 4 kB\n",
]


@pytest.mark.parametrize("data", QUIRKS, ids=range(len(QUIRKS)))
def test_c_and_python_agree_on_quirks(c_module, monkeypatch, data):
    _compare(c_module, data, monkeypatch)


@pytest.mark.uses("cpu")
def test_c_and_python_agree_on_corrupted_copies(c_module, monkeypatch):
    """Bytes changed, dropped and doubled at random in recorded smaps (fixed seed)."""
    rng = random.Random(12)
    sources = [p.read_bytes() for p in RECORDED if p.stat().st_size]
    alphabet = b"0123456789abcdefABkB -:\t\r\n\x00\xff"
    raised = 0
    for _ in range(1500):
        data = bytearray(rng.choice(sources)[:4000])
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(data))
            op = rng.randrange(3)
            if op == 0:
                data[i] = rng.choice(alphabet)
            elif op == 1:
                del data[i:i + rng.randint(1, 20)]
            else:
                data[i:i] = data[i:i + rng.randint(1, 80)]
        _compare(c_module, bytes(data), monkeypatch)
        outcome = _outcome(lambda: smaps._parse_kept_python(bytes(data), KEY_SETS[0]))
        raised += outcome[0] == "raised"
    assert 0 < raised < 1500  # some of them parse, the others raise (alike)


def test_c_and_python_find_alike_in_any_slice(c_module):
    """Counters' lookup of one counter, on slices a Counters never asks for too (bytes.find's clamping)."""
    data = b"x\nRss: 4 kB\nPss: 2 kB\nSwap:  1x kB\nA: 1\n"
    for needle in (b"\nRss:", b"\nPss:", b"\nA:", b"\nNone:", b"Rss:", b""):
        for lo in (-100, -5, 0, 1, 2, 13, len(data), 200):
            for hi in (-100, -3, 0, 5, 12, 13, len(data), 200):
                want = _outcome(lambda: smaps._find_python(data, lo, hi, needle))
                assert _outcome(lambda: c_module.find(data, lo, hi, needle)) == want, (needle, lo, hi)
    assert _outcome(lambda: c_module.find(data, 0, len(data), b"\nSwap:"))[1] is ValueError


def test_the_environment_forces_the_python_parser():
    env = dict(os.environ, SMEM_PURE_PYTHON="1", PYTHONPATH=str(TESTS.parent))
    out = subprocess.run([sys.executable, "-c", "import smem.parsers.smaps as s; print(s.IMPLEMENTATION, s._c)"],
                         env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == ["Python", "None"]


def test_the_implementation_in_use_is_named():
    assert smaps.IMPLEMENTATION == ("C" if smaps._c is not None else "Python")
    assert (smaps._parse is smaps._parse_c) == (smaps.IMPLEMENTATION == "C")
    assert (smaps._find_in is not smaps._find_python) == (smaps.IMPLEMENTATION == "C")


@pytest.mark.uses("cpu")
def test_version_says_which_smaps_parser_runs():
    said = run_smem("--version").stdout.decode()
    assert said.startswith("smem ") and f"(smaps parser: {smaps.IMPLEMENTATION})" in said
    # (a new process: the parser is chosen when smem is imported)
    pure = run_smem_process("--version", env={"SMEM_PURE_PYTHON": "1"}).stdout.decode()
    assert "(smaps parser: Python)" in pure
