"""A value typed in capitals (`-F JSON`, `--compression GZ`) is answered with its spelling: the
error listed smem's forty formats and left the user to find json among them (difflib finds no
close spelling of "JSON" in "json"). Still a usage error: the values are lowercase, as documented."""

import pytest

from conftest import FIXTURES, run_smem

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


@pytest.mark.parametrize("args, said", [
    (["-S", CAPTURE, "-F", "JSON"], "smem: -F/--format: no such value 'JSON'; did you mean json?"),
    (["-S", CAPTURE, "-F", "CSV"], "smem: -F/--format: no such value 'CSV'; did you mean csv?"),
    (["capture", "--compression", "GZ", "-o", "x.tgz"],
     "smem: --compression takes gz, bz2, xz, zst or none, not 'GZ'; did you mean gz?"),
])
def test_a_value_in_capitals_is_given_its_spelling(args, said):
    proc = run_smem(*args)
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().startswith(said), proc.stderr
