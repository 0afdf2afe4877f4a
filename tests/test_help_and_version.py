"""What smem says about itself: -h, --version and the installed man page."""

import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, TESTS, run_smem, run_smem_process

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


def test_group_help_says_what_it_takes():
    """`--group [name]` read as an optional argument; the help names the argument and its value."""
    help_text = " ".join(run_smem("-h").stdout.decode().split())
    assert "--group KEY Group processes by KEY, which is name" in help_text and "[name]" not in help_text
    assert run_smem("-S", CAPTURE, "--group", "name").stdout == run_smem("-S", CAPTURE, "-g").stdout


def test_help_names_the_capture_script_a_pip_user_has():
    """The -h examples pointed at scripts/smemcap.sh, a file a pip install does not have."""
    help_text = run_smem("-h").stdout.decode()
    assert "smemcap.sh" not in help_text and "smem capture --script | ssh box sh > box.tgz" in help_text


def test_version_says_which_smem_and_from_where():
    """With Debian's smem 1.5 installed, a venv not activated runs 1.5: --version names this smem's
    version and the package directory it runs from."""
    import smem
    said = run_smem_process("--version")
    assert said.returncode == 0
    assert said.stdout.decode().startswith(f"smem {smem.__version__} from {os.path.dirname(smem.__file__)} (")


def test_man_page_is_installed_where_man_finds_it():
    import importlib.metadata
    import json
    import shutil
    from pathlib import Path
    import sysconfig
    site = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    dist = next((d for d in importlib.metadata.distributions(path=site) if d.metadata["Name"] == "smem"), None)
    if dist is None:
        pytest.skip("smem is not installed (pip install .)")
    origin = json.loads(dist.read_text("direct_url.json") or "{}")
    if origin.get("dir_info", {}).get("editable"):
        pytest.skip("an editable install does not install data files; CI installs with pip install .")
    page = Path(sys.prefix) / "share" / "man" / "man1" / "smem.1"
    assert page.read_text() == (TESTS.parent / "docs" / "smem.1").read_text()
    if shutil.which("man"):
        env = dict(os.environ, PATH=f"{sys.prefix}/bin:{os.environ.get('PATH', '')}")
        env.pop("MANPATH", None)
        found = subprocess.run(["man", "-w", "smem"], capture_output=True, text=True, env=env)
        assert found.stdout.strip() == str(page), found


@pytest.mark.parametrize("args,line", [
    (["--version", "x"], "smem: unexpected argument 'x': smem takes options only (see 'smem --help')"),
    (["--help", "x"], "smem: unexpected argument 'x': smem takes options only (see 'smem --help')"),
    (["-h", "--", "x"], "smem: unexpected argument 'x': smem takes options only (see 'smem --help')"),
    (["capture", "x", "--help"], "smem: unexpected argument 'x': smem capture takes options only "
                                 "(see 'smem capture --help')"),
    (["diff", "--help", "a", "b", "c"], "smem: unexpected argument 'c': smem diff takes OLD [NEW] "
                                        "(see 'smem diff --help')"),
])
def test_help_and_version_refuse_a_stray_argument(args, line):
    """click ran --help and --version before it looked at the rest: "smem --version x" printed the
    version and exit 0, while "smem --help --bogus" was refused; now a stray word is refused with
    either, as without them (one line on stderr, exit 2, nothing on stdout)."""
    proc = run_smem(*args)
    assert (proc.returncode, proc.stdout, proc.stderr.decode().splitlines()) == (2, b"", [line])


def test_help_takes_a_commands_arguments():
    """What the command takes is no stray argument: smem diff --help OLD NEW is its help."""
    proc = run_smem("diff", "--help", "a", "b")
    assert proc.returncode == 0 and proc.stdout.startswith(b"Usage: smem diff [OPTIONS] OLD [NEW]")


COMMANDS = ["", "capture", "diff", "html", "record", "serve"]


def _help(command, columns):
    proc = run_smem(*([command] if command else []), "--help", env={"COLUMNS": str(columns)})
    assert proc.returncode == 0
    return proc.stdout.decode()


