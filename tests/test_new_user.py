"""What a new user trips on (issue 15): conflicting options, empty values, suggestions, -c all,
-S - on a terminal, and the --exact totals' footnote."""

import os
import subprocess
import sys

import pytest

import smem.cli

from conftest import FIXTURES, TESTS, run_smem, run_smem_process

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


def _usage_error(proc):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("smem: ") and proc.stdout == b"", lines
    return lines[0]


@pytest.mark.parametrize("views", [["-w", "-m"], ["-m", "-u"], ["-u", "-g"], ["--cgroup", "-w"]])
def test_two_views_are_a_usage_error(views):
    line = _usage_error(run_smem("-S", CAPTURE, *views))
    assert "choose one view" in line and all(v in line for v in views)


@pytest.mark.parametrize("args,words", [
    (["-c", ""], "-c/--columns is empty"),
    (["-c", " , "], "-c/--columns is empty"),
    (["-o", "x.png"], "use it with --pie or --bar"),
    (["--pie", "name", "--bar", "name", "-o", "x.png"], "choose one chart"),
])
def test_empty_or_conflicting_values_are_usage_errors(args, words):
    assert words in _usage_error(run_smem("-S", CAPTURE, *args))


def test_an_unknown_option_suggests_only_a_near_one():
    assert "did you mean" not in _usage_error(run_smem("--bogus"))
    assert "did you mean --totals?" in _usage_error(run_smem("--tota"))
    assert "did you mean --columns?" in _usage_error(run_smem("--column", "pid"))
    assert "did you mean --compression?" in _usage_error(run_smem("capture", "--compresion", "gz"))


def test_all_columns_start_with_the_defaults_in_their_order():
    header = run_smem("-S", CAPTURE, "-c", "all").stdout.decode().splitlines()[0].split()
    defaults = run_smem("-S", CAPTURE).stdout.decode().splitlines()[0].split()
    assert header[:len(defaults)] == defaults and header.index("PSS") < header.index("RSS")
    assert len(header) > len(defaults) + 10


def test_reading_a_capture_from_a_terminal_is_refused():
    import pty
    master, slave = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "smem", "-S", "-"], stdin=slave, capture_output=True,
                              cwd=TESTS.parent, timeout=30)
    finally:
        os.close(master)
        os.close(slave)
    assert "standard input, which is a terminal" in _usage_error(proc)


def test_exact_totals_say_they_are_one_group():
    pytest.importorskip("numpy", reason="--exact needs smem[exact]")
    proc = run_smem("--exact", "-u", "-t")
    if b"showing the smaps figures" in proc.stderr:
        pytest.skip("exact accounting is not available here (root and /proc/kpagecount)")
    lines = proc.stdout.decode().splitlines()
    assert proc.returncode == 0 and lines[-1].startswith("totals: the processes of all rows as one group")
    plain = run_smem("-u", "-t").stdout.decode().splitlines()
    assert not plain[-1].startswith("totals:")


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


def test_capture_script_prints_the_shell_script_that_captures(tmp_path):
    script = run_smem("capture", "--script")
    assert script.returncode == 0 and script.stdout == (TESTS.parent / "scripts" / "smemcap.sh").read_bytes()
    shell = "dash" if subprocess.run(["which", "dash"], capture_output=True).returncode == 0 else "sh"
    capture = tmp_path / "box.tgz"
    with open(capture, "wb") as out:
        assert subprocess.run([shell], input=script.stdout, stdout=out, timeout=120).returncode == 0
    assert run_smem("-S", capture, "-u").returncode == 0


def test_capture_in_zstd_reads_back(tmp_path):
    pytest.importorskip("zstandard")
    capture = tmp_path / "box.tar.zst"
    assert run_smem("capture", "--compression", "zst", "-o", capture).returncode == 0
    assert capture.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    report = run_smem("-S", capture, "-w")
    assert report.returncode == 0 and b"free memory" in report.stdout


@pytest.mark.parametrize("args,words", [
    (["capture", "--script", "-o", "x.sh"], "it takes no -o"),
    (["capture", "--script", "--compression", "xz"], "it takes no --compression"),
    (["capture", "--force"], "use it with -o"),
    (["--force"], "use it with -o"),
    (["--pie", "", "-o", "x.png"], "unknown field"),
])
def test_options_that_would_be_ignored_are_usage_errors(args, words):
    assert words in _usage_error(run_smem(*args))


