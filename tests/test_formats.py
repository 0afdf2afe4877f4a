"""Output for programs and people: json, csv, openmetrics and table formats read back and compared
with the classic table on the same capture; the man page; quiet broken pipes."""

import csv
import io
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import FIXTURES, TESTS, run_smem

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


def classic_rows(*args):
    proc = run_smem("-S", CAPTURE, "-H", *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode().splitlines()


@pytest.mark.uses("cpu")
def test_json_rows_are_the_classic_rows_as_raw_integers():
    cols = "pid user swap uss pss rss vss maps"
    doc = json.loads(run_smem("-S", CAPTURE, "-F", "json", "-c", cols, "-t").stdout)
    assert doc["view"] == "process" and doc["units"] == {"amounts": "KiB"}
    assert doc["source"]["hostname"] and doc["source"]["pagesize"] == 4096
    assert [c["key"] for c in doc["columns"]] == cols.split()
    classic = [l.split() for l in classic_rows("-c", cols)]
    assert [[str(r[k]) for k in cols.split()] for r in doc["rows"]] == classic
    totals = dict(zip(cols.split(), classic_rows("-c", cols, "-t")[-1].split()))
    # totals say what they count: processes and users, not a pid and a user name
    assert set(doc["totals"]) == {"processes", "users", "swap", "uss", "pss", "rss", "vss", "maps"}
    assert str(doc["totals"]["processes"]) == totals["pid"] == str(len(doc["rows"]))
    assert str(doc["totals"]["users"]) == totals["user"] == str(len({r["user"] for r in doc["rows"]}))
    assert [str(doc["totals"][k]) for k in cols.split()[2:]] == [totals[k] for k in cols.split()[2:]]
    # -k asked for: the strings the table shows
    human = json.loads(run_smem("-S", CAPTURE, "-F", "json", "-c", "pid pss", "-k").stdout)
    assert [r["pss"] for r in human["rows"]] == [l.split()[1] for l in classic_rows("-c", "pid pss", "-k")]


def test_csv_reads_back_with_the_csv_module():
    cols = "pid user command uss pss"
    text = run_smem("-S", CAPTURE, "-F", "csv", "-c", cols).stdout.decode()
    assert "\r\n" in text  # RFC 4180 line ends
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == cols.split()
    by_pid = {r[0]: r for r in rows[1:]}
    for line in classic_rows("-c", cols):
        f = line.split()
        r = by_pid[f[0]]
        assert (r[1], r[3], r[4]) == (f[1], f[-2], f[-1])
        assert r[2].startswith(line[15:42].rstrip())  # the full command, where the table cuts it
    long = [r for r in rows[1:] if len(r[2]) > 1000]
    assert long, "the capture holds a command line over 1000 characters"
    # -t: a row no program takes for one more process
    totalled = list(csv.reader(io.StringIO(run_smem("-S", CAPTURE, "-F", "csv", "-c", cols, "-t").stdout.decode())))
    assert totalled[:-1] == rows
    classic_total = classic_rows("-c", cols, "-t")[-1].split()
    assert totalled[-1] == ["total", "", "", classic_total[-2], classic_total[-1]]


def test_openmetrics_parses_and_matches():
    parser = pytest.importorskip("prometheus_client.openmetrics.parser",
                                 reason="smem[metrics]: prometheus_client not installed")
    text = run_smem("-S", CAPTURE, "-F", "openmetrics").stdout.decode()
    families = {f.name: f for f in parser.text_string_to_metric_families(text)}
    pss = {s.labels["pid"]: s.value for s in families["smem_process_pss_bytes"].samples}
    assert families["smem_process_pss_bytes"].unit == "bytes" and families["smem_process_pss_bytes"].type == "gauge"
    for line in classic_rows("-c", "pid pss"):
        pid, value = line.split()
        assert pss[pid] == int(value) * 1024
    users = {s.labels["user"]: s.value for s in families["smem_user_pss_bytes"].samples}
    for line in classic_rows("-u", "-c", "user pss"):
        user, value = line.split()
        assert users[user] == int(value) * 1024
    areas = {s.labels["area"]: s.value for s in families["smem_system_used_bytes"].samples}
    assert "free memory" in areas and len(areas) == 5
    # also valid for the classic Prometheus text parser (node_exporter's textfile collector)
    from prometheus_client.parser import text_string_to_metric_families
    assert any(f.name.startswith("smem_process_pss") for f in text_string_to_metric_families(text))


@pytest.mark.parametrize("fmt", ["simple", "github", "grid", "markdown", "rst", "psql"])
def test_table_formats_hold_the_classic_cells(fmt):
    out = run_smem("-S", CAPTURE, "-F", fmt, "-c", "pid user pss", "-k", "-t").stdout.decode()
    cells = [[c for c in re.split(r"[|\s]+", l) if c] for l in out.splitlines()]
    rows = [c for c in cells if len(c) == 3 and c[0].isdigit()]
    assert rows == [l.split() for l in classic_rows("-c", "pid user pss", "-k")], fmt
    total = classic_rows("-c", "pid user pss", "-k", "-t")[-1].split()
    assert [c for c in cells if c and c[0] == "total"] == [["total", total[-1]]], fmt  # labelled, sums only


def test_tsv_is_the_classic_cells_a_tab_apart_and_nothing_else():
    """For programs: no cell padded to its column's width (tabulate's tsv wrote " 361" and
    "head   "), and no line under the rows (the notes, read as rows): --recommend's answer goes to
    standard error, as CSV's does."""
    out = run_smem("-S", CAPTURE, "-F", "tsv", "-c", "pid user name pss", "-k", "-t").stdout.decode()
    lines = [line.split("\t") for line in out.splitlines()]
    assert lines[0] == ["PID", "User", "Name", "PSS"]
    assert all(len(cells) == 4 and all(c == c.strip() for c in cells) for cells in lines)
    assert [" ".join(cells) for cells in lines[1:-1]] == [" ".join(r.split()) for r in classic_rows("-c", "pid user name pss", "-k")]
    total = classic_rows("-c", "pid user name pss", "-k", "-t")[-1].split()
    assert lines[-1] == ["total", "", "", total[-1]]
    # and every value whole, as CSV's (the classic table cuts a command line at 27 without -a)
    tsv = [line.split("\t") for line in run_smem("-S", CAPTURE, "-F", "tsv", "-c", "pid command").stdout.decode().splitlines()]
    whole = {row["pid"]: row["command"] for row in csv.DictReader(io.StringIO(
        run_smem("-S", CAPTURE, "-F", "csv", "-c", "pid command").stdout.decode()))}
    printable = {pid: command for pid, command in whole.items() if command.isprintable() and "\\x" not in command}
    assert max(map(len, printable.values())) > 27
    assert {pid: command for pid, command in tsv[1:] if pid in printable} == printable
    system = run_smem("-S", CAPTURE, "-w", "--recommend", "-F", "tsv")
    assert [line.split("\t")[0] for line in system.stdout.decode().splitlines()] == [
        "Area", "firmware/hardware", "kernel image", "kernel dynamic memory", "userspace memory", "free memory"]
    assert system.stderr.decode().startswith("smem: needs ") and system.stderr.count(b"\n") == 1


def test_tsv_in_watch_mode_is_one_header_then_rows_led_by_their_frame():
    """Watched, tsv was the table under a '# TIME frame N' line per frame, a blank line between
    frames, the header again each time: all read as rows by a program.  As CSV: one header, the
    frame's time and number first in each row."""
    res = run_smem("--pid", str(os.getpid()), "-c", "pid pss dpss", "-k", "-t", "-F", "tsv",
                   "--interval", "0.1", "--count", "2")
    assert res.returncode == 0, res.stderr
    lines = [line.split("\t") for line in res.stdout.decode().splitlines()]
    assert lines[0] == ["Timestamp", "Frame", "PID", "PSS", "dPSS"]
    assert [cells[1:3] for cells in lines[1:]] == [["1", str(os.getpid())], ["1", "total"],
                                                     ["2", str(os.getpid())], ["2", "total"]]
    assert all(len(cells) == 5 and re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:]+Z", cells[0]) for cells in lines[1:])


def test_html_is_a_table():
    out = run_smem("-S", CAPTURE, "-F", "html", "-c", "pid pss").stdout.decode()
    assert out.startswith("<table>") and out.count("<tr>") == len(classic_rows("-c", "pid pss")) + 1


@pytest.mark.uses("cpu")
def test_group_by_program_adds_up_the_processes():
    # names may hold spaces ("odd näme"): the name column is 24 wide
    groups = {l[:24].rstrip(): l[25:].split() for l in classic_rows("-g", "-c", "name count uss pss rss")}
    procs = [[l[:24].rstrip()] + l[25:].split() for l in classic_rows("-c", "name uss pss rss")]
    for name, (count, uss, pss, rss) in groups.items():
        mine = [p for p in procs if p[0] == name]
        assert int(count) == len(mine), name
        assert int(pss) == sum(int(p[2]) for p in mine)
        assert int(uss) == sum(int(p[1]) for p in mine)
    assert int(groups["smem-shm-c"][0]) == 4  # the shm server's four clients
    assert classic_rows("--group", "name") == classic_rows("-g")


@pytest.mark.uses("cpu")
def test_all_columns():
    doc = json.loads(run_smem("-S", CAPTURE, "-F", "json", "-c", "all", "-P", "smem-swapped").stdout)
    from smem.views import VIEWS
    process = VIEWS["process"]
    keys = [c["key"] for c in doc["columns"]]
    others = [k for k, c in process.columns.items() if "exact" not in c.needs and "wss" not in c.needs]
    assert keys == list(process.default_columns) + [k for k in others if k not in process.default_columns]
    (row,) = doc["rows"]
    # the same process, column by column, as the classic table shows it (from smaps: -c all
    # has per-mapping columns, and "maps" keeps the classic table off smaps_rollup too)
    for key in ("pid", "maps", "swap", "uss", "pss", "rss", "vss", "swappss", "anon", "threads", "ppid"):
        (line,) = classic_rows("-c", f"{key} maps", "-P", "smem-swapped")
        assert str(row[key]) == line.split()[0], key
    assert row["swap"] > 0 and row["swappss"] > 0  # the capture's process with pages in swap


@pytest.mark.uses("cpu")
@pytest.mark.process
def test_broken_pipe_is_quiet():
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    pipeline = subprocess.run(f"{sys.executable} -m smem -S {CAPTURE} -m -c 'map pss' | head -1",
                              shell=True, capture_output=True, cwd=TESTS.parent, env=env)
    assert pipeline.stdout.startswith(b"Map") and pipeline.stdout.count(b"\n") == 1
    assert pipeline.stderr == b""
    proc = subprocess.Popen([sys.executable, "-m", "smem", "-S", CAPTURE, "-m"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=TESTS.parent, env=env)
    proc.stdout.close()  # nobody reads
    assert proc.wait(timeout=60) == 0 and proc.stderr.read() == b""


@pytest.mark.uses("cpu")
@pytest.mark.process
def test_man_page_is_generated_from_the_cli():
    committed = (TESTS.parent / "docs" / "smem.1").read_text()
    # A fresh interpreter: smem.manpage's output changes once the command line has run in the
    # process (click keeps the help option made with -h; the page then lists "-h, --help").
    fresh = subprocess.run([sys.executable, "-m", "smem.manpage"], capture_output=True, text=True,
                           cwd=TESTS.parent, check=True).stdout
    assert fresh == committed, "docs/smem.1 is stale: python -m smem.manpage > docs/smem.1"
    for option in ("--no-header", "--format", "--recommend", "--pie", "--group", "--source"):
        assert option.replace("-", "\\-") in committed
    # its SYNOPSIS says what each command's --help says: an optional argument in brackets
    synopsis = committed.split(".SH SYNOPSIS\n")[1].split(".SH")[0]
    lines = [re.sub(r"\\f[BIR]", "", line) for line in synopsis.splitlines() if line != ".br"]
    for line in lines[1:]:
        command = line.split()[1]
        usage = run_smem(command, "--help").stdout.decode().splitlines()[0]
        assert usage == "Usage: " + line, (usage, line)


def test_help_has_examples_and_exit_codes():
    out = run_smem("--help").stdout.decode()
    assert "Examples:" in out and "Exit status:" in out and "smem -t -k" in out
    assert run_smem("capture", "--help").returncode == 0


def test_table_formats_are_tabulates():
    import tabulate
    from smem.formats import TABLE_FORMATS
    assert set(TABLE_FORMATS) - {"markdown"} <= set(tabulate.tabulate_formats)


@pytest.mark.uses("cpu")
@pytest.mark.process
def test_text_reports_import_neither_matplotlib_nor_numpy_nor_tabulate():
    for args in (["--help"], ["-S", str(CAPTURE), "-c", "pid pss"], ["-S", str(CAPTURE), "-u", "-t", "-k"]):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "smem", *args], capture_output=True,
                              cwd=TESTS.parent)
        imported = {l.split("|")[-1].strip() for l in proc.stderr.decode().splitlines() if "|" in l}
        assert not {"matplotlib", "numpy", "tabulate"} & imported, args


