"""Output formats, as a registry: ``FORMATS[name]`` renders a finished table as text.

Every format lays out the same :class:`~smem.report.Table` (columns chosen,
rows sorted, totals made by smem.report): ``classic`` as smem 1.5 prints it,
tabulate's table styles for people, ``json`` and ``csv`` for programs (raw
KiB integers; a value absent from the source is null / empty, never 0; -k or
-p, when given, turn amounts into the strings the table shows), and
``openmetrics`` for Prometheus (bytes).  A new format is one module here and
one entry in :data:`FORMATS`; ``-F``'s help, completion and the man page
list this registry, which names each format's module and function and imports it only when a
report is written in it (a report imports one format, not eight).  In watch mode (``--interval``) a format writes frames
(its ``stream``, smem.formats.streams) and, if it is a table for people
(``redraws``), is redrawn in place on a terminal.
"""

import importlib
import time
from typing import NamedTuple, Optional, Tuple

__all__ = ["Format", "Frame", "Rendering", "FORMATS", "TABLE_FORMATS", "render"]


class Frame(NamedTuple):
    """One report of watch mode: when its reading began (seconds since the epoch) and its
    number, from 1, of ``count`` (None: no end given)."""

    time: float
    number: int
    count: Optional[int] = None

    @property
    def timestamp(self):
        """ISO 8601 in UTC to the second: what a log line, pandas and a person all read."""
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.time))


class Rendering(NamedTuple):
    """What a renderer gets: the table, its options, the snapshot it came from, and the
    tables of the view's ``metrics_companions`` when the format asked for them."""

    table: object        # smem.report.Table
    options: object      # smem.options.TableOptions
    snapshot: object     # smem.model.Snapshot
    companions: Tuple = ()
    frame: Optional[Frame] = None  # watch mode: which frame this is
    old_snapshot: object = None  # smem diff: OLD's snapshot (``snapshot`` is NEW's)
    memo: object = None  # watch mode: smem.table_memo.RowMemo, the lines of rows that did not change


class Format(NamedTuple):
    name: str
    #: "module:function" in this package that renders a Rendering as text; a tabulate style
    #: names tabulate's renderer and the style ("tabulated:render:github")
    renderer: str
    help: str
    #: the document also carries the tables of the view's metrics_companions (a scrape)
    wants_companions: bool = False
    #: watch mode: "module:function" that writes one frame as text (Rendering with its frame), or
    #: "table" (the report under a time line); None where the format is one document that cannot
    #: be continued (OpenMetrics ends with "# EOF")
    streamer: Optional[str] = None
    #: a table for people: watch mode redraws it in place on a terminal (others stream there too)
    redraws: bool = False
    #: the document holds --recommend's answer (a note, JSON's object, OpenMetrics' gauges); where
    #: it cannot (CSV is rows of areas), smem says it on standard error, not nowhere
    carries_recommendation: bool = True
    #: a table for people to read: smem says on standard error what a figure in it leaves out (a
    #: group's summed USS); never beside a format programs read, whose standard error may be logged
    for_people: bool = False

    @property
    def render(self):
        """The function that renders a Rendering as text."""
        module, function, *style = self.renderer.split(":")
        found = getattr(importlib.import_module(f"{__name__}.{module}"), function)
        return (lambda rendering: found(rendering, *style)) if style else found

    @property
    def stream(self):
        """The function that writes one frame of watch mode, or None."""
        if self.streamer is None:
            return None
        from . import streams
        if self.streamer == "table":
            return streams.table_frame(self.render)
        return getattr(streams, self.streamer)


#: tabulate.tabulate_formats, less unsafehtml and latex_raw (which write a name as markup, not as
#: text: smem.formats.markup), plus the markdown alias (listed here rather than asked of
#: tabulate, so that text reports do not pay for importing it; a test keeps them in step)
TABLE_FORMATS = (
    "asciidoc", "colon_grid", "double_grid", "double_outline", "fancy_grid", "fancy_outline", "github",
    "grid", "heavy_grid", "heavy_outline", "html", "jira", "latex", "latex_booktabs", "latex_longtable",
    "mediawiki", "mixed_grid", "mixed_outline", "moinmoin", "orgtbl", "outline", "pipe",
    "plain", "presto", "pretty", "psql", "rounded_grid", "rounded_outline", "rst", "simple", "simple_grid",
    "simple_outline", "textile", "tsv", "youtrack", "markdown",
)

FORMATS = {f.name: f for f in (
    Format("classic", "classic:render", "smem 1.5's table (the default)", streamer="table", redraws=True,
           for_people=True),
    Format("json", "json_document:render", "one JSON document: the source's facts (smem diff: OLD's and "
           "NEW's), columns, rows (raw KiB), totals; in watch mode JSON Lines, an object per row per frame",
           streamer="json_lines_frame"),
    Format("csv", "csv_rows:render", "RFC 4180 rows of raw KiB, a header of column keys; in watch mode "
           "timestamp and frame columns first", streamer="csv_frame", carries_recommendation=False),
    Format("openmetrics", "openmetrics:render",
           "Prometheus text exposition in bytes, for node_exporter's textfile collector",
           wants_companions=True),
    # tsv: cells for programs, so no lines under them, and in watch mode no time lines between
    # frames: the frame's time and number lead its rows, as in CSV
    *(Format(style, f"tabulated:render:{style}", f"tabulate's {style!r} table",
             streamer="tsv_frame" if style == "tsv" else "table", redraws=True,
             carries_recommendation=style != "tsv", for_people=style != "tsv")
      for style in TABLE_FORMATS),
)}


def render(rendering):
    """``rendering`` in its table options' format, as text."""
    return FORMATS[rendering.options.format].render(rendering)
