"""Captures pushed over TCP (smem/sources/tcp.py): busybox sh and nc send, smem listens on 127.0.0.1.

The sender is what a target without Python runs: Debian's busybox ``sh`` running
scripts/smemcap.sh, piped into busybox ``nc``.  Hostile peers are real sockets that send
garbage, a cut gzip stream, a bomb, nothing, or stall; each must get its one line, an exit
status 1 and no file left behind, within the (short) --timeout.

The senders run in the module's PID namespace (conftest's pid_namespace): smemcap.sh copies
every process its /proc shows, there a handful, not the whole machine; the listener, which
only receives, runs on the machine.
"""

import contextlib
import os
import signal
import shutil
import socket
import subprocess
import sys
import time

import pytest

from conftest import TESTS, run_smem
from hostile_inputs import capture_tar, compress, header, without_end, zeros_stream
from smemcap_shells import busybox_bin

BUSYBOX = shutil.which("busybox")
SCRIPT = TESTS.parent / "scripts" / "smemcap.sh"
needs_busybox = pytest.mark.skipif(BUSYBOX is None, reason="busybox is not installed")


def smem_process(*args, namespace=None):
    """``python -m smem ARGS`` (this checkout's) started, stdout and stderr piped; in ``namespace``
    (a PidNamespace) if given."""
    argv = [sys.executable, "-m", "smem", *map(str, args)]
    return subprocess.Popen(namespace.argv(argv, cwd=TESTS.parent) if namespace else argv, cwd=TESTS.parent,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def smem_in(namespace, *args):
    """The stdout of ``python -m smem ARGS`` run in ``namespace``, which must succeed."""
    proc = smem_process(*args, namespace=namespace)
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    return out


@contextlib.contextmanager
def marker_process(namespace):
    """A ``sleep 3600`` running in ``namespace``: yields its pid there (what a capture there names it by)."""
    proc = subprocess.Popen(namespace.argv(["sleep", "3600"]))
    try:
        pid = namespace.command_pid(proc)
        try:
            _execed(pid, b"sleep")
            yield namespace.pid_in(pid)
        finally:
            os.kill(pid, signal.SIGKILL)
    finally:
        proc.kill()  # nsenter, if the command never started
        proc.wait()


def _execed(pid, comm):
    """Wait until ``pid`` runs ``comm``: nsenter's child is seen as it forks, a copy of nsenter
    until it execs, which a busy machine took longer than a recording's frames (a frame named it
    nsenter, and -P '^sleep 3600$' found nothing)."""
    deadline = time.monotonic() + 30  # a hang guard, not a timing
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/comm", "rb") as f:
            if f.read().rstrip(b"\n") == comm:
                return
        time.sleep(0.005)
    raise AssertionError(f"{pid} never ran {comm!r}")


def listening_port(proc):
    """The port named by smem's 'listening on HOST:PORT' line (it listens on port 0)."""
    line = proc.stderr.readline().decode()
    assert "listening on 127.0.0.1:" in line, line
    return int(line.split("listening on 127.0.0.1:")[1].split()[0])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc):
    """Until something listens on 127.0.0.1:port (read from /proc/net/tcp: a probe would be a connection)."""
    wanted = f"0100007F:{port:04X}"
    for _ in range(600):
        with open("/proc/net/tcp") as f:
            if any(line.split()[1] == wanted and line.split()[3] == "0A" for line in f.readlines()[1:]):
                return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def busybox_push(port, namespace):
    """What the README tells a target to run: busybox sh smemcap.sh | busybox nc HOST PORT (in
    ``namespace``, a PidNamespace)."""
    subprocess.run(namespace.argv([BUSYBOX, "sh", "-c", f"{BUSYBOX} sh {SCRIPT} | {BUSYBOX} nc 127.0.0.1 {port}"]),
                   check=True, timeout=900, stdin=subprocess.DEVNULL)


