"""smem html's page files as the page tests read them: the captures they are made of, the hostile
text planted in one, the -F json documents a page embeds, and the pages both test_page.py (in a
browser) and test_page_documents.py (the documents) read, made once (the ``pages`` fixture,
tests/conftest.py).
"""

import html.parser
import io
import json
import re
import tarfile

from conftest import FIXTURES, run_smem
import hostile_inputs as hc


CAPTURES = FIXTURES / "captures"
CAPTURE, OLD_CAPTURE = CAPTURES / "faithful.tar.gz", CAPTURES / "quirks.tar.gz"

SCRIPT_END = "</script><script>alert(1)</script>"
IMG = "<img src=x onerror=alert(2)>"
SVG_MAP = "/tmp/<svg onload=alert(3)>\u2028lib.so"
USER = "<b onmouseover=alert(4)>"
#: a cgroup (pid 1234's) longer than the table's cell, with pid 1235's under it: each cell must show its end
CGROUP = "/user.slice/user-1000.slice/user@1000.service/app.slice/<i onclick=alert(5)>app</i>.scope"
#: script: [its text, whether its last character is inside the cell, whether its first is] of each
#: cell of the shown table that keeps its end when cut (the cgroup's), sorted
CGROUP_CELLS = """return [...document.querySelectorAll('#table tbody td.keep-end')].map(td => {
    const text = td.firstChild.firstChild, box = td.getBoundingClientRect(), range = document.createRange();
    const inside = (i) => { range.setStart(text, i); range.setEnd(text, i + 1); const r = range.getBoundingClientRect();
                            return r.left >= box.left - 0.5 && r.right <= box.right + 0.5; };
    return [td.textContent, inside(text.length - 1), inside(0)]; }).sort()"""


class _Scripts(html.parser.HTMLParser):
    """The page's <script type="application/json"> elements: id -> (text, attributes)."""

    def __init__(self):
        super().__init__()
        self.found, self._open = {}, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script" and attrs.get("type") == "application/json":
            self._open = attrs
            self.found[attrs["id"]] = ["", attrs]

    def handle_data(self, data):
        if self._open is not None:
            self.found[self._open["id"]][0] += data

    def handle_endtag(self, tag):
        self._open = None


def write_page(*args, path):
    result = run_smem("html", *args, "-o", path)
    assert result.returncode == 0, result.stderr
    with open(path, encoding="utf-8") as f:
        return f.read()


def capture_without_anon(path):
    """The test capture with meminfo's AnonPages 0: the breakdown's "anon of processes not read"
    below zero, as meminfo and the processes read at different moments can make it."""
    with tarfile.open(CAPTURE) as src, tarfile.open(path, "w") as out:
        for m in src:
            data = src.extractfile(m).read() if m.isfile() else None
            if m.name.endswith("meminfo"):
                data = re.sub(rb"(?m)^AnonPages:\s+\d+", b"AnonPages:  0", data)
                m.size = len(data)
            out.addfile(m, io.BytesIO(data) if data is not None else None)
    return path


def embedded(text):
    parser = _Scripts()
    parser.feed(text)
    return {key[len("smem-"):]: (json.loads(value), attrs) for key, (value, attrs) in parser.found.items()}


def make_pages(where):
    """The pages the tests read: of a capture, of a comparison, of a hostile capture."""
    hostile = where / "hostile.tar"
    # (a kernel with SwapPss, 4.3+, and nothing swapped: Swap PSS can be chosen, and has nothing to draw)
    smaps = hc.SMAPS.replace(b"/usr/bin/dbus-daemon", SVG_MAP.encode()).replace(
        b"Swap:                  0 kB\n", b"Swap:                  0 kB\nSwapPss:               0 kB\n")
    processes = {
        pid: hc.process_files(pid, smaps=smaps, cmdline=f"{SCRIPT_END}\0--x\0".encode(),
                              stat=hc.STAT.replace(b"1234", str(pid).encode(), 1)
                              .replace(b"(dbus-daemon)", f"({IMG})".encode()),
                              cgroup=f"0::{CGROUP}{'/payload' if pid == 1235 else ''}\n".encode())
        for pid in (1234, 1235)}
    members = [(m[0], m[1], {**m[2], "uname": USER}) if len(m) > 2 else m
               for m in hc.capture_members(processes=processes)]  # the owner's name, as the tar names it
    hostile.write_bytes(hc.tar_of(members))
    made = {}
    for name, args in (("plain", ["-S", CAPTURE]), ("compared", ["--compare", OLD_CAPTURE, "-S", CAPTURE]),
                       ("hostile", ["-S", hostile])):
        path = str(where / f"{name}.html")
        made[name] = (path, write_page(*args, path=path))
    return made