def test_chart_signatures_say_more_than_the_container(tmp_path):
    from smem.charts import _holds_chart
    assert _holds_chart("svg")(b'<?xml version="1.0"?>\n<svg xmlns=...') and not _holds_chart("svg")(b"<?xml?><html>")
    assert _holds_chart("webp")(b"RIFF\0\0\0\0WEBPVP8 ") and not _holds_chart("webp")(b"RIFF\0\0\0\0WAVEfmt ")
    import gzip
    assert _holds_chart("svgz")(gzip.compress(b"<?xml?><svg>")) and not _holds_chart("svgz")(gzip.compress(b"tar"))


def test_group_help_says_what_it_takes():
    """`--group [name]` read as an optional argument; the help names the argument and its value."""
    help_text = " ".join(run_smem("-h").stdout.decode().split())
    assert "--group KEY Group processes by KEY, which is name" in help_text and "[name]" not in help_text
    assert run_smem("-S", CAPTURE, "--group", "name").stdout == run_smem("-S", CAPTURE, "-g").stdout


@pytest.mark.parametrize("args,line", [
    (["diff"], "smem: missing OLD: smem diff takes OLD [NEW] (see 'smem diff --help')"),
    (["diff", CAPTURE], f"smem: smem diff compares OLD and NEW, or the first and last frames of a recording: "
                        f"{CAPTURE} is not one"),
    (["diff", CAPTURE, CAPTURE, "x"], "smem: unexpected argument 'x': smem diff takes OLD [NEW] (see 'smem diff --help')"),
    (["-t", "x"], "smem: unexpected argument 'x': smem takes options only (see 'smem --help')"),
    (["frobnicate"], "smem: no command 'frobnicate'; the commands: "
                     f"{', '.join(n for n, c in smem.cli.cli.commands.items() if not c.hidden)} (see 'smem --help')"),
    (["captur"], "smem: no command 'captur'; did you mean capture? (see 'smem --help')"),
    (["--group"], "smem: --group takes a value: --group KEY (see 'smem --help')"),
    (["--group", "user"], "smem: --group takes name, not 'user'"),
    (["--totals=1"], "smem: --totals takes no value (see 'smem --help')"),
    (["capture", "-o"], "smem: -o takes a value: -o FILE (see 'smem capture --help')"),
    (["-F", "jsn"], "smem: -F/--format: no such value 'jsn'; did you mean json? (the values: 'man smem')"),
    (["--interval", "1", "--count", "0"], "smem: --count: 0 is not in the range x>=1 (see 'smem --help')"),
])
def test_click_errors_are_in_smems_words(args, line):
    """One style: click's own messages (Missing argument 'OLD'., Got unexpected extra argument)
    reworded as smem's lowercase one-liners, misspelt commands suggested as options are."""
    assert _usage_error(run_smem(*args)) == line


@pytest.mark.parametrize("name,magic", [("gzip", b"\x1f\x8b"), ("bzip2", b"BZh"), ("zstd", b"\x28\xb5\x2f\xfd")])
def test_compression_takes_the_names_of_the_programs(name, magic, tmp_path):
    """--compression zstd was refused (only zst): the program names people know are aliases."""
    if name == "zstd":
        pytest.importorskip("zstandard")
    capture = tmp_path / "box.tar"
    assert run_smem("capture", "--compression", name, "-o", capture).returncode == 0
    assert capture.read_bytes().startswith(magic)
    assert run_smem("-S", capture, "-u").returncode == 0


def test_version_says_which_smem_and_from_where():
    """With Debian's smem 1.5 installed, a venv not activated runs 1.5: --version names this smem's
    version and the package directory it runs from."""
    import smem
    said = run_smem_process("--version")
    assert said.returncode == 0
    assert said.stdout.decode().startswith(f"smem {smem.__version__} from {os.path.dirname(smem.__file__)} (")


def test_help_names_the_capture_script_a_pip_user_has():
    """The -h examples pointed at scripts/smemcap.sh, a file a pip install does not have."""
    help_text = run_smem("-h").stdout.decode()
    assert "smemcap.sh" not in help_text and "smem capture --script | ssh box sh > box.tgz" in help_text