def _named_process_outputs(name, arg, formats, by_pid=False, wide=False):
    """(pid, {format: smem's bytes}) of a process named ``name`` (bytes: prctl PR_SET_NAME) whose
    command line ends in ``arg`` (bytes, or None for none), picked out by a token in its command
    line (or ``by_pid``); ``wide`` adds "wide": -a of pid, name and command."""
    import uuid
    token = uuid.uuid4().hex[:12]
    code = (f"import ctypes, sys; ctypes.CDLL(None).prctl(15, {name!r}, 0, 0, 0); "
            "print('ready', flush=True); sys.stdin.read()")
    argv = [sys.executable.encode(), b"-c", code.encode()] + ([token.encode() + arg] if arg is not None else [])
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    which = ("--pid", str(child.pid)) if by_pid else ("-P", token)
    try:
        assert child.stdout.readline() == b"ready\n"
        outputs = {fmt: run_smem(*which, "-c", "pid name command pss", "-F", fmt).stdout for fmt in formats}
        if wide:
            outputs["wide"] = run_smem(*which, "-c", "pid name command", "-a").stdout
    finally:
        child.stdin.close()
        child.wait(30)
    return child.pid, token, outputs


def test_control_characters_never_reach_programs_raw():
    """ESC, BEL and CR in a process name or command line are escaped in CSV and OpenMetrics
    (JSON escapes them itself; the tables show ?)."""
    pid, token, outputs = _named_process_outputs(b"e\x1bb\x07r\r", b"\x1b[31m\x07\r",
                                                 ("csv", "openmetrics", "json", "classic", "github"))
    for fmt, out in outputs.items():
        assert str(pid).encode() in out, fmt
        assert not set(out) & {0x1b, 0x07, 0x0d} - ({0x0d} if fmt == "csv" else set()), fmt
    (row,) = list(csv.reader(io.StringIO(outputs["csv"].decode())))[1:]
    assert row[1] == "e\\x1bb\\x07r\\x0d" and row[2].endswith(token + "\\x1b[31m\\x07\\x0d")
    assert 'name="e\\\\x1bb\\\\x07r\\\\x0d"' in outputs["openmetrics"].decode()
    doc = json.loads(outputs["json"])
    assert doc["rows"][0]["name"] == "e\x1bb\x07r\r"  # JSON's own escapes, read back whole


