"""The colours of the areas of RAM, read from smem/data/area_colours.json: the one palette the
charts (--pie, --bar of -w and -w --breakdown) and the page (smem html, which gets the file as
it is) draw the areas in, so that page cache is one colour wherever it is drawn.

An area takes the colour of the first prefix its name starts with: the breakdown's names vary
("anon of processes not read or not selected", "dma-buf held by no process read").
"""

import functools
import json
import os

__all__ = ["area_colour", "series_colours", "palette_text"]


@functools.lru_cache(maxsize=1)
def palette_text():
    """The palette file's text (the page embeds it as it is)."""
    with open(os.path.join(os.path.dirname(__file__), "data", "area_colours.json"), encoding="utf-8") as f:
        return f.read()


@functools.lru_cache(maxsize=1)
def _palette():
    return json.loads(palette_text())


def area_colour(area):
    """The colour ("#RRGGBB") of the area named ``area``; an area the palette does not know is grey."""
    palette = _palette()
    return next((colour for prefix, colour, _ in palette["areas"] if area.startswith(prefix)), palette["other"])


def series_colours(count):
    """``count`` colours for a bar chart's columns, in order (they repeat past eight)."""
    series = _palette()["series"]
    return [series[i % len(series)] for i in range(count)]