@pytest.mark.parametrize("command", COMMANDS)
def test_help_fits_an_80_column_terminal(command):
    """The examples and other commands under smem --help ran to 106 columns."""
    assert [line for line in _help(command, 80).splitlines() if len(line) > 80] == []


@pytest.mark.parametrize("columns", [50, 60, 70, 80, 90, 100])
@pytest.mark.parametrize("command", COMMANDS)
def test_help_never_breaks_an_option_at_its_hyphen(command, columns):
    """click wraps at hyphens: smem record --help on 80 columns read "--all-" and "frames"."""
    text = _help(command, columns)
    assert [line for line in text.splitlines() if line[-2:-1].isalpha() and line.endswith("-")] == []
    assert "\u2011" not in text


def test_help_ranges_are_written_as_typed():
    """click wrote --timeout's range [0.0<x<=10000000] and --speed's 1000000.0; the man page
    dropped the open bound ([0.0<=x<=...]: 0 is refused)."""
    text = " ".join(_help("", 100).split())
    assert "[0<x<=10000000]" in text and "[0.001<=x<=1000000]" in text and ".0<" not in text
    page = (TESTS.parent / "docs" / "smem.1").read_text()
    assert "[0<x<=10000000]" in page and "0.0<" not in page and "1000000.0" not in page


@pytest.mark.parametrize("command,way", [("", "-S tcp://HOST:PORT"), ("diff", "OLD or NEW tcp://HOST:PORT"),
                                         ("capture", "--listen"), ("record", "--listen")])
def test_timeout_help_names_what_the_command_takes(command, way):
    """Every --timeout said "Over TCP (--listen, -S tcp://)": smem has no --listen, capture no -S."""
    text = " ".join(_help(command, 100).split())
    assert f"--timeout S With {way}: give up" in text


@pytest.mark.parametrize("args,default", [([], "-c 'pid user command swap uss pss rss' -s pss"),
                                          (["--shm"], "-s order"), (["diff", CAPTURE], "-s change")])
def test_field_help_names_the_views_defaults(args, default):
    """-s's help said "default pss; order for -w": --shm sorts by order too and smem diff by the
    change; -c help names the view's own defaults, which -s's help points to."""
    lines = run_smem(*args, "-c", "help").stdout.decode().splitlines()
    assert lines[-1].startswith("By default: -c '") and default in lines[-1]
    assert "-c help names it" in " ".join(_help("", 100).split())


@pytest.mark.parametrize("args,takes", [([], "-c, -s, --pie, --bar"), (["-m"], "-c, -s, --pie, --bar"),
                                        (["diff", CAPTURE], "-c, -s"), (["--interval", "1"], "-c, -s"),
                                        (["-u", "--interval", "1"], "-c, -s")])
def test_field_help_names_only_the_options_that_take_the_fields(args, takes):
    """-c help said "(-c, -s, --pie, --bar)" for smem diff, which has no --pie or --bar, and in
    watch mode, which refuses them: it names what the command takes."""
    first = run_smem(*args, "-c", "help").stdout.decode().splitlines()[0]
    assert first.startswith("Fields of the ") and first.endswith(f" view ({takes}):"), first


def test_shared_with_help_names_every_selection_it_takes():
    """--shared-with's help said "With -P/-U"; --pid is a selection it takes too."""
    assert "--shared-with With -P, -U or --pid:" in " ".join(_help("", 100).split())
    proc = run_smem("-S", CAPTURE, "--shared-with", "--pid", "1")
    assert "needs a selection" not in proc.stderr.decode()


def test_help_says_which_end_the_largest_is_on():
    """smem sorts the smallest first, as smem 1.5, so `smem -m -P chromium | head` showed a
    desktop user the mappings of 0 KiB; -h said only "Reverse the sort"."""
    text = " ".join(_help("", 100).split())
    assert "smallest first: the largest is last" in text
    assert "-r, --reverse Reverse the sort: the largest first (smem -r | head)" in text