@pytest.mark.uses("cpu")
def test_c1_control_characters_are_controls_too():
    """CSI and OSC have 8-bit forms, U+009B and U+009D, which a terminal taking 8-bit controls
    obeys, as it does the bytes 0x9B and 0x9D in a name that is not UTF-8: the tables show ? for
    them as for ESC (as ps does), CSV and OpenMetrics write the character's bytes, \\xc2\\x9b (to tell
    it from the byte 0x9B, \\x9b: tests/test_label_values.py)."""
    pid, token, outputs = _named_process_outputs(b"c\xc2\x9b2J\x9d0;T", b"\xc2\x9b2J\x9b2J",
                                                 ("classic", "github", "csv", "openmetrics", "json"), wide=True)
    wide = outputs.pop("wide")
    c1 = {*range(0x80, 0xA0), *range(0xDC80, 0xDCA0)}  # (as characters, and as bytes not UTF-8)
    for fmt in ("classic", "github", "wide"):  # (with nothing else in the names, valid UTF-8)
        (outputs.get(fmt) or wide).decode()
    for fmt, out in [*outputs.items(), ("wide", wide)]:
        assert str(pid).encode() in out, fmt
        assert not {ord(c) for c in out.decode("utf-8", "surrogateescape")} & c1, (fmt, out)
    (line,) = [l for l in wide.decode().splitlines() if l.split()[:1] == [str(pid)]]
    assert "c?2J?0;T" in line and line.rstrip().endswith(token + "?2J?2J")
    (row,) = list(csv.reader(io.StringIO(outputs["csv"].decode())))[1:]
    assert row[1] == "c\\xc2\\x9b2J\\x9d0;T" and row[2].endswith(token + "\\xc2\\x9b2J\\x9b2J")
    assert 'name="c\\\\xc2\\\\x9b2J\\\\x9d0;T"' in outputs["openmetrics"].decode()
    # JSON escapes U+009B itself (read back whole); the byte 0x9D, not UTF-8, is written \x9d
    assert json.loads(outputs["json"])["rows"][0]["name"] == "c\u009b2J\\x9d0;T"


