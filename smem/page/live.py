"""smem serve's page: ``/`` answers the page, ``/data.json`` its data, read again at most every
``--min-interval`` seconds and shared by every browser that asks (one reading at a time).

The page refreshes itself from ``data.json`` (no reload).  Nothing here changes state: GET and
HEAD only.  smem serve checks the Host header before these routes are reached (serve.py).
"""

from ..app import warning_kind
from ..errors import SmemError
from ..shared_reading import SharedReading
from .command import page_title
from .data import PageRequest, page_documents
from .html import data_json, page_html, plotly_js

__all__ = ["LivePage"]

#: what the page fetches, relative to itself
DATA_PATH = "data.json"


class LivePage:
    """The page's WSGI routes, given ``query`` (what smem serve reads) and ``min_interval``."""

    paths = ("/", "/" + DATA_PATH)

    def __init__(self, query, min_interval, warn):
        self.request = PageRequest(query)
        self.min_interval = min_interval
        self.warn = warn
        self._shared = SharedReading(min_interval, self._read)  # (its age counted from its start)
        self._said = set()

    def _reading(self):
        """(documents, meta), read now unless a reading young enough exists."""
        return self._shared.get()[0]

    def _read(self):
        documents, meta, warnings = page_documents(self.request)
        meta["live"] = {"interval": self.min_interval, "url": DATA_PATH}
        for warning in warnings:
            if warning_kind(warning) not in self._said:
                self.warn(warning)
        self._said = set(map(warning_kind, warnings))
        return documents, meta

    def __call__(self, environ, start_response):
        import json
        path = environ.get("PATH_INFO", "")
        try:
            plotly = plotly_js()  # (a missing extra: before the reading)
            documents, meta = self._reading()
            if path == "/":
                source = json.loads(documents["process"])["source"]
                body, kind = page_html(documents, meta, page_title(source), plotly), "text/html; charset=utf-8"
            else:
                body, kind = data_json(documents, meta).encode("utf-8"), "application/json"
        except SmemError as e:
            start_response("503 Service Unavailable", [("Content-Type", "text/plain; charset=utf-8")])
            return [f"smem: {e}\n".encode("utf-8")]
        start_response("200 OK", [("Content-Type", kind), ("Cache-Control", "no-store"),
                                  ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer")])
        return [body] if environ.get("REQUEST_METHOD") != "HEAD" else [b""]
