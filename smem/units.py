"""Sizes in and out: smem's ``-k`` suffixes and the ``-R`` size argument.

Inside smem every amount is an integer number of KiB, as the kernel gives
it; conversion happens only here, at the edge.
"""

import re

from .errors import UsageError

__all__ = ["human", "percent", "parse_size"]

_SUFFIXES = ("", "K", "M", "G", "T", "P", "E")


def human(kib):
    """smem's ``-k`` form: 1 decimal and a binary suffix ("4.0K", "1.5G"); "0" for zero."""
    if kib == 0:
        return "0"
    value = kib * 1024
    for suffix in _SUFFIXES:
        if abs(value) < 1024 or suffix == _SUFFIXES[-1]:
            break
        value /= 1024.0
    return "%.1f%s" % (value, suffix)


def percent(kib, total):
    """``-p``: the share of ``total`` with two decimals, "-" (unknown, as any absent figure) without a total."""
    if not total:
        return "-"
    return "%.2f%%" % (100.0 * kib / total)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgtpe]?)(i?b?)\s*$", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6}


def parse_size(text):
    """Bytes from "2G", "2GB", "2GiB", "1.5G", "512m", "2097152K" or "2147483648".

    Suffixes are binary (K = 1024), as in smem 1.5; a bare number is bytes.
    """
    match = _SIZE.match(text or "")
    if not match or (match.group(3) and not match.group(2) and match.group(3).lower() != "b"):
        raise UsageError(
            f"cannot read memory size {text!r}: use a number with an optional unit, "
            "e.g. 2G, 2GiB, 1.5G, 512M, 2097152K or 2147483648 (bytes)")
    number, unit = match.group(1), match.group(2).lower()
    if match.group(3).lower() == "ib" and not unit:
        raise UsageError(f"cannot read memory size {text!r}")
    scale = 1024 ** _POWERS[unit]
    if "." in number:
        whole, _, frac = number.partition(".")
        numerator = int(whole or "0") * 10 ** len(frac) + int(frac or "0")
        return numerator * scale // 10 ** len(frac)
    return int(number) * scale
