"""smem html's tables: each figure of the total row sits under its column, right-aligned as the
figures above it.  The total of a column that is not an amount of memory (the processes' Maps,
a group's Count, CPU%) was left-aligned, so "42" under Count stood apart from the 7 and 9 above
it, as if it were another column's.
"""

import pytest

from page_browser import _no_requests_and_no_errors, _open_file

pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
pytestmark = pytest.mark.xdist_group("page")

#: script: [header, whether the header is right-aligned, whether the total's cell is] of each column
#: whose total is not empty, of the shown table
ALIGNED = """const heads = [...document.querySelectorAll('#table thead th')];
    const totals = [...document.querySelectorAll('#table tfoot td')];
    const right = (e) => getComputedStyle(e).textAlign === 'right';
    return heads.map((h, i) => [h.innerText, right(h), right(totals[i]), totals[i].innerText])
        .filter((r, i) => i > 0 && r[3] !== '').map((r) => r.slice(0, 3))"""


@pytest.mark.parametrize("table", ["process", "program", "mapping"])
def test_each_total_is_aligned_as_its_column(browser, pages, table):
    _open_file(browser, pages["plain"][0])
    browser.find_element("css selector", f'#tabs button[data-table="{table}"]').click()
    columns = browser.execute_script(ALIGNED)
    assert len(columns) >= 3, columns
    assert [c for c in columns if c[1] != c[2]] == [], columns
    _no_requests_and_no_errors(browser)
