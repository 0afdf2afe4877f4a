"""The markup table styles (smem/formats/markup.py): a name made of markup comes out of each as the
same characters, rendered by a real parser where there is one for Python (CommonMark by
markdown-it-py, reStructuredText by docutils, MediaWiki by mwparserfromhell), and at least in
its own cell in the others."""

import html
import html.parser
import io
import re

import pytest

import hostile_inputs as hc
from conftest import FIXTURES, run_smem

#: what a process may name itself: a cell boundary of every style, raw HTML, links, emphasis,
#: code, entities, templates, Org's export snippets and links
NAMES = [
    "a|b||c <img src=x onerror=alert(1)> *em* _u_ [l](http://x) `c` &amp; {{t}} [[w]] ~~s~~ ![i](y)",
    ".. raw:: html <script>alert(2)</script> @@html:<b>x</b>@@ \\ \\| {{{m}}} 'q' !!",
    "-bash +x+ ^s^ ?c? %p% @c@ \"l\":http://x #h =e= /usr/bin/x",
    "1. foo(((hidden))) (C) ... C:\\windows\\system32\\services.exe",
    "iv) A. Einstein",
]
#: a name with a line separator (U+2028): every table shows it as "?", as any control character
SEPARATED = "a\u2028b"


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    path = tmp_path_factory.mktemp("markup") / "names.tar"
    path.write_bytes(hc.capture_tar(processes={
        1000 + i: hc.process_files(1000 + i, cmdline=name.encode() + b"\0",
                                   stat=hc.STAT.replace(b"1234", str(1000 + i).encode(), 1))
        for i, name in enumerate(NAMES)}))
    return path


def _table(capture, style, columns="pid command"):
    result = run_smem("-S", capture, "-F", style, "-a", "-c", columns, "-s", "pid")
    assert result.returncode == 0, result.stderr
    return result.stdout.decode()


