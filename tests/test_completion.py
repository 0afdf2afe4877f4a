"""Shell completion with click's protocol (what the bash, zsh and fish scripts that
`_SMEM_COMPLETE=bash_source smem` prints run at each <Tab>): through the real entry point once,
then through smem.cli.main in this process, which is what that entry point calls."""

import pytest

from conftest import run_smem, run_smem_process


def complete(line, run=run_smem):
    """What <Tab> at the end of ``line`` offers: (type, value) pairs, as bash_complete answers."""
    words = line.split(" ")
    proc = run(env={"_SMEM_COMPLETE": "bash_complete", "COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1)})
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    return [tuple(item.split(",", 1)) for item in proc.stdout.decode().splitlines()]


@pytest.mark.uses("cpu")
@pytest.mark.process
def test_the_first_word_offers_the_commands_not_the_hidden_report():
    commands = complete("smem ", run=run_smem_process)
    assert commands == complete("smem ")
    assert ("plain", "capture") in commands and ("plain", "diff") in commands and ("plain", "report") not in commands


@pytest.mark.parametrize("line", ["smem -S bo", "smem -K vm", "smem --pie name -o ch", "smem capture -o box",
                                  "smem diff ", "smem diff old.tgz ", "smem serve -S ca", "smem html -o pa"])
def test_file_arguments_offer_file_names(line):
    assert complete(line) == [("file", line.rpartition(" ")[2])]


def test_textfile_offers_directories():
    assert complete("smem serve --textfile /var/lib/") == [("dir", "/var/lib/")]


def test_columns_and_sort_offer_the_fields_of_the_chosen_view():
    assert ("plain", "pss") in complete("smem -c p") and ("plain", "pid") in complete("smem -c p")
    assert ("plain", "pid") not in complete("smem -u -c p")  # users have no pid
    assert complete("smem -c pid,u") == [("plain", "pid,user"), ("plain", "pid,uss")]
    assert complete("smem -m -s ma") == [("plain", "map")]
    assert ("plain", "area") in complete("smem -w -s ")
    assert complete("smem --interval 2 -s dus") == [("plain", "duss")]
    assert ("plain", "old_pss") in complete("smem diff -c old_p")
    assert ("plain", "name") in complete("smem --pie n")