@needs_busybox
def test_capture_listen_keeps_what_busybox_pushes(tmp_path, pid_namespace):
    out = tmp_path / "box.tgz"
    with marker_process(pid_namespace) as marker:
        proc = smem_process("capture", "--listen", "127.0.0.1:0", "-o", out, "--timeout", "600")
        busybox_push(listening_port(proc), pid_namespace)
        _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    assert out.read_bytes()[:2] == b"\x1f\x8b"  # kept as the target sent it
    # one line says it came (a silent exit 0 reads as nothing received)
    size = out.stat().st_size
    (line,) = err.decode().splitlines()
    assert line.startswith(f"smem: wrote {out}: a capture of {size / 1024:.1f} KiB from 127.0.0.1:"), line
    report = run_smem("-S", out, "-c", "pid name", "-H", check=True).stdout.decode()
    assert str(marker) in report.split()


@needs_busybox
def test_report_waits_on_tcp_for_one_capture(tmp_path, pid_namespace):
    port = free_port()
    proc = smem_process("-S", f"tcp://127.0.0.1:{port}", "-u", "--timeout", "600")
    wait_listening(port, proc)
    busybox_push(port, pid_namespace)
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    assert out.split()[:2] == [b"User", b"Count"] and b"root" in out


@needs_busybox
def test_a_target_slow_to_copy_proc_is_waited_for_past_the_timeout(tmp_path, pid_namespace):
    """smemcap.sh is silent until it has copied every process (a slow board's few hundred: minutes):
    a first byte later than --timeout is still taken (a sleep stands in for the slow copy)."""
    out = tmp_path / "slow.tgz"
    proc = smem_process("capture", "--listen", "127.0.0.1:0", "-o", out, "--timeout", "1")
    port = listening_port(proc)
    subprocess.run(pid_namespace.argv([BUSYBOX, "sh", "-c", f"(sleep 2.5; {BUSYBOX} sh {SCRIPT}) | "
                                       f"{BUSYBOX} nc 127.0.0.1 {port}"]),
                   check=True, timeout=900, stdin=subprocess.DEVNULL)
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    assert out.read_bytes()[:2] == b"\x1f\x8b"


@needs_busybox
def test_a_box_without_gzip_sends_a_plain_tar_that_every_reader_takes(tmp_path, pid_namespace):
    """A busybox built without gzip: the script says so once and writes a plain tar, which
    smem -S, capture --listen and record --listen all take."""
    env = dict(os.environ, PATH=busybox_bin(tmp_path / "bin", without=("gzip",)))

    def push(port=None, file=None):
        line = f"{BUSYBOX} sh {SCRIPT} " + (f"{file}" if file else f"| {BUSYBOX} nc 127.0.0.1 {port}")
        res = subprocess.run(pid_namespace.argv([BUSYBOX, "sh", "-c", line]), env=env, capture_output=True,
                             check=True, timeout=900, stdin=subprocess.DEVNULL)
        # (a FILE named .tar asks for a plain tar: no gzip is missed)
        assert res.stderr.decode().splitlines()[:1] == ([] if file else [
            "smemcap.sh: warning: gzip not found on PATH: writing an uncompressed tar"]), res.stderr

    with marker_process(pid_namespace) as marker:
        plain = tmp_path / "box.tar"
        push(file=plain)
        assert plain.read_bytes()[257:262] == b"ustar"
        report = run_smem("-S", plain, "-c", "pid", "-H", check=True).stdout.decode()
        assert str(marker) in report.split()
        kept = tmp_path / "kept.tar"
        proc = smem_process("capture", "--listen", "127.0.0.1:0", "-o", kept, "--timeout", "600")
        push(port=listening_port(proc))
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err
        assert kept.read_bytes()[257:262] == b"ustar"
        # (what came before holds without it; a recording's frames are zstd)
        pytest.importorskip("zstandard", reason="smem record needs smem[compression] (zstandard)")
        rec = tmp_path / "rec"
        proc = smem_process("record", "--listen", "127.0.0.1:0", "-o", rec, "--count", "1", "--timeout", "600")
        push(port=listening_port(proc))
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err
        report = run_smem("-S", rec, "-c", "pid", "-H", check=True).stdout.decode()
        assert str(marker) in report.split()


