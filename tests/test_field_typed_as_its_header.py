"""A field typed as the table heads its column (`-s PSS`, `-c "PID Swap"`, `-u -s CPU%`) is
answered with the field's name: the tables say PSS, CPU% and ZramRAM, the fields are pss, cpu and
zram, and the error listed the 48 fields without a word of which was meant (difflib finds no
spelling close to "PSS" in "pss"). Still a usage error: -s and -c take the fields' names."""

import pytest

from conftest import FIXTURES, run_smem

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


@pytest.mark.parametrize("args, said", [
    (["-s", "PSS"], "process view: PSS (did you mean pss?); known: "),
    (["-u", "-s", "CPU%"], "user view: CPU% (did you mean cpu?); known: "),
    (["-c", "PID ZramRAM"], "process view: PID ZramRAM (did you mean pid for PID, zram for ZramRAM?); known: "),
    (["-m", "--bar", "Map", "-o", "x.png"], "mapping view: Map (did you mean map?); known: "),
])
def test_a_field_typed_as_its_header_is_given_its_name(args, said):
    proc = run_smem("-S", CAPTURE, *args)
    (line,) = proc.stderr.decode().splitlines()
    assert proc.returncode == 2 and proc.stdout == b"" and line.startswith(f"smem: unknown field"), line
    assert f" for the {said}" in line, line


def test_a_header_is_not_taken_for_its_field():
    """The suggestion is all: -s sorts by a field's name, as in smem 1.5."""
    assert run_smem("-S", CAPTURE, "-s", "Swap").returncode == 2
