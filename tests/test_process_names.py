"""Names as the kernel gives them, whole: commands with ")", spaces, non-UTF-8 bytes, an empty
command line; kernel threads and zombies left out; smem and its wrappers never match -P."""

import os
import subprocess
import sys
import uuid

import pytest

from conftest import rows, run_smem, run_smem_process

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs /proc smaps")


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
                with open(f"/proc/{entry}/stat", "rb") as f:  # (bytes: any process's name may not be UTF-8)
                    stat = f.read()
            except OSError:
                continue
            if f") Z {z.pid} ".encode() in stat:
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


@pytest.mark.uses("cpu")
@pytest.mark.process
def test_process_filter_never_matches_smem_itself(child):
    token = uuid.uuid4().hex
    c = child("pass", args=[token])
    # smem's own command line holds the token: only a process of its own shows that it is left out
    proc = run_smem_process("-c", "pid command", "-P", token)
    pids = [int(l.split()[0]) for l in rows(proc)[1:]]
    assert pids == [c.pid]


@pytest.mark.uses("cpu")
@pytest.mark.process
def test_process_filter_never_matches_the_wrappers_that_run_smem():
    token = uuid.uuid4().hex
    for wrapper in (["sh", "-c", f"{sys.executable} -m smem -c 'pid command' -P {token}"],
                    ["timeout", "60", sys.executable, "-m", "smem", "-c", "pid command", "-P", token]):
        proc = subprocess.run(wrapper, capture_output=True, cwd=os.path.dirname(os.path.dirname(__file__)))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.decode().splitlines() == ["  PID Command                     "], wrapper


def _memory_hierarchy():
    """The cgroup v1 memory hierarchy's mount and ID, or skips (needs root to make a cgroup)."""
    with open("/proc/self/cgroup") as f:
        ids = [l.split(":")[0] for l in f.read().splitlines() if "memory" in l.split(":")[1].split(",")]
    if os.geteuid() != 0 or not ids or not os.path.isdir("/sys/fs/cgroup/memory"):
        pytest.skip("needs root and a cgroup v1 memory hierarchy at /sys/fs/cgroup/memory")
    return "/sys/fs/cgroup/memory", ids[0]


def test_cgroup_name_with_a_carriage_return_is_whole_and_names_no_other(child):
    """A process in a cgroup whose name spells another /proc/PID/cgroup line after a carriage
    return is shown in its own cgroup, named whole, not in the one the name spelt."""
    mount, hierarchy = _memory_hierarchy()
    token = uuid.uuid4().hex[:8]
    outer = os.path.join(mount, f"smem-{token}\r{hierarchy}:memory:")
    inner = os.path.join(outer, f"spoof-{token}")
    os.makedirs(inner)
    c = None
    try:
        c = child(f"""
            with open({inner + "/cgroup.procs"!r}, "w") as f:
                f.write(str(os.getpid()))
        """, args=[token])
        out = run_smem("--cgroup", "-a", "-H", "-c", "cgroup count", "-P", token, env={"COLUMNS": "400"})
        (line,) = rows(out)
        assert line.split()[0] == f"/smem-{token}?{hierarchy}:memory:/spoof-{token}"
    finally:
        if c is not None:
            c.stop()  # (a cgroup with a process in it cannot be removed)
        os.rmdir(inner)
        os.rmdir(outer)
