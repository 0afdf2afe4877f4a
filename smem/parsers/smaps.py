"""Parser for /proc/PID/smaps and /proc/PID/smaps_rollup.

Format (Documentation/filesystems/proc.rst, "The /proc/PID/smaps"): each
mapping is a header line as in /proc/PID/maps::

    00400000-0048a000 r-xp 00000000 fd:03 960637       /bin/bash

followed by ``Key:   value kB`` counter lines (Size, Rss, Pss, Shared_Clean,
..., the set depends on the kernel version) and a few lines that are not in
kB (``VmFlags:``, ``THPeligible:``, ``ProtectionKey:``, Android's ``Name:``).
smaps_rollup has the same shape with a single ``[rollup]`` pseudo-mapping.

Every ``kB`` counter is kept under the kernel's own key, unknown ones
included, so new columns need no parser change; a key a kernel does not print
is simply absent.  Mapping names keep their spaces and a trailing
`` (deleted)``; bytes that are not UTF-8 survive as surrogate escapes.

The split into mappings and the reading of the counters a report keeps
(:func:`parse_smaps_kept`) have an optional C implementation
(``smem/parsers/_smaps*.c``, built by ``pip install`` where a compiler is
found); :data:`IMPLEMENTATION` says which one is in use ("C" or "Python").
Both give the same mappings, counters and errors (tests/test_smaps_speedups.py);
``SMEM_PURE_PYTHON=1`` in the environment forces the Python one.
"""

import os
import re
import sys
from collections.abc import Mapping as _ReadOnlyMapping

__all__ = ["Mapping", "Counters", "CountersBase", "parse_smaps", "parse_smaps_kept", "sum_smaps_kept", "sum_smaps_by_name",
           "sum_mappings_by_name", "field_values",
           "ANONYMOUS",
           "IMPLEMENTATION"]

#: The name smem has always given to a mapping without a path.
ANONYMOUS = "<anonymous>"

# A mapping's header: "start-end " at the start of a line (counter lines start with a key).
# Searching for the newline first lets the regex engine skip ahead; the first line is matched apart.
# (Patterns compiled by re at their first use: only the pure Python parser uses them.)
_FIRST_HEADER = rb"[0-9a-fA-F]+-[0-9a-fA-F]+[ \t]"
_HEADER = rb"\n[0-9a-fA-F]+-[0-9a-fA-F]+[ \t]"
_NEEDLES = {}  # "Pss" -> b"\nPss:", shared by all parses
_HEX_DIGITS = b"0123456789abcdefABCDEF"


class CountersBase(_ReadOnlyMapping):
    """A read-only dict of counters whose ``get`` computes a value when first asked.

    Subclasses define ``get``, ``__iter__`` and ``__len__``; a value of None
    means the key is absent (absent is not zero).
    """

    __slots__ = ()

    def __getitem__(self, key):
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key):
        return self.get(key) is not None


class Counters(CountersBase):
    """A mapping's ``kB`` counters, read from the smaps text only when asked for.

    A report shows a few of the ~25 counters of each mapping; finding those
    few in the text costs far less than turning every line into a number.
    It behaves as a read-only dict (KiB by kernel key, in kernel order when
    listed); a key the kernel did not print is absent.
    """

    __slots__ = ("_data", "_lo", "_hi", "_values", "_complete")

    def __init__(self, data, lo, hi):
        self._data = data    # the whole smaps text (shared by the mappings)
        self._lo = lo        # this mapping's counter lines: data[lo:hi], lo at a newline
        self._hi = hi
        self._values = {}
        self._complete = False

    def _find(self, key):
        needle = _NEEDLES.get(key)
        if needle is None:
            needle = _NEEDLES[key] = b"\n" + key.encode("ascii") + b":"
        return _find_in(self._data, self._lo, self._hi, needle)

    def get(self, key, default=None):
        values = self._values
        if key in values:
            value = values[key]
        elif self._complete:
            return default
        else:
            value = values[key] = self._find(key)
        return default if value is None else value

    def _all(self):
        if not self._complete:
            found = {}
            for line in self._data[self._lo:self._hi].split(b"\n"):
                parts = line.split()
                if len(parts) == 3 and parts[2] == b"kB" and parts[0][-1:] == b":":
                    found[parts[0][:-1].decode("ascii", "replace")] = int(parts[1])
            self._values = found
            self._complete = True
        return self._values

    def kept(self, keys):
        """A plain dict of ``keys`` (those present), for a caller that lets the text go."""
        values = {}
        for key in keys:
            value = self.get(key)
            if value is not None:
                values[key] = value
        return values

    def attributes(self):
        """The lines that are not counters (VmFlags, THPeligible, Name, ...), as text."""
        found = {}
        for line in self._data[self._lo:self._hi].split(b"\n"):
            parts = line.split()
            if parts and parts[0][-1:] == b":" and not (len(parts) == 3 and parts[2] == b"kB"):
                found[parts[0][:-1].decode("ascii", "replace")] = (
                    b" ".join(parts[1:]).decode("utf-8", "surrogateescape"))
        return found

    def __iter__(self):
        return iter(self._all())

    def __len__(self):
        return len(self._all())

    def items(self):
        return self._all().items()

    def __repr__(self):
        return f"Counters({self._all()!r})"


