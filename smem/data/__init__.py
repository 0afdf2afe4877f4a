"""Files shipped with smem: the capture script (a link to scripts/smemcap.sh in the source tree)."""
