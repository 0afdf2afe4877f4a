"""Columns as wide as their values: wide figures, long pids and user names, the terminal's width."""

import json
import os
import shutil
import tarfile
import uuid

import pytest

from conftest import FIXTURES, rows, run_smem, run_smem_on_a_terminal

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs /proc smaps")


@pytest.mark.uses("cpu")
def test_wide_values_widen_their_column_only_when_needed(child, tmp_path):
    c = child("""
        import mmap
        # 200 GiB of address space, nothing resident: PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        assert libc.mmap(None, 200 << 30, 0, 0x02 | 0x20 | 0x4000, -1, 0) not in (None, ctypes.c_void_p(-1).value)
    """, args=["wide-" + uuid.uuid4().hex])
    proc = run_smem("-c", "pid vss pss", "-P", c.proc.args[-1])
    header, line = rows(proc)[0], rows(proc, c.pid)[0]
    vss = line.split()[1]
    assert int(vss) > 200 << 20 and len(vss) > 8
    assert len(header) == len(line)  # the column grew, the table stays aligned
    assert header.split()[1] == "VSS" and header.index("VSS") + 3 == line.index(vss) + len(vss)
    # without such a value the layout is smem 1.5's 8 columns (no row: a token on no command
    # line but smem's own; ^$^ matched another worker's process whose command line is empty)
    normal = rows(run_smem("-c", "pid vss pss", "-P", uuid.uuid4().hex))
    assert normal == ["  PID      VSS      PSS "]


def test_pid_and_user_columns_widen(tmp_path):
    # (a capture of this machine's, its pids made 4,000,000 higher and root named at length)
    big = tmp_path / "big.tar"
    with tarfile.open(FIXTURES / "captures" / "faithful.tar.gz") as tin, \
            tarfile.open(big, "w", format=tarfile.GNU_FORMAT) as tout:
        for m in tin:
            data = tin.extractfile(m) if m.isreg() else None
            head, _, rest = m.name.partition("/")
            if head.isdigit():
                m.name = str(int(head) + 4000000) + ("/" + rest if rest else "")
                m.uname = "a-very-long-user-name" if m.isdir() and m.uid == 0 else m.uname
            tout.addfile(m, data)
    lines = rows(run_smem("-S", big, "-c", "pid user pss"))
    assert all(len(l) == len(lines[0]) for l in lines), lines
    assert lines[0].startswith("    PID User                  ")
    assert any("a-very-long-user-name " in l for l in lines)


def test_columns_with_commas():
    # a token on no command line but smem's own, which never matches (^$^ matched a process
    # with an empty name that came and went meanwhile)
    out = rows(run_smem("-c", "pid,pss", "-P", uuid.uuid4().hex))
    assert out == ["  PID      PSS "]


@pytest.mark.uses("cpu")
def test_autosize_uses_the_terminal_of_stdout_and_cuts_nothing_off_a_terminal(child):
    token = uuid.uuid4().hex
    c = child("pass", args=[token * 3])
    args = ["-a", "-c", "pid command", "-P", token]
    (narrow,) = [l for l in run_smem_on_a_terminal(args, 80) if l.split()[:1] == [str(c.pid)]]
    assert len(narrow) <= 80 and token * 3 not in narrow
    (sixty,) = rows(run_smem(*args, env={"COLUMNS": "60"}), c.pid)
    assert len(sixty) <= 60 and token not in sixty
    (whole,) = rows(run_smem(*args), c.pid)  # off a terminal, -a means the whole command line
    assert (token * 3) in whole


def test_a_cut_cgroup_keeps_its_last_part(tmp_path):
    """A cgroup's path is told by its end: cut to its 40 characters at the end, a service's
    cgroup and the one under it would read the same.  The cgroup column keeps the end after
    "..." in the table and in the tabulate styles; -a to a pipe and JSON keep the whole path."""
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "cgroup2_zswap" / "capture", tree)
    parent = "/machine.slice/libpod-conmon-web-frontend.scope/supervisor"
    (tree / "13337" / "cgroup").write_text(f"0::{parent}\n")
    (tree / "13423" / "cgroup").write_text(f"0::{parent}/payload\n")
    cut = {"...-conmon-web-frontend.scope/supervisor", "...web-frontend.scope/supervisor/payload"}
    for args in (["--cgroup"], ["-c", "pid cgroup pss"]):
        table = run_smem("-S", tree, *args, check=True).stdout.decode().splitlines()
        assert {line.split()[1 if args[0] == "-c" else 0] for line in table[1:]} == cut, table
    github = run_smem("-S", tree, "--cgroup", "-F", "github", check=True).stdout.decode()
    assert {line.split("|")[1].strip() for line in github.splitlines()[2:]} == cut, github
    whole = {parent, f"{parent}/payload"}
    autosized = run_smem("-S", tree, "--cgroup", "-a", check=True).stdout.decode().splitlines()
    assert {line.split()[0] for line in autosized[1:]} == whole
    rows_of = json.loads(run_smem("-S", tree, "--cgroup", "-F", "json", check=True).stdout)["rows"]
    assert {row["cgroup"] for row in rows_of} == whole


@pytest.mark.uses("cpu")
def test_diff_on_a_terminal_gives_the_command_the_width_the_others_leave():
    """smem diff cut the command to smem 1.5's 27 characters on a terminal of any width: three
    services run by one interpreter (/root/.pyenv/versions/3.11.7/bin/python3 ...) read the same.
    On a terminal it takes the room the other columns leave, as a watch screen's does; to a pipe
    the table is as before."""
    capture = str(FIXTURES / "captures" / "faithful.tar.gz")
    args = ["diff", capture, capture, "--pid", "7854"]
    wide = run_smem_on_a_terminal(args, 160)
    assert len(wide) == 2 and all(len(line) == 160 for line in wide), wide
    assert "/root/.pyenv/versions/3.11.7/bin/python3 tests/fixtures/record_captures.py" in wide[1], wide
    piped = rows(run_smem(*args, check=True))
    assert piped[1].split()[2] == "/root/.pyenv/versions/3.11." and len(piped[0]) == 104, piped
    assert run_smem_on_a_terminal(args, 90) == [line.rstrip("\n") for line in piped]  # (never under smem 1.5's 27)
