"""Files shipped with smem: the capture script (a link to scripts/smemcap.sh in the source tree) and
the areas' colours (area_colours.json: smem.area_colours reads it)."""
