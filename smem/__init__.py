"""smem: memory reporting that accounts for sharing (USS, PSS, RSS, VSS, swap)."""

__version__ = "2.0.0.dev0"