def test_bidirectional_controls_in_a_name_do_not_reorder_a_tables_line():
    """A name holding U+202E (right-to-left override) showed the rest of its row reversed in a
    terminal that lays text out both ways (its figures read backwards); the tables show ? for each
    bidirectional control, as for a control character.  CSV and JSON hold the name as it is."""
    pid, token, outputs = _named_process_outputs("r\u202eevil".encode(), "\u2067x\u200f".encode(),
                                                 ("classic", "github", "csv", "json"), wide=True)
    outputs = {fmt: out.decode() for fmt, out in outputs.items()}
    wide = outputs.pop("wide")
    for fmt, out in [*outputs.items(), ("wide", wide)]:
        assert str(pid) in out, fmt
    for out in (outputs["classic"], outputs["github"], wide):
        assert not set(out) & {"\u202e", "\u2067", "\u200f"}, out
        assert "r?evil" in out
    (line,) = [l for l in wide.splitlines() if l.split()[:1] == [str(pid)]]
    assert line.rstrip().endswith(token + "?x?")
    (row,) = list(csv.reader(io.StringIO(outputs["csv"])))[1:]
    assert row[1] == "r\u202eevil" and row[2].endswith(token + "\u2067x\u200f")
    assert json.loads(outputs["json"])["rows"][0]["name"] == "r\u202eevil"


