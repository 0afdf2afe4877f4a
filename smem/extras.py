"""Optional dependencies: which extra of the package brings each, and one line when one is missing.

A text report needs click and tabulate only.  Charts need matplotlib
(``smem[charts]``), exact accounting numpy (``smem[exact]``), zstd captures and
zstd/lz4 kernels zstandard and lz4 (``smem[compression]``), ``smem serve``
prometheus_client (``smem[metrics]``), ``smem html`` plotly's plotly.js (``smem[html]``); ``smem[all]`` has every one.  Code that
needs one calls :func:`require` before importing what uses it, so a missing
package is one line naming the extra, not a traceback.
"""

import importlib

from .errors import SmemError

__all__ = ["EXTRAS", "MissingExtra", "require", "missing"]

#: module -> (distribution on PyPI, extra that installs it, Debian package)
EXTRAS = {
    "matplotlib": ("matplotlib", "charts", "python3-matplotlib"),
    "numpy": ("numpy", "exact", "python3-numpy"),
    "zstandard": ("zstandard", "compression", "python3-zstandard"),
    "lz4": ("lz4", "compression", "python3-lz4"),
    "prometheus_client": ("prometheus_client", "metrics", "python3-prometheus-client"),
    "plotly": ("plotly", "html", "python3-plotly"),
}


class MissingExtra(SmemError):
    """An optional package a feature needs is not installed."""


def missing(module, purpose):
    """The one line for ``purpose`` lacking ``module``."""
    dist, extra, debian = EXTRAS[module]
    # the package itself, not 'smem[extra]': PyPI's "smem" is another project, and pip would
    # fetch it where this smem was installed from a checkout
    return (f"{purpose}: the Python package '{dist}' is not installed: pip install {dist} "
            f"(smem's '{extra}' extra; or apt install {debian})")


def require(module, purpose):
    """Import ``module`` (a key of EXTRAS), or raise MissingExtra saying what to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(missing(module, purpose)) from None
