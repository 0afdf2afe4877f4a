"""A chart saved by a user whose home is not writable (nobody, a service with ProtectHome):
matplotlib's own two warnings (its config directory could not be made, a temporary one is used)
came out on stderr beside smem's one-line messages; the chart is saved and stderr says nothing."""

import pytest

from conftest import FIXTURES, run_smem_process

pytestmark = pytest.mark.uses("charts")

pytest.importorskip("matplotlib")

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


def test_a_home_matplotlib_cannot_write_in_leaves_stderr_empty(tmp_path):
    chart = tmp_path / "pie.png"
    # (a file for a home: no directory can be made under it, not even by root)
    env = {"HOME": "/proc/version", "MPLCONFIGDIR": "", "XDG_CONFIG_HOME": "", "XDG_CACHE_HOME": ""}
    proc = run_smem_process("-S", CAPTURE, "--pie", "name", "-o", chart, env=env)
    assert proc.returncode == 0 and chart.stat().st_size > 0, proc.stderr
    assert proc.stderr == b"", proc.stderr.decode()
