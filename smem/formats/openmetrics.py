"""OpenMetrics (the Prometheus text exposition), in bytes: one gauge family per amount column.

A scrape of the process view carries the per-user and whole-system gauges
too (the view's ``metrics_companions``, built from the same snapshot), so
that one file for node_exporter's textfile collector answers per process,
per user and for the system.
"""

from .cells import printable

__all__ = ["render"]


def _label_value(value):
    text = printable(str(value))
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _families(table):
    """(name, help, unit, [(labels, value)]) for each numeric column of ``table``."""
    labels = table.view.labels
    rows = table.rows
    rendered = [",".join(f'{k}="{_label_value(get(r))}"' for k, get in labels) for r in rows]
    label_keys = {k for k, _ in labels}
    families = []
    for column in table.columns:
        if column.key in label_keys or not (column.is_amount or column.total == "sum"):
            continue  # labels, text and identifiers are not gauges
        samples = []
        for row, label in zip(rows, rendered):
            value = column.getter(row)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                samples.append((label, value * 1024 if column.is_amount else value))
        unit = "bytes" if column.is_amount else ""
        name = f"smem_{table.view.name}_{column.key}" + ("_bytes" if unit else "")
        families.append((name, f"{column.help} ({table.view.title})", unit, samples))
    return families


def render(rendering):
    lines = []
    for table in (rendering.table, *rendering.companions):
        for name, help_text, unit, samples in _families(table):
            lines.append(f"# TYPE {name} gauge")
            if unit:
                lines.append(f"# UNIT {name} {unit}")
            lines.append(f"# HELP {name} {help_text}")
            lines.extend(f"{name}{{{label}}} {value}" for label, value in samples)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
