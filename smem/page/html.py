"""The page as one HTML document: our template, style and script, plotly.js and the data, inline.

Nothing is fetched: the file opens from disk on a machine without a network.  Text from the
reading (command lines, mapping, user and cgroup names: anything a local user can name) only
reaches the document inside ``<script type="application/json">`` elements, with ``<``, ``>``
and ``&`` (and U+2028/2029) escaped so no such text can end the element, and in attributes
and the title escaped as HTML; the script reads it with textContent and shows it as text.  A
Content-Security-Policy lets only the page's two scripts run (by hash) and allows no request
but smem serve's own data.json.
"""

import html
import importlib.util
import json
import os
import re

from ..extras import MissingExtra, missing

__all__ = ["page_html", "json_in_script", "data_json", "plotly_js"]

#: where the template names what goes in: <!--smem:NAME--> (in its UTF-8 bytes)
_SLOT = re.compile(rb"<!--smem:([a-z]+)-->")

#: what ends a script element or switches its parser into an escaped state
_SCRIPT_END = re.compile(r"</(script)|<!--", re.IGNORECASE)
_SCRIPT_END_BYTES = re.compile(_SCRIPT_END.pattern.encode("ascii"), re.IGNORECASE)


def json_in_script(text):
    """JSON text made safe inside a script element: outside strings JSON has none of these."""
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _script(text, what):
    """Script code (text, or UTF-8 bytes) to inline as it is; code that could end its element is
    refused, not mended."""
    found = (_SCRIPT_END_BYTES if isinstance(text, bytes) else _SCRIPT_END).search(text)
    if found:
        end = found.group(0)
        end = end.decode("ascii") if isinstance(end, bytes) else end
        raise ValueError(f"{what} holds {end!r}: it cannot be inlined in a script element")
    return text


def plotly_js():
    """plotly.min.js as the plotly package ships it (smem[html]), its UTF-8 bytes as they are
    (4.6 MB: decoded and encoded again, it cost more than the rest of the page), without
    importing plotly."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtra(missing("plotly", "smem html"))
    for directory in spec.submodule_search_locations:
        path = os.path.join(directory, "package_data", "plotly.min.js")
        if os.path.exists(path):
            with open(path, "rb") as f:
                return f.read()
    raise MissingExtra(missing("plotly", "smem html") + " (its plotly.min.js is missing)")


def _sha256(data):
    """The Content-Security-Policy hash of a script's UTF-8 bytes."""
    import base64
    import hashlib
    return base64.b64encode(hashlib.sha256(data).digest()).decode("ascii")


def _own(name):
    """One of the page's files: package data, read as a file beside this module (smem is installed
    as files; importlib.resources imported zipfile, tempfile and more at every page's start)."""
    with open(os.path.join(os.path.dirname(__file__), name), encoding="utf-8") as f:
        return f.read()


#: the page's script, in parts (one idea each) joined in this order into one scope
SCRIPT_PARTS = ("common.js", "hierarchy.js", "chart.js", "pressure.js", "tables.js", "timeline.js", "page.js")


def _page_script():
    """The script: the areas' palette (the charts' too: smem.area_colours), then its parts."""
    from ..area_colours import palette_text
    palette = _script(json_in_script(json.dumps(json.loads(palette_text()), separators=(",", ":"))), "the palette")
    body = "\n".join(_script(_own(name), name) for name in SCRIPT_PARTS)
    return f'"use strict";\n(function () {{\nconst AREA_PALETTE = {palette};\n{body}}})();\n'


def data_json(documents, meta):
    """The page's data as one JSON object (smem serve's data.json): each document, and meta."""
    parts = [f"{json.dumps(name)}:{text.strip()}" for name, text in documents.items()]
    parts.append(f'"meta":{json.dumps(meta)}')
    return "{" + ",".join(parts) + "}"


def _data_elements(documents, meta):
    commands = meta.get("commands", {})
    elements = []
    for name, text in list(documents.items()) + [("meta", json.dumps(meta))]:
        command = commands.get(name)
        attribute = f' data-command="{html.escape(command, quote=True)}"' if command else ""
        elements.append(f'<script type="application/json" id="smem-{name}"{attribute}>'
                        f"{json_in_script(text.strip())}</script>")
    return "\n".join(elements)


def page_html(documents, meta, title, plotly=None):
    """The whole page, as UTF-8 bytes: ``documents`` (name -> JSON text, as data.page_documents
    gives them), ``meta`` (a dict) and the window's ``title`` (text); ``plotly``: plotly_js() if
    already read.  Put together as bytes: plotly.js goes in as the file holds it."""
    scripts = {"plotly": _script(plotly_js() if plotly is None else plotly, "plotly.min.js"),
               "script": _page_script().encode("utf-8")}
    slots = {
        b"title": html.escape(title, quote=False).encode("utf-8"),
        b"style": _own("page.css").encode("utf-8"),
        # only these two scripts run: the policy names them by hash, so no other inline code could
        b"hashes": " ".join(f"'sha256-{_sha256(code)}'" for code in scripts.values()).encode("ascii"),
        b"data": _data_elements(documents, meta).encode("utf-8"),
        **{name.encode("ascii"): code for name, code in scripts.items()},
    }
    return _SLOT.sub(lambda m: slots[m.group(1)], _own("template.html").encode("utf-8"))
