"""smem html's page shows the sources beside the memory, where the reading has them: the tables'
CPU%, GPU and DmaBuf (DRM fdinfo) columns, the cgroup table's memory.pressure, and the header's
memory pressure (the machine's some/full avg10/60/300 and its most stalled cgroups); a reading
without them (a capture without fdinfo, the clock or PSI) has no such column and no pressure box:
absent is not zero.

The tree: tests/fixtures/gpu_proc/tree (the drm-fdinfo-zoo's amdgpu, i915 and dma-buf fdinfo),
with the psi-zoo's recorded /proc/pressure/memory (a clang storm: some avg10 99.47) and cgroup
memory.pressure (some avg10 70.24) for the cgroup of 100 and 101, whose name is markup; the time
since boot (200 s) and 100's stat with 60 s of CPU since it started at 1 s: 30.2% of one core.
"""

import json
import shlex
import shutil

import pytest

from conftest import FIXTURES, run_smem
from page_browser import _no_requests_and_no_errors, _open_file, _texts
from page_documents import CAPTURE, embedded, write_page

pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
pytestmark = pytest.mark.xdist_group("page")

PSI = FIXTURES / "psi"
#: the cgroup of 100 and 101, with a memory.pressure; the others' has none
STALLED = "/user.slice/<img src=x onerror=alert(7)>.scope"
QUIET = "/system.slice/legacy.service"
#: amdgpu client 30, held by 100 and 101: its own vram and gtt split in two (test_device_memory.py)
AMDGPU_HALF = (544428 - 13584 + 22 * 1024) // 2
#: what the page leaves out where no row has a figure of it
SOURCES = {"cpu", "gpu", "dmabuf", "some10", "some60", "some300", "full10", "full60", "full300"}


def _tree(where):
    root = where / "tree"
    shutil.copytree(FIXTURES / "gpu_proc" / "tree", root)
    (root / "pressure").mkdir()
    shutil.copy(PSI / "proc-pressure-memory", root / "pressure" / "memory")
    cgroup = root / "sys" / "fs" / "cgroup" / STALLED.strip("/")
    cgroup.mkdir(parents=True)
    shutil.copy(PSI / "cgroup-memory.pressure", cgroup / "memory.pressure")
    for pid in (100, 101, 102, 103, 104, 105):
        (root / str(pid) / "cgroup").write_text(f"0::{STALLED if pid < 102 else QUIET}\n")
    (root / "uptime").write_text("200.00 350.00\n")
    stat = root / "100" / "stat"  # utime 5000, stime 1000 ticks (USER_HZ 100): 60 s since 1 s
    stat.write_bytes(stat.read_bytes().replace(b" 4202816 0 0 0 0 0 0 ", b" 4202816 0 0 0 0 5000 1000 "))
    return root


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """(path, text) of the page of the tree and of the capture without any of these sources."""
    where = tmp_path_factory.mktemp("sources")
    tree = _tree(where)
    return {name: (str(where / f"{name}.html"), write_page("-S", source, path=str(where / f"{name}.html")))
            for name, source in (("tree", tree), ("capture", CAPTURE))}


def _rows(document, key):
    return {row[key]: row for row in document["rows"]}


