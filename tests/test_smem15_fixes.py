"""Every smem 1.5 bug we fix, each shown on real processes or a real capture.

The processes are started here, on this machine, with the property that broke
smem 1.5 (a name with ")", a non-UTF-8 path, an empty command line, ...); the
report is read back through the command line, as a user would.
"""

import os
import re
import subprocess
import sys
import tarfile
import textwrap
import uuid

import pytest

from conftest import AS_NOBODY, run_smem, run_smem_process

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs /proc smaps")


class Child:
    """A python child running ``body``; it prints READY and lives until we close its stdin."""

    def __init__(self, body, argv0=None, args=()):
        code = textwrap.dedent(body) + "\nprint('READY', flush=True)\nsys.stdin.read()\n"
        cmd = [sys.executable, "-c", "import sys, os\n" + code, *args]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self.proc.stdout.readline()
        assert line.strip() == b"READY", line
        self.pid = self.proc.pid

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def child():
    children = []

    def start(body, **kw):
        c = Child(body, **kw)
        children.append(c)
        return c

    yield start
    for c in children:
        c.stop()


def rows(proc, pid=None):
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if pid is None:
        return lines
    return [l for l in lines if l.split() and l.split()[0] == str(pid)]


def test_name_with_parenthesis_is_whole(child):
    c = child("""
        import ctypes
        ctypes.CDLL(None).prctl(15, b"we) ird (x", 0, 0, 0)
    """)
    (line,) = rows(run_smem("-c", "pid name", "-P", "ird"), c.pid)
    assert line.split(None, 1)[1].rstrip() == "we) ird (x"


def test_mapping_names_with_spaces_and_deleted(child, tmp_path):
    token = uuid.uuid4().hex[:8]
    child(f"""
        import mmap
        path = {str(tmp_path)!r} + "/map {token} with spaces"
        f = open(path, "w+b"); f.write(b"x" * 8192); f.flush()
        m = mmap.mmap(f.fileno(), 8192); m[0] = 1
        os.unlink(path)
    """)
    out = rows(run_smem("-m", "-M", token, "-c", "map pids"))
    name = f"{tmp_path}/map {token} with spaces (deleted)"
    assert any(l.startswith(name[:40]) for l in out), out
    # the whole name is what -M sees
    assert len(rows(run_smem("-m", "-H", "-M", r"with spaces \(deleted\)$", "-c", "pids", "-P", token))) == 1


def test_non_utf8_command_line_and_path(child, tmp_path):
    token = uuid.uuid4().hex[:8]
    bad = os.fsencode(str(tmp_path)) + b"/caf\xe9-" + token.encode()
    c = child(f"""
        import mmap
        f = open({bad!r}, "w+b"); f.write(b"x" * 4096); f.flush()
        m = mmap.mmap(f.fileno(), 4096); m[0] = 1
    """, args=[os.fsdecode(b"arg-\xff-" + token.encode())])
    (line,) = rows(run_smem("-c", "pid command", "-a", env={"COLUMNS": "400"}), c.pid)
    assert line.encode("utf-8", "surrogateescape").rstrip().endswith(b"arg-\xff-" + token.encode())
    out = run_smem("-m", "-a", "-c", "map pids", "-M", token, env={"COLUMNS": "400"})
    assert bad in out.stdout, out.stdout


