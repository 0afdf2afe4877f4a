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