def test_the_tables_carry_cpu_gpu_dmabuf_and_cgroup_pressure_where_the_reading_has_them(made):
    data = embedded(made["tree"][1])
    process = _rows(data["process"][0], "pid")
    assert (process[100]["cpu"], process[100]["gpu"], process[100]["dmabuf"]) == (30.2, AMDGPU_HALF, 16 // 3)
    assert process[104]["gpu"] is None and process[104]["dmabuf"] is None  # no client, no buffer: absent
    assert _rows(data["program"][0], "name")["game"]["gpu"] == AMDGPU_HALF
    cgroups = _rows(data["cgroup"][0], "cgroup")
    assert [cgroups[STALLED][k] for k in ("some10", "some60", "some300", "full10", "full60", "full300")] == \
        [70.24, 68.52, 69.91, 57.59, 58.06, 60.38]
    assert cgroups[QUIET]["some10"] is None and cgroups[QUIET]["gpu"] == 109 * 1024 + 10260
    assert data["system"][0]["pressure"]["memory"]["full"]["avg300"] == 91.54
    # each table is what its command prints (the command names the columns shown)
    for name in ("process", "user", "program", "cgroup"):
        document, attrs = data[name]
        assert json.loads(run_smem(*shlex.split(attrs["data-command"])[1:], check=True).stdout) == document


def test_a_reading_without_them_has_no_such_column_and_no_pressure(made):
    data = embedded(made["capture"][1])
    for name in ("process", "user", "program", "cgroup"):
        document, attrs = data[name]
        assert not SOURCES & {c["key"] for c in document["columns"]}, name
        assert not SOURCES & set(shlex.split(attrs["data-command"])[-1].split()), name
    assert "pressure" not in data["system"][0]


def _headers(browser):
    return _texts(browser, "#table thead th")


def _cells(browser, first):
    """The texts of the shown table's row whose first cell is ``first``."""
    return browser.execute_script("""return [...document.querySelectorAll('#table tbody tr')]
        .map((tr) => [...tr.cells].map((td) => td.innerText)).find((cells) => cells[0] === arguments[0])""", first)


def test_the_page_shows_them_with_the_registry_headers_and_help(browser, made):
    from selenium.webdriver.common.by import By
    from smem.views import VIEWS
    _open_file(browser, made["tree"][0])
    headers = _headers(browser)
    assert {"CPU%", "GPU", "DmaBuf"} <= set(headers)
    cells = dict(zip(headers, _cells(browser, "100")))
    assert (cells["CPU%"], cells["GPU"], cells["DmaBuf"]) == ("30.2", "270 MiB", "5 KiB")
    assert dict(zip(headers, _cells(browser, "101")))["CPU%"] == "0.0"  # (one decimal, as 30.2: not "0")
    assert dict(zip(headers, _cells(browser, "104")))["GPU"] == "-"
    totals = dict(zip(headers, _texts(browser, "#table tfoot td")))  # (CPU%'s is under cpu_percent in "totals")
    assert (totals["CPU%"], totals["GPU"]) == ("30.2", "659 MiB"), totals
    # the count smem prints under PID, and the User column's, are the first cell's title: no bare 1 under names
    assert (totals["PID"], totals["User"]) == ("total", ""), totals
    first = browser.find_element(By.CSS_SELECTOR, "#table tfoot td")
    assert first.get_attribute("title") == "6 processes, 1 users"
    help = browser.find_element(By.CSS_SELECTOR, '#table th[data-key="cpu"]').get_attribute("title")
    assert help == VIEWS["process"].columns["cpu"].help
    # the DmaBuf figures are no change (its key starts with d): not coloured as one
    assert not browser.find_elements(By.CSS_SELECTOR, "#table td.grow, #table td.shrink")

    # the header: the machine's pressure, and the cgroup's, its name as text
    box = browser.find_element(By.ID, "pressure")
    assert box.is_displayed()
    assert _texts(browser, "#pressure-machine tbody tr") == ["some\t99.47\t99.37\t99.37", "full\t86.55\t87.90\t91.54"]
    assert _texts(browser, "#pressure-cgroups tbody tr") == [f"{STALLED}\t70.24\t68.52\t69.91\t57.59\t58.06\t60.38"]
    assert _texts(browser, "#pressure-cgroups thead th")[1:] == [
        VIEWS["cgroup"].columns[k].header for k in ("some10", "some60", "some300", "full10", "full60", "full300")]
    assert not browser.find_elements(By.CSS_SELECTOR, "#pressure img")
    browser.find_element(By.CSS_SELECTOR, '#tabs button[data-table="cgroup"]').click()
    assert {"Some10", "Full300", "CPU%", "GPU"} <= set(_headers(browser))
    # a cgroup without memory.pressure: "-", aligned as the figures above and below it are
    quiet = browser.execute_script("""return [...document.querySelectorAll('#table tbody tr')]
        .find((tr) => tr.cells[0].innerText === arguments[0]).querySelector('td:nth-last-child(1)')""", QUIET)
    assert (quiet.text, quiet.get_attribute("class")) == ("-", "num")
    assert browser.find_element(By.ID, "table").size["width"] <= browser.find_element(By.ID, "tables").size["width"]
    _no_requests_and_no_errors(browser)


def test_without_them_the_page_has_no_such_column_and_no_pressure_box(browser, made):
    from selenium.webdriver.common.by import By
    _open_file(browser, made["capture"][0])
    assert not {"CPU%", "GPU", "DmaBuf"} & set(_headers(browser))
    assert not browser.find_element(By.ID, "pressure").is_displayed()
    _no_requests_and_no_errors(browser)


def test_a_table_of_more_rows_than_a_call_takes_arguments_is_drawn(browser, made, tmp_path):
    """The layout of a column of decimals (CPU%) was worked out with Math.max(...figures): a
    table of 130,000 rows (a machine of as many processes) threw RangeError and the page never
    started.  The tree's page with its process document's rows repeated that many times."""
    import re
    text = made["tree"][1]
    found = re.search(r'(<script type="application/json" id="smem-process"[^>]*>)(.*?)(</script>)', text, re.S)
    document = json.loads(found.group(2))
    first = document["rows"][0]
    document["rows"] = [{**first, "pid": 1000 + i, "cpu": 0.5} for i in range(130_000)]
    page = tmp_path / "many.html"
    page.write_text(text[:found.start(2)] + json.dumps(document).replace("</", "<\\/") + text[found.end(2):],
                    encoding="utf-8")
    _open_file(browser, str(page))
    assert _texts(browser, "#table-count")[0].startswith("130000 of 130000 rows")
    assert dict(zip(_headers(browser), _cells(browser, "1000")))["CPU%"] == "0.5"
    _no_requests_and_no_errors(browser)
