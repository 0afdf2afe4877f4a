"""The page's deepest level: each process's mappings by kind, and who maps each shared one.

No text view prints mappings per process for every process at once (``smem -m --pid N`` does
one), and a page of every mapping of 1,500 processes would be too large to draw or send.  So
each process keeps its largest mappings by PSS (the mapping view's rows of that process alone,
summed by name as ``smem -m --pid N`` sums them, its columns reading the figures) and the rest
of each kind is one box counting them: every level still adds up to the process.  Likewise each
mapping that two or more processes map lists its largest mappers and sums the rest.

The kinds are the mappings' (a name's, as its first mapping is), not the pages': ``shmem`` (shared memory: /dev/shm, memfd, SysV,
shared anonymous), ``anon`` (no file: <anonymous>, heap, stacks, [anon:...]), ``file`` (the rest, with the
copy-on-write copies a private file mapping holds).
"""

from dataclasses import dataclass
from operator import itemgetter
from types import MappingProxyType

from ..aggregate import is_shmem_name
from ..formats.cells import printable
from ..parsers.smaps import ANONYMOUS, sum_mappings_by_name
from ..views.mapping import MAPPING_VIEW, MappingFold, MappingSums, MappingTally

__all__ = ["KINDS", "FIELDS", "FIELD_COUNTERS", "PageFold", "PageSums", "name_kind"]

KINDS = ("anon", "file", "shmem")

#: the amounts given per mapping: the mapping view's columns of these keys
FIELDS = ("swap", "uss", "pss", "rss", "swappss")

#: each FIELD as the smaps counters it sums (its column's declared counters; each of these
#: columns reads the sum of those present, None where none is: tests/test_page_fold.py checks),
#: worked out with the sums by name (smem.parsers.smaps.sum_smaps_by_name's fields)
FIELD_COUNTERS = tuple(tuple(sorted(MAPPING_VIEW.columns[key].counters)) for key in FIELDS)


def name_kind(name, shared):
    """Index in KINDS of the kind of a mapping of ``name``, ``shared`` or not."""
    if shared and is_shmem_name(name):
        return 2
    return 0 if not name or name[0] in "[<" else 1  # [heap], [stack], [anon:x]; <anonymous>


def is_own_area(name):
    """Whether a mapping of ``name`` is each process's own area ([heap], [stack], [anon:x],
    <anonymous>): another process's of the same name is other memory (a forked child's pages
    shared copy-on-write aside), not one object they share, as a file or [vdso] is."""
    return name == ANONYMOUS or name == "[heap]" or name.startswith(("[stack", "[anon:"))


def _column_sums(rows):
    """The fields of ``rows`` (``[pid, *FIELDS]``) summed; a field none of them has stays None."""
    sums = []
    for column in list(zip(*rows))[1:]:
        if None in column:
            column = [value for value in column if value is not None]
        sums.append(sum(column) if column else None)
    return sums


_PSS = FIELDS.index("pss")
_RSS = FIELDS.index("rss")
_pid = itemgetter(0)


def _ranked(values):
    """The key of the largest first: PSS, else (a kernel before 2.6.25 gives none) RSS."""
    pss = values[_PSS]
    return (pss, 0) if pss is not None else (-1, values[_RSS] or 0)


def _pss_of_mapper(row):
    return _ranked(row[1:])


def _by_pss_of_row(row):
    return _ranked(row[4])