def _find_python(data, lo, hi, needle):
    """The value of the first ``needle`` line ("\\nKey:") in data[lo:hi], None if absent or not in kB."""
    i = data.find(needle, lo, hi)
    if i < 0:
        return None
    i += len(needle)
    j = data.find(b"\n", i, hi)
    value = data[i:j if j >= 0 else hi].rstrip()
    if not value.endswith(b"kB"):
        return None  # not a counter (THPeligible, VmFlags, ...)
    return int(value[:-2])


class Mapping:
    """One virtual memory area and its counters (KiB, keyed as the kernel names them).

    The name is read at once; the other header fields (addresses, permissions,
    offset, device, inode) only when asked for: most reports never look at them.
    """

    __slots__ = ("_header", "name", "counters")

    def __init__(self, header, name, counters=None):
        self._header = header  # the header line, as bytes
        self.name = name
        self.counters = counters if counters is not None else {}

    def __reduce__(self):
        return Mapping, (self._header, self.name, self.counters)

    def _field(self, index):
        return self._header.split(None, 5)[index]

    @property
    def start(self):
        return int(self._field(0).partition(b"-")[0], 16)

    @property
    def end(self):
        return int(self._field(0).partition(b"-")[2], 16)

    @property
    def perms(self):
        return self._field(1).decode("ascii", "replace")

    @property
    def offset(self):
        return int(self._field(2), 16)

    @property
    def device(self):
        return self._field(3).decode("ascii", "replace")

    @property
    def inode(self):
        return int(self._field(4))

    @property
    def attributes(self):
        counters = self.counters
        return counters.attributes() if isinstance(counters, Counters) else {}

    def get(self, key, default=None):
        return self.counters.get(key, default)

    def __repr__(self):
        return f"Mapping({self.start:#x}-{self.end:#x} {self.perms} {self.name!r})"


def _header(line, counters):
    parts = line.split(None, 5)
    if len(parts) < 5 or parts[2].strip(_HEX_DIGITS) or not parts[4].isdigit():
        raise ValueError(f"malformed smaps header: {line[:80]!r}")
    name = parts[5].rstrip(b"\r") if len(parts) > 5 else b""
    # interned: the same few hundred names recur in every process (memory; the views' dict lookups)
    return Mapping(line, _intern(name.decode("utf-8", "surrogateescape")) if name else ANONYMOUS, counters)


_intern = sys.intern


def _parse_python(data):
    starts = [m.start() + 1 for m in re.finditer(_HEADER, data)]
    if re.match(_FIRST_HEADER, data):
        starts.insert(0, 0)
    size = len(data)
    mappings = []
    for i, start in enumerate(starts):
        eol = data.find(b"\n", start)
        if eol < 0:
            eol = size
        hi = starts[i + 1] - 1 if i + 1 < len(starts) else size
        mappings.append(_header(data[start:eol], Counters(data, eol, max(hi, eol))))
    return mappings


def _parse_kept_python(data, keep, keep_without_pss=None, select=None):
    for key in (*keep, *(keep_without_pss or ())):
        key.encode("ascii")  # a counter's name is ASCII: refused before any reading, as the C parser does
    mappings = _parse_python(data)
    had_pss = not mappings or "Pss" in mappings[0].counters
    if not had_pss and keep_without_pss is not None:
        keep = keep_without_pss
    if select is not None:
        mappings = [m for m in mappings if select(m.name)]
    for m in mappings:
        m.counters = m.counters.kept(keep)
    return mappings, had_pss


def _sum_kept_python(data, keep, keep_without_pss=None):
    mappings, had_pss = _parse_kept_python(data, keep, keep_without_pss)
    totals = {}
    for m in mappings:
        for key, value in m.counters.items():
            before = totals.get(key)
            totals[key] = value if before is None else before + value
    return totals, had_pss, len(mappings)


def _sum_by_name_python(data, keep, keep_without_pss=None, fields=()):
    mappings, had_pss = _parse_kept_python(data, keep, keep_without_pss)
    return (*sum_mappings_by_name(mappings, fields), len(mappings), had_pss)