def _send_and_close(data):
    def peer(port):
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(data)
    return peer


def _until_closed(s):
    """Wait until smem gives up and closes the connection (a hang guard bounds the wait)."""
    s.settimeout(300)
    try:
        while s.recv(4096):
            pass
    except ConnectionResetError:
        pass


def _stall(port):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(compress("gzip", capture_tar())[:300])
        _until_closed(s)


def _silent(port):
    with socket.create_connection(("127.0.0.1", port)) as s:
        _until_closed(s)


def _slow(port):
    """A byte every 20 ms, never silent for a whole --timeout, for longer than 10 of them (its
    712 bytes take 14 s)."""
    data = compress("gzip", capture_tar())
    with socket.create_connection(("127.0.0.1", port)) as s:
        for i in range(len(data)):
            try:
                s.sendall(data[i:i + 1])
            except OSError:
                return
            time.sleep(0.02)


def _zip_bomb(port):
    """A member claiming 3 GiB, then 256 MiB of zeros: made when sent, not when every xdist
    worker collects this file."""
    _send_and_close(zeros_stream("gzip", 256 << 20, prefix=without_end(capture_tar())
                                 + header(b"1234/smaps", 3 << 30)))(port)


#: kind: (the peer, what smem's one line says, --timeout): 1 s for the peers that send at once (a
#: busy machine's pause is no stall), 0.3-0.6 s for those given up only when it runs out (once, or
#: 10 times for the slow and the silent one), so that they wait seconds, not tens of them.
HOSTILE = {
    "garbage": (_send_and_close(os.urandom(3000).replace(b"\x1f", b"x").replace(b"B", b"x")
                                .replace(b"\xfd", b"x").replace(b"\x28", b"x")),
                "not a capture", 1),
    "truncated gzip": (_send_and_close(compress("gzip", capture_tar())[:400]), "gzip data is truncated or corrupt", 1),
    "zip bomb": (_zip_bomb, "inflates past the limit", 1),
    "nothing at all": (_send_and_close(b""), "closed the connection without sending a capture", 1),
    "stall half way": (_stall, "sent 300 bytes, then nothing for 0.3 s: given up", 0.3),
    "silent": (_silent, "sent nothing for 3 s (10 x --timeout", 0.3),
    "slow": (_slow, "still sending after 6 s", 0.6),  # (0.3 s: this test, starved, once paused past it)
}


@pytest.mark.uses("network")
@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_peer_gets_one_line_and_no_file(tmp_path, kind):
    peer, said, timeout = HOSTILE[kind]
    out = tmp_path / "kept.tgz"
    proc = smem_process("capture", "--listen", "127.0.0.1:0", "-o", out, "--timeout", timeout)
    peer(listening_port(proc))
    _, err = proc.communicate(timeout=300)  # (a hang guard: each is given up within seconds)
    lines = err.decode().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, err
    assert lines[0].startswith("smem: capture from 127.0.0.1:") and said in lines[0], lines
    assert not out.exists() and os.listdir(tmp_path) == []


def test_the_host_is_required():
    proc = run_smem("capture", "--listen", ":5555")
    assert proc.returncode == 2 and b"the host is required" in proc.stderr
    proc = run_smem("-S", "tcp://5555")
    assert proc.returncode == 2 and b"HOST:PORT" in proc.stderr
    proc = run_smem("-S", "tcp://127.0.0.1:0")  # (any free port, named nowhere: it waited for ever)
    assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1 and b"needs the port" in proc.stderr


def test_an_address_not_of_this_machine_is_one_plain_line():
    """Python's bind error read "... (while attempting to bind on address ('192.0.2.1', 5555))"."""
    for command in (["capture", "--listen", "192.0.2.1:5555"], ["-S", "tcp://192.0.2.1:5555"]):
        proc = run_smem(*command)
        assert proc.returncode == 1 and proc.stderr.decode().splitlines() == [
            "smem: cannot listen on 192.0.2.1:5555: Cannot assign requested address"], proc.stderr


