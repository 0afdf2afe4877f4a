"""OpenMetrics (the Prometheus text exposition), in bytes: one gauge family per amount column
(and counters for the kernel's totals since boot, their samples named ``_total``).

A scrape of the process view carries the per-user and whole-system gauges
too (the view's ``metrics_companions``, built from the same snapshot), so
that one file for node_exporter's textfile collector answers per process,
per user and for the system.  The families, and so the metric names, are
:mod:`smem.formats.families`'s, the same ``smem serve`` exports; this module
only writes them as text (without prometheus_client, which a text-only
install lacks).
"""

from .families import families, pressure_families, recommendation_families

__all__ = ["render"]


def _label_value(text):
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def render(rendering):
    lines = []
    every = [f for table in (rendering.table, *rendering.companions) for f in families(table)]
    every += recommendation_families(rendering.table.recommendation)
    for family in every + pressure_families(getattr(rendering.snapshot, "pressure", None)):
        name = family.name
        lines.append(f"# TYPE {name} {family.type}")
        if family.unit:
            lines.append(f"# UNIT {name} {family.unit}")
        lines.append(f"# HELP {name} {family.help}")
        sample = name + ("_total" if family.type == "counter" else "")
        for values, value in family.samples:
            label = ",".join(f'{k}="{_label_value(v)}"' for k, v in zip(family.label_names, values))
            lines.append(f"{sample}{{{label}}} {value}" if label else f"{sample} {value}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
