"""Tables as metric families: the one place smem's Prometheus metric names are made.

``smem -F openmetrics`` writes these families as text itself (a text-only
install has no prometheus_client), and ``smem serve`` hands the same families
to prometheus_client as gauges, so a metric means the same thing under the
same name in both.  Names follow Prometheus's advice
(https://prometheus.io/docs/practices/naming/): ``smem_<view>_<column>``,
base units with their suffix (``smem_user_pss_bytes``: amounts are KiB in
smem and bytes here), and a count named after what it counts
(``smem_user_processes``, never a ``_count`` suffix, which Prometheus reserves
for histograms and summaries).  Every family is a gauge (a process's memory
goes up and down) but the kernel's running totals since boot, which are
counters (``smem_memory_pressure_stall_seconds_total``: ``rate()`` takes them,
and a reboot is a counter reset to Prometheus).

A row's labels are the view's ``labels`` (pid, user, name; user; area ...), and a column's own
where several columns are one family (views.columns.ColumnMetric),
as valid UTF-8, control characters written ``\\xNN``, two names never one label (formats.cells.printable, one-to-one);
escaping quotes and backslashes is the writer's job.  A value absent from the
source is left out, never written as 0.
"""

import re
from dataclasses import dataclass
from typing import List, Tuple

from .cells import printable

__all__ = ["Family", "exported", "families", "cpu_seconds_family", "pressure_families", "recommendation_families"]


@dataclass(frozen=True)
class Family:
    name: str            # with its unit suffix
    help: str
    unit: str            # "bytes" or "" (a count)
    label_names: Tuple[str, ...]
    #: (label values, value) per row that has one
    samples: List[Tuple[Tuple[str, ...], float]]
    #: "gauge", or "counter" (the name without its _total, which each sample's name adds)
    type: str = "gauge"


def exported(column, label_names=()):
    """Whether :func:`families` makes samples of ``column``: an amount or a count, or one its
    ColumnMetric declares; not a label of the rows, nor text (a command line, a mapping's name)."""
    if column.key in label_names:
        return False
    return column.metric is not None or column.is_amount or column.total == "sum"


def families(table, helps=None):
    """A :class:`Family` for each amount or count column of ``table`` (labels and text are not gauges),
    and one for each name its columns' ColumnMetric declare (a cgroup's pressure columns: one family
    labelled by kind and window, as the machine's), where its first such column is; ``helps``
    {column key: HELP text} where the exporter says more exactly than the column's help, which
    speaks of every command."""
    labels = table.view.metrics.labels
    label_names = tuple(k for k, _ in labels)
    row_labels = [tuple(printable(str(get(row))) for _, get in labels) for row in table.rows]
    result = []
    declared = {}  # ColumnMetric name -> (the first column's ColumnMetric, the samples of all its columns)
    # (a column -c names twice is shown twice, and exported once: a family or a series twice is
    # an exposition a scrape refuses)
    shown = {}
    for column in table.columns:
        shown.setdefault(column.key, column)
    for column in shown.values():
        if not exported(column, label_names):
            continue  # labels, text and identifiers are not gauges
        if column.metric is not None:
            if column.metric.name not in declared:
                declared[column.metric.name] = (column.metric, [])
                result.append(column.metric.name)  # (its place among the families)
            declared[column.metric.name][1].extend(_samples(table, column, row_labels))
            continue
        samples = []
        for row, values in zip(table.rows, row_labels):
            value = column.getter(row)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                samples.append((values, value * 1024 if column.is_amount else value))
        unit = "bytes" if column.is_amount else ""
        name = _metric_name(f"smem_{table.view.name}_{column.total_name}") + ("_bytes" if unit else "")
        said = (helps or {}).get(column.key, column.help).replace("- without", "absent without")  # (no "-" here)
        result.append(Family(name, f"{said} ({table.view.title})", unit, label_names, samples))
    return [_declared(table, *declared[f]) if isinstance(f, str) else f for f in result]


def _samples(table, column, row_labels):
    """A ColumnMetric column's samples: each row's labels and the column's own, its value scaled;
    a row without a value has none."""
    metric = column.metric
    own = tuple(value for _, value in metric.labels)
    samples = []
    for row, values in zip(table.rows, row_labels):
        value = column.getter(row)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            samples.append((values + own, round(value * metric.scale, 9)))
    return samples