@pytest.mark.uses("network")
def test_listening_everywhere_names_no_wildcard_for_the_target_to_dial(tmp_path):
    """``nc 0.0.0.0 PORT`` on the target dials the target itself: the line asks for an address."""
    proc = smem_process("capture", "--listen", "0.0.0.0:0", "-o", tmp_path / "x.tgz", "--timeout", "60")
    try:
        line = proc.stderr.readline().decode()
        port = int(line.split("listening on 0.0.0.0:")[1].split()[0])
        assert f"| nc ADDRESS {port}, ADDRESS one of this machine's" in line and "nc 0.0.0.0" not in line, line
        with socket.create_connection(("127.0.0.1", port)):
            pass  # (nothing sent: the one line that ends it)
        assert proc.wait(60) == 1 and b"without sending a capture" in proc.stderr.read()
    finally:
        proc.kill()
    assert not (tmp_path / "x.tgz").exists()


@pytest.mark.uses("network", "shells")
def test_a_report_waiting_on_tcp_says_where(tmp_path):
    """``smem -S tcp://HOST:PORT`` waited without a word, as if hung; capture --listen said where."""
    port = free_port()
    proc = smem_process("-S", f"tcp://127.0.0.1:{port}", "-u", "--timeout", "60")
    try:
        assert proc.stderr.readline().decode() == (f"smem: listening on 127.0.0.1:{port} for a capture (on the "
                                                   f"target: sh smemcap.sh | nc 127.0.0.1 {port})\n")
        with socket.create_connection(("127.0.0.1", port)):
            pass
        assert proc.wait(60) == 1 and b"without sending a capture" in proc.stderr.read()
    finally:
        proc.kill()


def test_timeout_only_with_tcp():
    proc = run_smem("capture", "--timeout", "3")
    assert proc.returncode == 2 and b"use it with --listen" in proc.stderr


@pytest.mark.uses("network")
def test_a_reader_that_leaves_mid_capture_is_the_cut_off_error():
    """``smem capture --listen -o - | head -c 10``: what the pipe did not take is lost, and
    smem says so with exit 1, as ``smem capture -o -`` does (not exit 0 with a capture cut short)."""
    import random
    noise = random.Random(5).randbytes(1 << 19)  # (incompressible: more than a pipe holds, one write of it)
    data = capture_tar(processes={1234: {"cmdline": b"x\0", "stat": b"1234 (x) S 1 1 1 0", "smaps": b"",
                                         "environ": noise}})
    proc = smem_process("capture", "--listen", "127.0.0.1:0", "-o", "-", "--timeout", "60")
    port = listening_port(proc)
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(data)
    assert len(proc.stdout.read(10)) == 10
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(120) == 1 and err.splitlines() == [
        "smem: the capture was cut off: standard output was closed before the end (broken pipe); "
        "what was written is not a whole capture"], err


@pytest.mark.uses("network")
def test_an_output_that_cannot_be_written_is_said_before_the_wait(tmp_path):
    """-o in a directory that is not there: one line at once, not after a target's capture came
    (minutes later, and then lost)."""
    proc = smem_process("capture", "--listen", "127.0.0.1:0", "-o", tmp_path / "missing" / "x.tgz")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and err.decode().splitlines() == [
        f"smem: cannot write {tmp_path / 'missing' / 'x.tgz'}: No such file or directory"], err


@pytest.mark.uses("network", "shells")
def test_a_pushed_capture_is_named_capture_from_its_peer_once():
    """A report of a pushed capture names it as its errors do, ``capture from HOST:PORT``: its
    warnings said ``capture capture from 127.0.0.1:40112 left out ...``."""
    port = free_port()
    data = capture_tar(extra=[("capture-info", b"tool=smemcap.sh 1\nunreadable_processes=1\n")])
    proc = smem_process("-S", f"tcp://127.0.0.1:{port}", "-t", "--timeout", "60")
    try:
        wait_listening(port, proc)
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(data)
            peer = "%s:%d" % s.getsockname()
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert err.decode().splitlines()[1:] == [
        f"smem: warning: capture from {peer} left out 1 process its writer could not read (a writer not root "
        "reads only its own user's)"]