def test_kernel_threads_and_zombies_left_out_empty_cmdline_shown(child):
    # a zombie: a child that exited and was not reaped
    z = child("""
        import time
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        while ") Z " not in open(f"/proc/{pid}/stat").read():
            time.sleep(0.01)  # READY only once the child is a zombie
    """)
    zombie = None
    # the grandchild's pid was printed before READY; read it from /proc instead
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            if f") Z {z.pid} " in stat:
                zombie = int(entry)
    assert zombie is not None
    # a live process whose command line is empty: exec python with argc == 0, script on stdin
    script = b"import sys, time\nprint('READY', flush=True)\ntime.sleep(60)\n"
    empty = subprocess.Popen(
        [sys.executable, "-c",
         "import ctypes, sys; libc = ctypes.CDLL(None); "
         "argv = (ctypes.c_char_p * 1)(None); "
         f"libc.execv({os.fsencode(sys.executable)!r}, argv)"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        empty.stdin.write(script)
        empty.stdin.close()
        assert empty.stdout.readline().strip() == b"READY"
        cmdline = open(f"/proc/{empty.pid}/cmdline", "rb").read()
        assert cmdline.strip(b"\0") == b""
        proc = run_smem("-c", "pid command")
        assert rows(proc, zombie) == []
        assert rows(proc, 2) == []  # kthreadd
        (line,) = rows(proc, empty.pid)
        assert line.split()[1].startswith("[python")
    finally:
        empty.kill()
        empty.wait()


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
    # without such a value the layout is smem 1.5's 8 columns
    normal = rows(run_smem("-c", "pid vss pss", "-P", "^$^"))
    assert normal == ["  PID      VSS      PSS "]


def test_pid_and_user_columns_widen(tmp_path):
    cap = tmp_path / "c.tar"
    run_smem("capture", "--compression", "none", "-o", cap, check=True)
    big = tmp_path / "big.tar"
    with tarfile.open(cap) as tin, tarfile.open(big, "w", format=tarfile.GNU_FORMAT) as tout:
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


def test_user_view_vss_is_vss_and_avguss_works(tmp_path):
    cap = tmp_path / "c.tgz"
    run_smem("capture", "-o", cap, check=True)
    per_process = rows(run_smem("-S", cap, "-H", "-c", "user vss pss", "-U", "^root$"))
    users = rows(run_smem("-S", cap, "-H", "-u", "-c", "user vss pss", "-U", "^root$"))
    (root,) = users
    assert int(root.split()[1]) == sum(int(l.split()[1]) for l in per_process)
    assert int(root.split()[2]) == sum(int(l.split()[2]) for l in per_process)
    assert root.split()[1] != root.split()[2]
    # avguss of a mapping: its USS in each process that maps it (the process view filtered to
    # that mapping, -M), averaged over those processes
    maps = rows(run_smem("-S", cap, "-H", "-m", "-a", "-c", "pids avguss map", "-s", "pids", "-r",
                         env={"COLUMNS": "300"}))
    checked = 0
    for line in maps[:8]:
        pids, avguss, name = line.split(None, 2)
        name = name.rstrip()
        if name == "<anonymous>" or " " in name:
            continue
        per_process = rows(run_smem("-S", cap, "-H", "-M", f"^{re.escape(name)}$", "-c", "pid uss"))
        assert len(per_process) == int(pids), name
        assert int(avguss) == sum(int(l.split()[1]) for l in per_process) // int(pids), name
        checked += 1
    assert checked >= 3


def test_system_view_with_realmem_is_integers_that_add_up(tmp_path):
    for size, kib in (("1.5G", 1572864), ("64GiB", 64 << 20), ("512MB", 512 << 10),
                      ("16g", 16 << 20), (str(32 << 30), 32 << 20), ("33554432K", 32 << 20)):
        proc = run_smem("-w", "-t", "-R", size)
        lines = rows(proc)
        table = lines[:lines.index("-" * len(lines[0])) + 2]  # footnotes may follow
        assert not any("." in l for l in table)
        used = [int(l[25:].split()[0]) for l in table[1:-2]]
        total = int(table[-1].split()[0])
        assert sum(used) == total
        if kib >= int(open("/proc/meminfo").read().split()[1]):
            assert total == kib, size


def test_errors_are_one_line_on_stderr():
    cases = [
        (["-S", "/nonexistent/capture.tgz"], 1, "No such file"),
        (["-P", "("], 2, "invalid regular expression"),
        (["-M", "[z-a]"], 2, "invalid regular expression"),
        (["-R", "lots"], 2, "cannot read memory size"),
        (["--no-such-option"], 2, "no-such-option"),
    ]
    for args, code, text in cases:
        proc = run_smem(*args)
        err = proc.stderr.decode()
        assert proc.returncode == code, (args, err)
        assert proc.stdout == b""
        assert text in err and "Traceback" not in err
        assert len(err.splitlines()) == 1, err


def test_unknown_field_goes_to_stderr_with_the_known_fields():
    proc = run_smem("-c", "pid bogus")
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b""
    (line,) = err.splitlines()  # one line, naming the known fields
    assert line.startswith("smem: unknown field for the process view: bogus; known: ")
    for field in ("pid", "user", "name", "command", "maps", "swap", "uss", "rss", "pss", "vss"):
        assert f" {field} " in line
    proc = run_smem("-m", "-s", "nope")
    assert proc.returncode == 2 and "avguss" in proc.stderr.decode()
    # -c help says what each is, aligned, on stdout
    listing = run_smem("-m", "-c", "help")
    lines = listing.stdout.decode().splitlines()
    assert listing.returncode == 0 and lines[0].startswith("Fields of the mapping view")
    helps = {l.split()[0]: l for l in lines[1:]}
    assert "average PSS per process" in helps["avgpss"]
    starts = {len(l) - len(l[len(l.split()[0]):].lstrip()) for l in lines[1:]}
    assert len(starts) == 1  # every help starts in the same column, whatever the field's length


def test_columns_with_commas():
    # a token on no command line but smem's own, which never matches (^$^ matched a process
    # with an empty name that came and went meanwhile)
    out = rows(run_smem("-c", "pid,pss", "-P", uuid.uuid4().hex))
    assert out == ["  PID      PSS "]


@pytest.mark.process
def test_process_filter_never_matches_smem_itself(child):
    token = uuid.uuid4().hex
    c = child("pass", args=[token])
    # smem's own command line holds the token: only a process of its own shows that it is left out
    proc = run_smem_process("-c", "pid command", "-P", token)
    pids = [int(l.split()[0]) for l in rows(proc)[1:]]
    assert pids == [c.pid]


def _on_a_terminal(args, columns):
    """smem's output run on a pseudo-terminal ``columns`` wide (stdin not a terminal)."""
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([sys.executable, "-m", "smem", *args], stdout=slave, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env=env, cwd=os.path.dirname(os.path.dirname(__file__)))
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait(60)
    os.close(master)
    return out.decode().replace("\r\n", "\n").splitlines()


def test_autosize_uses_the_terminal_of_stdout_and_cuts_nothing_off_a_terminal(child):
    token = uuid.uuid4().hex
    c = child("pass", args=[token * 3])
    args = ["-a", "-c", "pid command", "-P", token]
    (narrow,) = [l for l in _on_a_terminal(args, 80) if l.split()[:1] == [str(c.pid)]]
    assert len(narrow) <= 80 and token * 3 not in narrow
    (sixty,) = rows(run_smem(*args, env={"COLUMNS": "60"}), c.pid)
    assert len(sixty) <= 60 and token not in sixty
    (whole,) = rows(run_smem(*args), c.pid)  # off a terminal, -a means the whole command line
    assert (token * 3) in whole


@pytest.mark.process
def test_unreadable_processes_are_one_warning_not_silence():
    if os.geteuid() != 0:
        pytest.skip("needs root to run smem as another user")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    # Python itself may live under /root: import smem as root, then become nobody.
    become_nobody = AS_NOBODY + "smem.cli.main(['-c', 'pid user'])"
    proc = subprocess.run([sys.executable, "-c", become_nobody], capture_output=True, env=env,
                          cwd=os.path.dirname(os.path.dirname(__file__)), stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    (warning,) = proc.stderr.decode().splitlines()

    def others_pid(entry):
        try:
            return os.stat(f"/proc/{entry}").st_uid != 65534 and open(f"/proc/{entry}/cmdline", "rb").read()
        except OSError:
            return False  # gone meanwhile
    others = sum(1 for e in os.listdir("/proc") if e.isdigit() and others_pid(e))
    count = int(warning.split()[2])
    assert warning.startswith("smem: warning: ") and "could not be read (permission denied): pid " in warning
    assert "run as root" in warning
    assert 0 < count <= others + 5  # processes may come and go between the two scans
    # up to three are named, with their names; the rest counted
    named = re.findall(r"pid (\d+) \(([^)]*)\)", warning)
    assert len(named) == min(count, 3)
    assert (f"and {count - 3} more" in warning) == (count > 3)
    comms = {}
    for pid, _ in named:
        try:
            comms[pid] = open(f"/proc/{pid}/comm").read().rstrip("\n")
        except OSError:
            pass
    assert all(comms[pid] == name for pid, name in named if pid in comms)
    assert all(l.split()[1] == "nobody" for l in proc.stdout.decode().splitlines()[1:])


@pytest.mark.process
def test_write_errors_are_one_line():
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    for args, what in ((["-c", "pid pss"], "report"), (["capture"], "capture")):
        with open("/dev/full", "wb") as full:
            proc = subprocess.run([sys.executable, "-m", "smem", *args], stdout=full, stderr=subprocess.PIPE,
                                  cwd=os.path.dirname(os.path.dirname(__file__)))
        err = proc.stderr.decode().splitlines()
        assert proc.returncode == 1 and err[-1] == f"smem: cannot write the {what}: No space left on device"
        assert "Traceback" not in proc.stderr.decode()


@pytest.mark.process
def test_process_filter_never_matches_the_wrappers_that_run_smem():
    token = uuid.uuid4().hex
    for wrapper in (["sh", "-c", f"{sys.executable} -m smem -c 'pid command' -P {token}"],
                    ["timeout", "60", sys.executable, "-m", "smem", "-c", "pid command", "-P", token]):
        proc = subprocess.run(wrapper, capture_output=True, cwd=os.path.dirname(os.path.dirname(__file__)))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.decode().splitlines() == ["  PID Command                     "], wrapper


NOSWAP = os.path.join(os.path.dirname(__file__), "fixtures", "goldens", "armv7-noswap")


def _noswap_cases(kind):
    import json
    manifest = json.load(open(os.path.join(NOSWAP, "manifest.json")))
    return [pytest.param(c, id=" ".join(c["args"])) for c in manifest["cases"] if c["kind"] == kind]


@pytest.mark.parametrize("case", _noswap_cases("differs"))
def test_percent_without_swap_shows_absent_not_na(case, tmp_path):
    """-p on a machine without swap (two real ARM smaps, a real ARM meminfo with SwapTotal 0):
    smem 1.5 (the golden) shows the swap share as N/A, smem as -, as every absent figure; the rest
    is byte for byte smem 1.5's."""
    from conftest import FIXTURES
    golden = open(os.path.join(NOSWAP, case["files"]["stdout"]), "rb").read()
    assert b"N/A" in golden
    if os.path.exists("/usr/bin/smem"):  # the golden is still smem 1.5's
        with tarfile.open(FIXTURES / "captures" / "armv7-noswap.tar.gz") as tar:
            tar.extractall(tmp_path / "proc", filter="tar")
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES") and not k.startswith("PYTHON")}
        theirs = subprocess.run(["/usr/bin/smem", "-S", tmp_path, *case["args"]], capture_output=True,
                                stdin=subprocess.DEVNULL, cwd="/tmp", env=env)
        assert theirs.stdout == golden
    ours = run_smem("-S", FIXTURES / "captures" / "armv7-noswap.tar.gz", *case["args"])
    assert ours.returncode == case["status"] == 0
    assert ours.stdout == golden.replace(b"     N/A", b"       -")


def test_a_source_without_meminfo_is_an_error_not_silence(tmp_path):
    """smem 1.5 swallowed the OSError of a tree without meminfo (the bare smaps of the ARM sets):
    nothing printed, exit 0, with -p or without."""
    from conftest import FIXTURES
    with tarfile.open(FIXTURES / "captures" / "armv7-noswap.tar.gz") as tar:
        tar.extractall(tmp_path / "proc", filter="tar")
    os.unlink(tmp_path / "proc" / "meminfo")
    for args in ([], ["-p"]):
        ours = run_smem("-S", tmp_path, *args)
        assert ours.returncode == 1 and ours.stdout == b""
        assert ours.stderr.decode() == f"smem: {tmp_path}: no meminfo in this directory (not a capture or a proc tree?)\n"
        if os.path.exists("/usr/bin/smem"):
            theirs = subprocess.run(["/usr/bin/smem", "-S", tmp_path, *args], capture_output=True,
                                    stdin=subprocess.DEVNULL, cwd="/tmp")
            assert (theirs.returncode, theirs.stdout, theirs.stderr) == (0, b"", b"")
