"""Output formats, as a registry: ``FORMATS[name]`` renders a finished table as text.

Every format lays out the same :class:`~smem.report.Table` (columns chosen,
rows sorted, totals made by smem.report): ``classic`` as smem 1.5 prints it,
tabulate's table styles for people, ``json`` and ``csv`` for programs (raw
KiB integers; a value absent from the source is null / empty, never 0; -k or
-p, when given, turn amounts into the strings the table shows), and
``openmetrics`` for Prometheus (bytes).  A new format is one module here and
one entry in :data:`FORMATS`; ``-F``'s help, completion and the man page
list this registry.
"""

from dataclasses import dataclass
from typing import Callable, Tuple

from . import classic, csv_rows, json_document, openmetrics, tabulated

__all__ = ["Format", "Rendering", "FORMATS", "TABLE_FORMATS", "render"]


@dataclass(frozen=True)
class Rendering:
    """What a renderer gets: the table, its options, the snapshot it came from, and the
    tables of the view's ``metrics_companions`` when the format asked for them."""

    table: object        # smem.report.Table
    options: object      # smem.options.TableOptions
    snapshot: object     # smem.model.Snapshot
    companions: Tuple = ()


@dataclass(frozen=True)
class Format:
    name: str
    render: Callable[[Rendering], str]
    help: str
    #: the document also carries the tables of the view's metrics_companions (a scrape)
    wants_companions: bool = False


TABLE_FORMATS = tabulated.STYLES

FORMATS = {f.name: f for f in (
    Format("classic", classic.render, "smem 1.5's table (the default)"),
    Format("json", json_document.render, "one JSON document: the source's facts, columns, rows (raw KiB), totals"),
    Format("csv", csv_rows.render, "RFC 4180 rows of raw KiB, a header of column keys"),
    Format("openmetrics", openmetrics.render,
           "Prometheus text exposition in bytes, for node_exporter's textfile collector",
           wants_companions=True),
    *(Format(style, tabulated.renderer(style), f"tabulate's {style!r} table") for style in TABLE_FORMATS),
)}


def render(rendering):
    """``rendering`` in its table options' format, as text."""
    return FORMATS[rendering.options.format].render(rendering)
