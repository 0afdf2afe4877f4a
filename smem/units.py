"""Sizes in and out: smem's ``-k`` suffixes and the ``-R`` size argument.

Inside smem every amount is an integer number of KiB, as the kernel gives
it; conversion happens only here, at the edge.
"""

import re
from typing import NamedTuple

from .errors import UsageError

__all__ = ["GivenSize", "human", "percent", "read_size"]

_SUFFIXES = ("", "K", "M", "G", "T", "P", "E")


def human(kib, decimals=1):
    """smem's ``-k`` form: 1 decimal (or ``decimals``) and a binary suffix ("4.0K", "1.5G"); "0" for zero."""
    if kib == 0:
        return "0"
    value = kib * 1024
    for suffix in _SUFFIXES:
        if abs(value) < 1024 or suffix == _SUFFIXES[-1]:
            break
        value /= 1024.0
    return "%.*f%s" % (decimals, value, suffix)


def percent(kib, total):
    """``-p``: the share of ``total`` with two decimals, "-" (unknown, as any absent figure) without a total."""
    if not total:
        return "-"
    return "%.2f%%" % (100.0 * kib / total)


# ASCII digits and spaces only ("٢G" and "２G" are not sizes, nor is "2\nG": \s and $ would take
# a newline), and no more digits than a size has (int() refuses 4,300 of them).
# (Compiled by re at its first use: only an option that takes a size needs it.)
_SIZE = r" *([0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30}) *([kmgtpe]?)(i?b?) *"
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6}
#: No machine has this many bytes of RAM (every figure fits a 64-bit counter).
MAX_SIZE_BYTES = 1 << 64


def _shown(text):
    return repr(text if len(text) <= 40 else text[:37] + "...")


class GivenSize(NamedTuple):
    """A size as read: its bytes, and whether it was a bare number (bytes without a unit)."""

    bytes: int
    bare: bool


def read_size(text):
    """Bytes from "2G", "2GB", "2GiB", "1.5G", "512m", "2097152K" or "2147483648", as a GivenSize:
    a warning about a size may then say "without a unit" only of a size given without one.

    Suffixes are binary (K = 1024), as in smem 1.5; a bare number is bytes.  A size is
    more than 0 and less than 2**64 bytes.
    """
    text = text or ""
    match = re.fullmatch(_SIZE, text, re.IGNORECASE)
    if not match or (match.group(3) and not match.group(2) and match.group(3).lower() != "b"):
        raise UsageError(
            f"cannot read memory size {_shown(text)}: use a number with an optional unit, "
            "e.g. 2G, 2GiB, 1.5G, 512M, 2097152K or 2147483648 (bytes)")
    number, unit = match.group(1), match.group(2).lower()
    if match.group(3).lower() == "ib" and not unit:
        raise UsageError(f"cannot read memory size {_shown(text)}: 'iB' needs a unit before it, e.g. 2GiB")
    scale = 1024 ** _POWERS[unit]
    if "." in number:
        whole, _, frac = number.partition(".")
        numerator = int(whole or "0") * 10 ** len(frac) + int(frac or "0")
        size = numerator * scale // 10 ** len(frac)
    else:
        size = int(number) * scale
    if size <= 0:
        raise UsageError(f"memory size {_shown(text)} is not more than 0 bytes: give a size such as 2G")
    if size >= MAX_SIZE_BYTES:
        raise UsageError(f"memory size {_shown(text)} is past 2**64 bytes (16 EiB): no machine has it")
    return GivenSize(size, bare=not unit and not match.group(3))