class _Cells(html.parser.HTMLParser):
    """The text of each <td>, and the other elements inside a table's cells."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.cells, self.inside, self.tags = [], False, []

    def handle_starttag(self, tag, attrs):
        if tag == "td":
            self.inside = True
            self.cells.append("")
        elif self.inside:
            self.tags.append(tag)

    def handle_endtag(self, tag):
        if tag == "td":
            self.inside = False

    def handle_data(self, data):
        if self.inside:
            self.cells[-1] += data


def _rendered_cells(page):
    parser = _Cells()
    parser.feed(page)
    return [c.strip() for c in parser.cells], parser.tags


@pytest.mark.parametrize("style", ["github", "markdown", "pipe"])
def test_markdown_renders_each_name_as_its_text(capture, style):
    markdown_it = pytest.importorskip("markdown_it", reason="smem[test]: markdown-it-py not installed")
    page = markdown_it.MarkdownIt("commonmark").enable("table").render(_table(capture, style))
    cells, tags = _rendered_cells(page)
    assert cells == [c for i, name in enumerate(NAMES) for c in (str(1000 + i), name)]
    assert tags == []  # (no <img>, <a>, <em>, <code>, <script> made of a name)


@pytest.mark.uses("cpu")
def test_restructuredtext_renders_each_name_as_its_text(capture):
    core = pytest.importorskip("docutils.core", reason="smem[test]: docutils not installed")
    from docutils.writers.html5_polyglot import Writer
    page = core.publish_parts(_table(capture, "rst"), writer=Writer(),
                              settings_overrides={"report_level": 5, "raw_enabled": True})["body"]
    cells, tags = _rendered_cells(page)
    assert cells == [c for i, name in enumerate(NAMES) for c in (str(1000 + i), name)]
    assert set(tags) <= {"p"}  # (docutils puts a cell's text in a paragraph; nothing else)
    # an absent figure's "-" alone in a cell would be an empty bullet list
    page = core.publish_parts(_table(capture, "rst", "pid ksm"), writer=Writer(), settings_overrides={"report_level": 5})
    cells, tags = _rendered_cells(page["body"])
    assert cells == [c for i in range(len(NAMES)) for c in (str(1000 + i), "-")] and set(tags) <= {"p"}


def test_mediawiki_parses_each_name_as_text(capture):
    mw = pytest.importorskip("mwparserfromhell", reason="smem[test]: mwparserfromhell not installed")
    rows = mw.parse(_table(capture, "mediawiki")).filter_tags(matches=lambda node: node.tag == "tr")
    cells, kinds = [], set()
    for td in (td for tr in rows for td in tr.contents.filter_tags(matches=lambda node: node.tag == "td")):
        kinds |= {type(node).__name__ for node in td.contents.nodes}
        cells.append("".join(node.normalize() if hasattr(node, "normalize") else str(node)
                             for node in td.contents.nodes).strip())
    assert cells == [c for i, name in enumerate(NAMES) for c in (str(1000 + i), name)]
    assert kinds <= {"Text", "HTMLEntity"}  # (no link, template, tag or external link)


#: the others: (how a row splits into cells, how a cell's text is read back)
OTHERS = {
    "jira": (r"(?<!\\)\|", lambda c: re.sub(r"\\(.)|&#92;", lambda m: m.group(1) or "\\", c)),
    "youtrack": (r"(?<!\\)\|", lambda c: re.sub(r"\\(.)|&#92;", lambda m: m.group(1) or "\\", c)),
    "asciidoc": (r"\|", html.unescape),
    "textile": (r"\|", lambda c: html.unescape(re.sub(r"^[<>]\. ", "", c))),  # (|>. a cell aligned right)
    "moinmoin": (r"\|\|", lambda c: html.unescape(re.sub(r"^<[^>]*>", "", c))),  # (||<style=...> its style)
    "orgtbl": (r"\|", lambda c: c.replace("\\vert{}", "|").replace("\u200b", "")),
}


@pytest.mark.parametrize("style", sorted(OTHERS))
def test_the_other_markup_styles_keep_each_name_in_its_cell(capture, style):
    separator, read_back = OTHERS[style]
    lines = _table(capture, style).splitlines()
    rows = [line for line in lines if re.search(r"\b100\d\b", line)]
    assert len(rows) == len(NAMES), lines
    for row, pid, name in zip(rows, range(1000, 1000 + len(NAMES)), NAMES):
        cells = [c.strip() for c in re.split(separator, row.strip()) if c.strip()]
        assert [read_back(c).strip() for c in cells] == [str(pid), name], (style, row)


def test_a_line_separator_in_a_name_is_shown_as_a_control_character(tmp_path):
    """docutils splits its lines where Python does, at U+2028 too: kept, it would break the table."""
    path = tmp_path / "separated.tar"
    path.write_bytes(hc.capture_tar(processes={1000: hc.process_files(1000, cmdline=SEPARATED.encode() + b"\0")}))
    for style in ("rst", "github", "classic"):
        assert "a?b" in _table(path, style).splitlines()[-2 if style == "rst" else -1], style


def test_latex_raw_and_unsafehtml_are_not_offered(capture):
    """They write a cell's text as markup (tabulate's latex and html styles escape it)."""
    for style in ("latex_raw", "unsafehtml"):
        result = run_smem("-S", capture, "-F", style)
        assert result.returncode == 2 and result.stderr.decode().count("\n") == 1, result.stderr


#: a report whose notes hold % (a LaTeX comment), + and : (the breakdown's, --recommend's)
NOTED = ("-S", FIXTURES / "captures" / "faithful.tar.gz", "-w", "--breakdown", "--recommend", "20")


def _notes():
    import json
    notes = json.loads(run_smem(*NOTED, "-F", "json").stdout)["notes"]
    assert any("%" in note for note in notes) and len(notes) > 1
    return notes


def _paragraphs(page):
    return [html.unescape(re.sub(r"<[^>]*>", "", p)).strip() for p in re.findall(r"<p>(.*?)</p>", page, re.S)]


@pytest.mark.uses("cpu")
def test_notes_under_a_markdown_table_are_paragraphs_not_rows():
    """GitHub Markdown takes every line after a table, up to a blank one, for another row."""
    markdown_it = pytest.importorskip("markdown_it", reason="smem[test]: markdown-it-py not installed")
    page = markdown_it.MarkdownIt("commonmark").enable("table").render(run_smem(*NOTED, "-F", "github").stdout.decode())
    cells, _ = _rendered_cells(page)
    assert "unexplained" in cells and not any(":" in cell and "%" in cell for cell in cells)
    assert _paragraphs(page) == _notes()


@pytest.mark.uses("cpu")
def test_notes_under_a_restructuredtext_table_are_paragraphs_without_a_warning():
    core = pytest.importorskip("docutils.core", reason="smem[test]: docutils not installed")
    from docutils.writers.html5_polyglot import Writer
    warnings = io.StringIO()
    page = core.publish_parts(run_smem(*NOTED, "-F", "rst").stdout.decode(), writer=Writer(),
                              settings_overrides={"report_level": 1, "warning_stream": warnings})["body"]
    assert warnings.getvalue() == ""  # ("Blank line required after table.")
    assert _paragraphs(page)[-len(_notes()):] == _notes()


def test_notes_under_html_and_latex_tables_are_escaped_text():
    assert _paragraphs(run_smem(*NOTED, "-F", "html").stdout.decode()) == _notes()
    for style in ("latex", "latex_booktabs", "latex_longtable"):
        after = re.split(r"\\end\{(?:tabular|longtable)\}", run_smem(*NOTED, "-F", style).stdout.decode())[-1]
        assert not re.search(r"(?<!\\)[%_&#$]", after), after  # (% would comment the rest of the line out)
        assert [re.sub(r"\\(.)", r"\1", line) for line in after.splitlines() if line] == _notes()
