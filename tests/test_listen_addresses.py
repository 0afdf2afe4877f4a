"""An address smem is told to listen on and cannot: one line and one exit status, whichever command.

``smem serve --listen``, ``smem capture --listen``, ``smem record --listen`` and ``-S tcp://``
take the same HOST:PORT; a value not of that form is a usage error (2), and a host that does not
resolve is a runtime failure like a port in use or an address not of this machine (1).  serve
said 2 for the unresolvable host and the others 1."""

import importlib.util
import os

import pytest

from conftest import FIXTURES, run_smem

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"

#: a name that never resolves (RFC 6761 reserves .invalid)
NOWHERE = "no.such.host.invalid:9000"


@pytest.mark.parametrize("command", [
    pytest.param(["serve", "-S", str(CAPTURE), "--listen", NOWHERE],
                 marks=pytest.mark.skipif(importlib.util.find_spec("prometheus_client") is None,
                                          reason="smem serve needs smem[metrics] (prometheus_client)")),
    ["capture", "--listen", NOWHERE, "-o", "{tmp}/box.tgz"],
    ["record", "--listen", NOWHERE, "-o", "{tmp}/rec"],
    ["-S", f"tcp://{NOWHERE}", "-u"],
], ids=["serve", "capture", "record", "tcp-source"])
def test_a_host_that_does_not_resolve_is_one_line_and_exit_1(tmp_path, command):
    proc = run_smem(*(word.format(tmp=tmp_path) for word in command))
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, lines
    assert lines[0].startswith(f"smem: cannot listen on {NOWHERE}: "), lines
    assert os.listdir(tmp_path) == []  # (no -o file, no recording's directory)


@pytest.mark.parametrize("option, address, said, not_said", [
    (["serve", "--listen"], "127.0.0.1:99999", "the port is a number from 0 to 65535", "host is required"),
    (["capture", "--listen"], "[::1]:70000", "the port is a number from 0 to 65535", "host is required"),
    (["serve", "--listen"], "127.0.0.1:http", "the port is a number from 0 to 65535", "host is required"),
    (["-S"], "tcp://127.0.0.1:", "the port is a number from 0 to 65535", "host is required"),
    (["serve", "--listen"], ":9464", "the host is required", "the port is"),
    (["capture", "--listen"], "5555", "the host is required", "the port is"),
    (["-S"], "tcp://nohost", "the port is required", "host is required"),
], ids=["port-too-large", "ipv6-port-too-large", "port-a-name", "port-missing", "host-missing",
        "port-alone", "host-alone"])
def test_a_wrong_address_names_the_part_that_is_wrong(option, address, said, not_said):
    """A port out of range was answered 'the host is required' beside a host given in full."""
    proc = run_smem(*option, address)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, lines
    assert said in lines[0] and not_said not in lines[0], lines