def _declared(table, metric, samples):
    """The family a ColumnMetric names, of its columns' samples: ``smem_<view>_<name>``."""
    label_names = tuple(k for k, _ in table.view.metrics.labels) + tuple(k for k, _ in metric.labels)
    return Family(_metric_name(f"smem_{table.view.name}_{metric.name}"), f"{metric.help} ({table.view.title})",
                  metric.unit, label_names, samples, metric.type)


def _metric_name(text):
    """A valid metric name: the diff and watch views are named "process-diff", a metric
    name is [a-zA-Z_:][a-zA-Z0-9_:]* (smem_process_diff_dpss_bytes)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", text)


def cpu_seconds_family(table, counted, hz, of_processes):
    """``smem_<view>_cpu_seconds_total``, a counter (smem.cpu_seconds.CpuSeconds): ``counted``
    {label values: clock ticks} of ``table``'s rows, ``hz`` ticks a second; of a process (its own
    count since it started) or of a group (all its processes ran since each started, one that
    exited as last seen: not only since smem serve saw it)."""
    view = table.view
    ran = ("CPU time it ran since it started" if of_processes else
           "CPU time its processes ran since each started, one that exited as last seen")
    return Family(_metric_name(f"smem_{view.name}_cpu_seconds"),
                  f"{ran}, user and kernel (/proc/PID/stat utime + stime; {view.title})", "seconds",
                  tuple(k for k, _ in view.metrics.labels), [(labels, t / hz) for labels, t in counted.items()],
                  "counter")


def pressure_families(pressure):
    """The machine's memory pressure (memory_pressure.MemoryPressure) as two families:
    ``smem_memory_pressure_ratio{kind, window}`` (avg10/60/300 as 0-1) and
    ``smem_memory_pressure_stall_seconds_total{kind}`` (the stall time since boot, a counter); none
    without PSI."""
    if pressure is None or not pressure.system:
        return []
    from ..parsers.pressure import WINDOWS
    ratios, stalls = [], []
    for kind, stall in pressure.system.items():
        ratios += [((kind, window), round(getattr(stall, window) / 100, 6)) for window in WINDOWS
                   if getattr(stall, window) is not None]
        if stall.total_us is not None:
            stalls.append(((kind,), stall.total_us / 1e6))
    return [Family("smem_memory_pressure_ratio", "share of time tasks stalled on memory over the window "
                   "(/proc/pressure/memory: some = at least one task, full = all at once)", "",
                   ("kind", "window"), ratios),
            Family("smem_memory_pressure_stall_seconds", "time tasks stalled on memory since boot "
                   "(/proc/pressure/memory total)", "seconds", ("kind",), stalls, "counter")]


def recommendation_families(recommendation):
    """--recommend's answer (recommendation.Recommendation) as families:
    ``smem_non_reclaimable_bytes`` (what the device needs), ``smem_recommended_ram_bytes``
    (the usual RAM size that holds it and the headroom), where the page map was scaled to that
    size ``smem_recommended_page_map_bytes`` (its page map, in the need), and
    ``smem_recommended_not_counted`` by area (1: its size unknown, not in the need, as the line says);
    none without --recommend."""
    if recommendation is None:
        return []
    from ..recommendation import SIZED_AREAS
    scaled = []
    if recommendation.page_map_kib is not None:
        scaled = [Family("smem_recommended_page_map_bytes", "the page map (a struct page per page) of the "
                         "recommended RAM size, in smem_non_reclaimable_bytes in place of the measured machine's "
                         "(--recommend)", "bytes", (), [((), recommendation.page_map_kib * 1024)])]
    unknown = Family("smem_recommended_not_counted", "1 where the area's size is unknown (no iomem, not root, "
                     "a C smemcap capture), so not in smem_non_reclaimable_bytes: give -R, -K (--recommend)",
                     "", ("area",), [((area,), int(area in recommendation.not_counted)) for area in SIZED_AREAS])
    return [Family("smem_non_reclaimable_bytes", "memory that cannot be reclaimed, --recommend's need "
                   "(the areas' noncache, less the free pages of the per-CPU lists that -w counts in it; with the "
                   "page map scaled to the recommended size where known)", "bytes", (),
                   [((), recommendation.needs_kib * 1024)]),
            Family("smem_recommended_ram_bytes", "the smallest usual RAM size holding what cannot be "
                   f"reclaimed plus {recommendation.headroom_percent:g}% headroom (--recommend)", "bytes", (),
                   [((), recommendation.fits_in_kib * 1024)])] + scaled + [unknown]