def test_a_bar_in_a_name_stays_in_its_markdown_cell():
    """A process named a|b|c: in the Markdown styles its cell is a\\|b\\|c (rendered a|b|c), so
    the row keeps as many cells as the header; the other styles show the name as it is."""
    pid, _, outputs = _named_process_outputs(b"a|b|c", None, ("github", "markdown", "psql"), by_pid=True)
    outputs = {fmt: out.decode() for fmt, out in outputs.items()}
    for fmt in ("github", "markdown"):
        header, _, row = outputs[fmt].splitlines()
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert cells[:2] == [str(pid), "a\\|b\\|c"] and len(cells) == header.count("|") - 1, (fmt, row)
    assert " a|b|c " in outputs["psql"]


def test_a_totals_row_keeps_every_sum_whatever_the_column_order():
    rows = list(csv.reader(io.StringIO(run_smem("-S", CAPTURE, "-F", "csv", "-t", "-c", "pss pid name").stdout.decode())))
    pss = classic_rows("-c", "pss", "-t")[-1].split()[0]
    assert rows[-1] == [pss, "total", ""]  # the sum stays; the marker goes where no sum is
    only = list(csv.reader(io.StringIO(run_smem("-S", CAPTURE, "-F", "csv", "-t", "-c", "pss uss").stdout.decode())))
    assert only[0] == ["", "pss", "uss"] and all(r[0] == "" for r in only[1:-1])  # every column a sum:
    assert only[-1][0] == "total" and only[-1][1] == pss                               # a column for it
    table = run_smem("-S", CAPTURE, "-F", "github", "-t", "-c", "pss uss").stdout.decode().splitlines()
    assert table[-1].split("|")[1].strip() == "total" and table[-1].split("|")[2].strip() == pss


def test_percent_of_swap_without_swap_is_absent_not_a_figure():
    """-p of swap on a machine with no swap (SwapTotal 0) is a share of nothing: JSON's null and
    CSV's empty cell, as any absent figure, never "-" or 0.00%; the classic table shows "-"."""
    tree = FIXTURES / "gpu_proc" / "tree"
    doc = json.loads(run_smem("-S", tree, "-p", "-t", "-F", "json", "-c", "pid swap pss", check=True).stdout)
    assert doc["rows"] and {r["swap"] for r in doc["rows"]} == {None}
    assert all(r["pss"].endswith("%") for r in doc["rows"])
    assert doc["totals"]["swap"] is None
    rows = list(csv.reader(io.StringIO(run_smem("-S", tree, "-p", "-t", "-F", "csv", "-c", "pid swap pss",
                                                check=True).stdout.decode())))
    assert rows[0] == ["pid", "swap", "pss"] and {r[1] for r in rows[1:]} == {""}
    classic = run_smem("-S", tree, "-p", "-H", "-c", "pid swap", check=True).stdout.decode().split()
    assert classic[1::2] and set(classic[1::2]) == {"-"}
