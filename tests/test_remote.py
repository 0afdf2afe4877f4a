"""Remote capture: a real OpenSSH server on 127.0.0.1, and captures streamed through pipes.

The server, and so the remote side's capture, runs in the module's PID namespace (conftest's
pid_namespace), as a host in a container would: a capture copies every process its /proc
shows, there the server's own and a handful besides, not the whole machine.  The script piped
here runs in it too.
"""

import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from conftest import run_smem, TESTS

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
needs_ssh = pytest.mark.skipif(not (os.path.exists(SSHD) and shutil.which("ssh") and shutil.which("ssh-keygen")),
                               reason="OpenSSH server and client are not installed")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory, pid_namespace):
    if os.geteuid() != 0:
        pytest.skip("starting sshd for the current user needs root here")
    d = tmp_path_factory.mktemp("sshd")
    os.chmod(d, 0o700)
    for kind in ("host", "user"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", d / kind], check=True)
    (d / "authorized_keys").write_bytes((d / "user.pub").read_bytes())
    os.chmod(d / "authorized_keys", 0o600)
    os.makedirs("/run/sshd", exist_ok=True)
    port = _free_port()
    config = d / "sshd_config"
    config.write_text(f"""
Port {port}
ListenAddress 127.0.0.1
HostKey {d}/host
AuthorizedKeysFile {d}/authorized_keys
PidFile {d}/sshd.pid
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
""")
    server = subprocess.Popen(pid_namespace.argv([SSHD, "-D", "-e", "-f", config]), stderr=subprocess.PIPE)
    daemon = pid_namespace.command_pid(server)  # (nsenter passes no signal on)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    ssh = (f"ssh -i {d}/user -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no "
           f"-o UserKnownHostsFile={d}/known_hosts -o LogLevel=ERROR")
    yield port, ssh
    os.kill(daemon, signal.SIGTERM)
    server.wait(timeout=10)


@needs_ssh
def test_report_over_ssh_matches_a_capture_taken_by_the_script(sshd):
    port, ssh = sshd
    proc = run_smem("-S", f"ssh://root@127.0.0.1:{port}", "-w", "-c", "area", env={"SMEM_SSH": ssh})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == run_smem("-w", "-c", "area").stdout
    # the process view lists sshd's own session (its command line names "sh -s -")
    proc = run_smem("-S", f"ssh://root@127.0.0.1:{port}", "-c", "pid user command", env={"SMEM_SSH": ssh})
    assert proc.returncode == 0, proc.stderr
    assert b"root" in proc.stdout and b"sh -s -" in proc.stdout


@needs_ssh
def test_smem_capture_from_a_host_saves_a_file(sshd, tmp_path):
    port, ssh = sshd
    out = tmp_path / "remote.tgz"
    proc = run_smem("capture", "--host", f"ssh://127.0.0.1:{port}", "-o", out, env={"SMEM_SSH": ssh})
    assert proc.returncode == 0, proc.stderr
    assert run_smem("-S", out, "-u").returncode == 0
    assert b"root" in run_smem("-S", out, "-u").stdout


@needs_ssh
def test_failing_ssh_is_one_error_line(sshd):
    port, ssh = sshd
    closed = _free_port()
    proc = run_smem("-S", f"ssh://127.0.0.1:{closed}", env={"SMEM_SSH": ssh})
    err = proc.stderr.decode()
    assert proc.returncode == 1 and proc.stdout == b""
    assert err.startswith(f"smem: ssh://127.0.0.1:{closed}: ssh failed: ") and err.count("\n") == 1, err
    for bad in ("ssh://-oProxyCommand=x", "ssh://", "ssh://host:notaport"):
        proc = run_smem("-S", bad)
        assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1, proc.stderr


def test_an_empty_smem_ssh_is_ssh(monkeypatch):
    """SMEM_SSH set but empty (or blank) runs ssh, as unset does; it ran '--'."""
    from smem.sources.remote import ssh_command
    for empty in ("", "  "):
        monkeypatch.setenv("SMEM_SSH", empty)
        assert ssh_command("ssh://example.org")[0] == "ssh"


def test_an_smem_ssh_that_does_not_parse_is_one_usage_line():
    proc = run_smem("-S", "ssh://127.0.0.1", env={"SMEM_SSH": 'ssh "-p 22'})  # (an unclosed quote)
    assert proc.returncode == 2 and proc.stderr.decode().startswith("smem: SMEM_SSH='ssh \"-p 22'") \
        and proc.stderr.count(b"\n") == 1, proc.stderr


def test_capture_streamed_through_a_pipe(tmp_path, pid_namespace):
    script = TESTS.parent / "scripts" / "smemcap.sh"
    shell = shutil.which("dash") or "sh"
    capture = subprocess.run(pid_namespace.argv([shell, script]), capture_output=True, check=True).stdout
    via_pipe = run_smem("-S", "-", "-w", input=capture)
    (tmp_path / "c.tgz").write_bytes(capture)
    assert via_pipe.returncode == 0 and via_pipe.stdout == run_smem("-S", tmp_path / "c.tgz", "-w").stdout


@pytest.mark.uses("network")
def test_a_host_that_trickles_is_given_up_after_ten_timeouts(tmp_path):
    """A byte every tenth of a second is never a silence of SMEM_SSH_TIMEOUT (1 s: a shell starved
    past 0.5 s on a busy machine once made one): the host is given up on once it is not done
    after ten times that, in one line."""
    trickle = tmp_path / "trickle"
    trickle.write_text("#!/bin/sh\nwhile :; do printf x; sleep 0.1; done\n")
    trickle.chmod(0o755)
    start = time.monotonic()
    proc = run_smem("-S", "ssh://127.0.0.1", env={"SMEM_SSH": str(trickle), "SMEM_SSH_TIMEOUT": "1"})
    assert proc.returncode == 1 and proc.stderr.decode().splitlines() == [
        "smem: ssh://127.0.0.1: the host was not done after 10 s: given up (set SMEM_SSH_TIMEOUT to wait longer)"]
    assert time.monotonic() - start < 60  # (a hang guard, not a timing)
