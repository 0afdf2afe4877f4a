"""Names written for programs (CSV, JSON, OpenMetrics) escape a control character or a byte that
is not UTF-8 as ``\\xNN``; a name that holds the text ``\\x1b`` itself must not come out the same
as one holding ESC.  It did: two programs, named so by anyone (prctl), were one OpenMetrics label
set twice, an invalid exposition (prometheus_client's parser refuses it: ``smem serve``'s scrapes
too; Prometheus drops the duplicate samples), and two rows CSV and JSON could not tell apart.
Such a name is spelt out: its bytes ``\\xNN``, its own backslashes doubled."""

import csv
import io
import json
import subprocess
import sys
import uuid

import pytest

from conftest import run_smem

pytestmark = pytest.mark.uses("cpu")


def _named(name):
    code = (f"import ctypes, sys; ctypes.CDLL(None).prctl(15, {name!r}, 0, 0, 0); "
            "print('ready', flush=True); sys.stdin.read()")
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def test_a_name_holding_backslash_x_is_not_written_as_one_holding_the_byte():
    token = uuid.uuid4().hex[:6].encode()
    names = [token + b"\x1b", token + b"\\x1b", token + b"\xff", token + b"\\xff"]
    children = [_named(name) for name in names]
    try:
        for child in children:
            assert child.stdout.readline() == b"ready\n"
        pids = ",".join(str(child.pid) for child in children)
        outputs = {fmt: run_smem("-g", "--pid", pids, "-c", "name pss", "-F", fmt, check=True).stdout.decode()
                   for fmt in ("csv", "json", "openmetrics")}
    finally:
        for child in children:
            child.stdin.close()
            child.wait(30)
    written = {
        "csv": [row[0] for row in list(csv.reader(io.StringIO(outputs["csv"])))[1:]],
        "json": [row["name"] for row in json.loads(outputs["json"])["rows"]],
        "openmetrics": [line.split('name="', 1)[1].rsplit('"}', 1)[0]
                        for line in outputs["openmetrics"].splitlines() if line.startswith("smem_program_pss_bytes{")],
    }
    for fmt, cells in written.items():
        assert len(cells) == 4 and len(set(cells)) == 4, (fmt, cells)
    t = token.decode()
    assert sorted(written["csv"]) == sorted([f"{t}\\x1b", f"{t}\\\\x1b", f"{t}\\xff", f"{t}\\\\xff"])
    parser = pytest.importorskip("prometheus_client.openmetrics.parser",
                                 reason="smem[metrics]: prometheus_client not installed")
    list(parser.text_string_to_metric_families(outputs["openmetrics"]))  # (a label set twice is refused)