def sum_mappings_by_name(mappings, fields, keys=None):
    """``(rows, totals)`` of mappings as :func:`sum_smaps_by_name` gives them, of Mappings already
    made (their kept dicts; or, given ``keys``, those of any counters)."""
    groups, totals = {}, {}
    for index, m in enumerate(mappings):
        group = groups.get(m.name)
        if group is None:
            group = groups[m.name] = [index, 0, {}, "s" in m.perms]
        group[1] += 1
        sums = group[2]
        counters = m.counters
        for key, value in counters.items() if keys is None else ((k, counters.get(k)) for k in keys):
            if value is not None:
                before = sums.get(key)
                sums[key] = value if before is None else before + value
    rows = []
    for name, (index, count, sums, shared) in groups.items():
        for key, value in sums.items():
            before = totals.get(key)
            totals[key] = value if before is None else before + value
        rows.append((name, index, count, sums, field_values(sums, fields), shared))
    return rows, totals


def field_values(sums, fields):
    """Each field's value in ``sums``: the sum of the counters it names that are present, None
    where none is (absent is not zero)."""
    values = []
    for field in fields:
        present = [sums[key] for key in field if key in sums]
        values.append(sum(present[1:], present[0]) if present else None)
    return tuple(values)


def _parse_c(data):
    return _c.parse(data, None, None, None, Mapping, Counters, _header, ANONYMOUS)[0]


def _parse_kept_c(data, keep, keep_without_pss=None, select=None):
    keep = tuple(keep)
    return _c.parse(data, keep, tuple(keep_without_pss) if keep_without_pss is not None else keep,
                    select, Mapping, Counters, _header, ANONYMOUS)


def _sum_kept_c(data, keep, keep_without_pss=None):
    keep = tuple(keep)
    return _c.parse(data, keep, tuple(keep_without_pss) if keep_without_pss is not None else keep,
                    None, None, Counters, _header, ANONYMOUS)


def _sum_by_name_c(data, keep, keep_without_pss=None, fields=()):
    keep = tuple(keep)
    return _c.parse(data, keep, tuple(keep_without_pss) if keep_without_pss is not None else keep,
                    None, None, Counters, _header, ANONYMOUS, tuple(tuple(field) for field in fields))


def parse_smaps(data):
    """Parse smaps (or smaps_rollup) bytes into a list of :class:`Mapping`.

    Headers are parsed at once, counters when first asked for (see
    :class:`Counters`).  Lines before the first header are ignored; so is a
    missing final newline.  A malformed header raises ``ValueError``.
    """
    return _parse(bytes(data))


def parse_smaps_kept(data, keep, keep_without_pss=None, select=None):
    """``(mappings, had_pss)``: :func:`parse_smaps` for a caller that keeps only a few counters.

    The same as parsing, then replacing each mapping's counters by
    ``counters.kept(keep)`` (a plain dict, the text let go), in one pass.
    ``had_pss``: whether the first mapping has a Pss counter (kernels before
    2.6.25 have none; an empty smaps counts as having it); where it has not,
    ``keep_without_pss`` is kept instead when given.  ``select``, a function
    of the mapping name, drops the mappings it is false for before their
    counters are read.  Raises ``ValueError`` where parsing, then reading
    those counters, would.
    """
    return _parse_kept(bytes(data), keep, keep_without_pss, select)


def sum_smaps_kept(data, keep, keep_without_pss=None):
    """``(totals, had_pss, mappings)``: the counters :func:`parse_smaps_kept` keeps, summed over
    the mappings (a key no mapping has is absent), and how many mappings there were.

    For a report that shows a process's sums and no per-mapping figure, where there is no
    smaps_rollup (a capture by C smemcap, Linux before 4.14): no Mapping is made.  Raises
    ``ValueError`` where :func:`parse_smaps_kept` would.
    """
    return _sum_kept(bytes(data), keep, keep_without_pss)


def sum_smaps_by_name(data, keep, keep_without_pss=None, fields=()):
    """``(rows, totals, mappings, had_pss)``: the counters :func:`parse_smaps_kept` keeps, summed
    by mapping name, and over every mapping (``totals``, what :func:`sum_smaps_kept` gives).
    ``rows``: ``(name, index of its first mapping, mappings, sums, values, shared)`` in the order
    the names first appear, ``values`` one per field of ``fields`` (each a tuple of counter
    names: the sum of those present in the name's sums, None where none is), ``shared`` whether
    the name's first mapping is shared ("s" in its permissions).

    For a report that shows each name's figures per process (the page), where making a Mapping
    of every mapping costs more than the sums: none is made.  Raises ``ValueError`` where
    :func:`parse_smaps_kept` would.
    """
    return _sum_by_name(bytes(data), keep, keep_without_pss, fields)


_c = None
if not os.environ.get("SMEM_PURE_PYTHON"):
    try:
        from . import _smaps as _c
    except ImportError:
        _c = None

#: Which parser is in use: "C" (the optional extension) or "Python".
IMPLEMENTATION = "C" if _c is not None else "Python"
_parse, _parse_kept = (_parse_c, _parse_kept_c) if _c is not None else (_parse_python, _parse_kept_python)
_sum_kept = _sum_kept_c if _c is not None else _sum_kept_python
_sum_by_name = _sum_by_name_c if _c is not None else _sum_by_name_python
_find_in = _c.find if _c is not None else _find_python
