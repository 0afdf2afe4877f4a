"""Where a bar chart says n/a (smem/chart_data.py's absent_marks, drawn by charts.py): a row with
no figure once, an absent bar beside present ones on its own, and a column that most rows (or
none) have a figure in not on each row but in one note.  Split from test_charts.py."""

import csv
import io
import tarfile
import xml.etree.ElementTree as ET

import pytest

matplotlib = pytest.importorskip("matplotlib", reason="smem[charts]: matplotlib not installed")

from chart_capture import CAPTURE, smem, svg_texts  # noqa: E402


@pytest.mark.uses("charts")
def test_a_row_with_no_figure_is_marked_na_once():
    """A breakdown row none of whose columns has a figure (dma-buf without a dma-buf, hardware
    corrupted) was marked "n/a" once a bar, four marks stacked on one row; a bar absent beside
    others present keeps its own mark."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from smem.chart_data import BarData
    from smem.charts import draw_bar
    values = [[1.0, None, 3.0], [1.0, None, None], [None, None, 2.0], [None, None, None]]
    data = BarData("System memory", "capture", ["a", "b", "c"], ["Used", "Cache", "Noncache", "Saved"],
                   values, "memory (MiB)", [])
    figure = Figure()
    FigureCanvasAgg(figure)
    draw_bar(figure, data)
    marks = sorted(round(t.get_position()[1], 2) for t in figure.axes[0].texts if t.get_text().strip() == "n/a")
    # (values are per series, then per row) row b (1): once, in its middle; row a (0): Noncache's
    # bar; row c (2): Cache's.  Saved, with no figure on any row, is marked on none
    # (test_a_column_no_row_has_is_not_marked_na)
    assert marks.count(1.0) == 1 and len([m for m in marks if 0.5 < m < 1.5]) == 1
    assert len([m for m in marks if m < 0.5]) == 1 and len([m for m in marks if m > 1.5]) == 1


@pytest.mark.uses("charts")
def test_a_column_few_rows_have_is_not_marked_na_on_the_others(capsys, tmp_path):
    """-w --breakdown's Saved has a figure on KSM's row alone: it marked n/a on the 27 others, and
    KSM's row (in no sum: no Used, Cache, Noncache) three times; a note says where Saved is drawn,
    and each row that has no figure of the other columns is marked once."""
    ksm = tmp_path / "ksm.tar.gz"
    with tarfile.open(CAPTURE) as src, tarfile.open(ksm, "w:gz") as out:
        for member in src:
            out.addfile(member, src.extractfile(member) if member.isfile() else None)
        for name, value in (("pages_sharing", b"1000\n"), ("pages_shared", b"100\n")):
            info = tarfile.TarInfo(f"sys/kernel/mm/ksm/{name}")
            info.size = len(value)
            out.addfile(info, io.BytesIO(value))
    out = tmp_path / "bar.svg"
    code, table, err = smem(capsys, "-w", "--breakdown", "--bar", "area", "-o", out, source=ksm)
    assert code == 0, err
    texts = svg_texts(out)
    assert "Saved: drawn only for KSM saved (not in sum)" in texts
    root = ET.parse(out).getroot()
    marks = sum("".join(e.itertext()).strip() == "n/a" for e in root.iter() if e.tag.endswith("}text"))
    code, table, _ = smem(capsys, "-w", "--breakdown", "-F", "csv", source=ksm)
    # a row whose used, cache and noncache are all absent is marked once; otherwise each absent one
    expected = values = 0
    for row in csv.DictReader(io.StringIO(table)):
        absent = [row[key] for key in ("used", "cache", "noncache")].count("")
        expected += 1 if absent == 3 else absent
        values += absent
    assert 0 < marks == expected < values, (marks, expected)
    assert f"{values} absent values not drawn (n/a)" in texts  # (the values: Saved's are not counted)


@pytest.mark.uses("charts")
def test_a_column_no_row_has_is_not_marked_na(capsys, tmp_path):
    """-w --breakdown --bar on a machine without KSM (most): Saved has no figure on any row, and
    was marked n/a on each of the 21 rows that have others (27 marks); a note says it has none."""
    out = tmp_path / "bar.svg"
    code, table, err = smem(capsys, "-w", "--breakdown", "--bar", "area", "-o", out)
    assert code == 0, err
    texts = svg_texts(out)
    assert "Saved: no figure on any row" in texts
    root = ET.parse(out).getroot()
    marks = sum("".join(e.itertext()).strip() == "n/a" for e in root.iter() if e.tag.endswith("}text"))
    code, table, _ = smem(capsys, "-w", "--breakdown", "-F", "csv")
    rows = list(csv.DictReader(io.StringIO(table)))
    assert not any(row["saved"] for row in rows)
    expected = values = 0
    for row in rows:
        absent = [row[key] for key in ("used", "cache", "noncache")].count("")
        expected += 1 if absent == 3 else absent
        values += absent
    assert 0 < marks == expected, (marks, expected)
    assert f"{values} absent values not drawn (n/a)" in texts