class PageFold(MappingFold):
    """The page's fold: the mapping view's sums (the ``-m`` table), and per process its largest
    mappings and per mapping name its mappers, taken as each process is read, after which its
    mappings are let go (smem.loading): memory holds the sums and these rows, not every mapping.

    :meth:`part` is what a worker (smem.collect) takes of a process where it was read, so only
    the sums by name travel; :meth:`add` takes that part in, in whatever order processes come;
    :meth:`result` is the value the reading holds (:class:`PageSums`).
    """

    def __init__(self, top, top_sharers):
        super().__init__(split=False)
        self.top, self.top_sharers = top, top_sharers
        self.keys = _counters()
        self.kinds = {}    # (name, shared) -> its kind: names recur in every process
        self.fields = FIELD_COUNTERS  # what the loader works out per name (part_of_rows)
        self.shown = {}    # pid -> rows (kind, name, mappings, *FIELDS), name None for a kind's rest
        self.mappers = {}  # name -> [(pid, *FIELDS), ...]

    def clear(self):
        super().clear()
        self.shown, self.mappers = {}, {}

    def part(self, mappings):
        """(part, totals) of one process whose ``mappings`` were read, gone over once: see
        :meth:`part_of_rows`; totals None where its counters are not the kept dicts (then
        summed as usual), and (None, {}) for a process that maps nothing."""
        if not mappings:
            return None, {}
        if type(mappings[0].counters) is not dict:  # (every counter kept, read lazily)
            return self.part_of_rows(sum_mappings_by_name(mappings, FIELD_COUNTERS, self.keys)[0]), None
        rows, totals = sum_mappings_by_name(mappings, FIELD_COUNTERS)
        return self.part_of_rows(rows), totals

    def part_of_rows(self, rows):
        """What a worker sends of a process: (rows by name, the rows shown), or None for a
        process that maps nothing.  ``rows``: smem.parsers.smaps.sum_smaps_by_name's, its
        ``(name, first index, mappings, sums, values, shared)`` with the FIELDS' values
        (FIELD_COUNTERS); shown ``(kind, name, mappings, *values)``, the ``top`` largest by PSS
        (RSS where the kernel gives no PSS), then a row per kind for the rest, name None.  ``rows`` is kept as it is."""
        if not rows:
            return None
        kinds, top = self.kinds, self.top
        ranked = sorted(rows, key=_by_pss_of_row, reverse=True)
        shown, rest = [], {}
        for n, (name, _, count, _, values, shared) in enumerate(ranked):
            kind = kinds.get((name, shared))
            if kind is None:
                kind = kinds[(name, shared)] = name_kind(name, shared)
            if n < top:
                shown.append((kind, name, count, *values))
                continue
            into = rest.get(kind)
            if into is None:
                rest[kind] = [kind, None, count, *values]
                continue
            into[2] += count
            for i, value in enumerate(values, 3):
                if value is not None:
                    into[i] = value if into[i] is None else into[i] + value
        shown.extend(tuple(rest[kind]) for kind in sorted(rest))
        return rows, tuple(shown)

    def add(self, process):
        part = process.fold_part
        if part is None and process.mappings is not None:  # (not taken where it was read)
            part = self.part(process.mappings)[0]
        if part is None:
            return
        named, shown = part
        pid = process.pid
        by_name, mappers = self.by_name, self.mappers
        for name, index, count, totals, values, _ in named:
            tally = by_name.get(name)
            if tally is None:  # (no split)
                tally = by_name[name] = MappingTally((pid, index))
            elif pid < tally.first[0]:
                tally.first = (pid, index)
            tally.count += count
            tally.process_count += 1
            into = tally.totals
            for key, value in totals.items():  # (a sum by name holds the counters present only)
                into[key] = into.get(key, 0) + value
            mappers.setdefault(name, []).append((pid, *values))
        self.shown[pid] = shown

    def result(self):
        """The sums, the rows shown of each process in pid order and the mappers of each name that
        two or more processes map, largest first (ties in pid order), whatever order they came in."""
        sharers = {}
        for name, rows in self.mappers.items():
            if len(rows) > 1:
                rows.sort(key=_pid)  # (then by PSS: ties stay in pid order)
                rows.sort(key=_pss_of_mapper, reverse=True)
                sharers[name] = tuple(rows)
        return PageSums(self._rows(), MappingProxyType(dict(sorted(self.shown.items()))),
                        MappingProxyType(sharers), self.top, self.top_sharers)


@dataclass(frozen=True, eq=False)
class PageSums(MappingSums):
    """What the page's fold made of every process's mappings: the mapping view's rows, and
    ``shown`` (pid -> its boxes, pid order) and ``sharers`` (name -> its mappers, largest
    first), tuples a reader cannot change; :meth:`largest` gives each reader its own copy."""

    shown: MappingProxyType
    sharers: MappingProxyType
    top: int
    top_sharers: int

    def largest(self):
        """(maps, sharers), new plain data for JSON; names numbered in the order of their first
        mapping (pid, then place), whatever order the processes came in.

        ``maps["processes"][pid]``: rows ``[kind, name, mappings, *FIELDS]`` (kind an index in
        KINDS, name an index in ``maps["names"]``, or -1 for the box of the rest of that kind),
        the ``top`` largest by PSS first.  ``sharers["mappings"][name index]``: ``{"rows": [[pid,
        *FIELDS], ...], "more": [processes, *FIELDS] or None}`` for mappings of two or more
        processes, the ``top_sharers`` largest by PSS listed (ties in pid order); ``"own": true``
        where the name is each process's own area (is_own_area): those processes share no object.
        """
        names = {row.name: index for index, row in enumerate(self.rows)}
        names[None] = -1
        per_process = {}
        for pid, shown in self.shown.items():
            boxes = per_process[pid] = [list(box) for box in shown]
            for box in boxes:
                box[1] = names[box[1]]
        shared = {}
        top = self.top_sharers
        for name, rows in self.sharers.items():
            rest = rows[top:]
            shared[names[name]] = {"rows": [list(row) for row in rows[:top]],
                                   "more": [len(rest), *_column_sums(rest)] if rest else None,
                                   **({"own": True} if is_own_area(name) else {})}
        del names[None]
        shared = dict(sorted(shared.items()))
        return _documents(names, per_process, shared, self.top, self.top_sharers)


def _counters():
    """The smaps counters the mapping view's FIELDS columns read: all the page sums by name."""
    return tuple(sorted({c for key in FIELDS for c in FIELD_COUNTERS[FIELDS.index(key)]}))


def _documents(names, per_process, shared, top, top_sharers):
    maps = {"kinds": list(KINDS), "fields": ["kind", "name", "mappings", *FIELDS], "top": top,
            "names": [printable(name, controls=False) for name in names], "processes": per_process}
    sharers = {"fields": ["pid", *FIELDS], "top": top_sharers, "mappings": shared}
    return maps, sharers
