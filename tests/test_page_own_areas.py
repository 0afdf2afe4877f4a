"""Who shares what, on the page: a name each process has for memory of its own ([heap], [stack],
<anonymous>) was counted as shared by every process with one: the panel showed "others 41" beside
a process's [heap] and listed every process as its sharers, which reads as heavy sharing where
there is none.  Such a name is marked each process's own (smem.page.mappings.is_own_area)."""

import pytest

from conftest import FIXTURES
from page_browser import _no_requests_and_no_errors, _open_file, _texts
from page_documents import embedded, write_page

pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
pytestmark = pytest.mark.xdist_group("page")


def test_is_own_area():
    from smem.page.mappings import is_own_area
    assert all(map(is_own_area, ("[heap]", "[stack]", "[stack:1234]", "[anon:libc_malloc]", "<anonymous>")))
    assert not any(map(is_own_area, ("[vdso]", "[vvar]", "/usr/lib/libc.so.6", "/dev/shm/x", "/memfd:y (deleted)",
                                     "[anon_shmem:shared]", "[heapish]")))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("own") / "page.html")
    return path, write_page("-S", FIXTURES / "captures" / "faithful.tar.gz", path=path)


def test_a_processs_own_heap_is_not_shown_as_shared(browser, page):
    data = embedded(page[1])
    names, sharers = data["maps"][0]["names"], data["sharers"][0]["mappings"]
    own = sorted(names[int(k)] for k, v in sharers.items() if v.get("own"))
    assert own == ["<anonymous>", "[heap]", "[stack]"]
    heap = names.index("[heap]")
    pid = next(int(p) for p, rows in data["maps"][0]["processes"].items() if any(r[1] == heap for r in rows))
    _open_file(browser, page[0])
    browser.execute_script("""[...document.querySelectorAll('#table tbody tr')]
        .find((tr) => Number(tr.cells[0].textContent) === arguments[0]).click()""", pid)
    (hint,) = _texts(browser, "#share p.hint")  # (what a user asks of a process: what quitting it frees)
    assert hint.startswith("USS is what quitting it would free"), hint
    rows = {cells.split("\t")[0]: cells.split("\t")[-1] for cells in _texts(browser, "#share tbody tr")}
    assert rows["[heap]"] == "own", rows
    assert any(v.isdigit() and int(v) > 0 for v in rows.values()), rows  # (a library its others map: a count)
    browser.execute_script("""[...document.querySelectorAll('#share tbody tr')]
        .find((tr) => tr.cells[0].innerText === '[heap]').click()""")
    (note,) = _texts(browser, "#share p.own")
    assert note.startswith("Each process has its own [heap]: the processes below have one each"), note
    _no_requests_and_no_errors(browser)
