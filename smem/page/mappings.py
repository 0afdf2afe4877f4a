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

from ..aggregate import is_shmem_mapping
from ..formats.cells import printable
from ..views.mapping import MAPPING_VIEW, MappingRow, MappingSums

__all__ = ["KINDS", "FIELDS", "PageFold", "mapping_kind"]

KINDS = ("anon", "file", "shmem")

#: the amounts given per mapping: the mapping view's columns of these keys
FIELDS = ("swap", "uss", "pss", "rss", "swappss")


def mapping_kind(mapping):
    """Index in KINDS of a smaps mapping's kind."""
    if is_shmem_mapping(mapping):
        return 2
    name = mapping.name
    return 0 if not name or name[0] in "[<" else 1  # [heap], [stack], [anon:x]; <anonymous>


def _added(rows):
    """The fields of ``rows`` (lists of values) summed; a field none of them has stays None."""
    sums = [None] * len(FIELDS)
    for values in rows:
        for i, value in enumerate(values):
            if value is not None:
                sums[i] = value if sums[i] is None else sums[i] + value
    return sums


def _by_pss(values):
    pss = values[FIELDS.index("pss")]
    return -1 if pss is None else pss


class PageFold(MappingSums):
    """The page's fold: the mapping view's sums (the ``-m`` table), and per process its largest
    mappings and per mapping name its mappers, taken as each process is read, after which its
    mappings are let go (smem.loading): memory holds the sums and these rows, not every mapping.

    :meth:`part` is what a worker (smem.collect) takes of a process where it was read, so only
    the sums by name travel; :meth:`add` takes that part in, in whatever order processes come.
    """

    def __init__(self, top, top_sharers):
        super().__init__(split=False)
        self.top, self.top_sharers = top, top_sharers
        self.keys = _counters()
        self.shown = {}    # pid -> rows [kind, name, mappings, *FIELDS], name None for a kind's rest
        self.mappers = {}  # name -> [[pid, *FIELDS], ...]

    def clear(self):
        super().clear()
        self.shown, self.mappers = {}, {}

    def part(self, process):
        """(part, totals) of one process, its mappings gone over once: the part is (rows by
        name, the rows shown), ``(name, first index, mappings, totals, values)`` for the sums
        and ``[kind, name, mappings, *values]`` shown, or None for a process that maps nothing;
        totals are its counters summed (what :attr:`Process.totals` gives), from the sums by
        name, or None where its counters are not the kept dicts (then summed as usual)."""
        mappings = process.mappings
        if mappings is None or not process.has_memory:
            return None, {} if mappings is not None else None
        by_name = {}
        if type(mappings[0].counters) is not dict:  # (every counter kept, read lazily)
            keys = self.keys
            for index, m in enumerate(mappings):
                counters = m.counters
                entry = by_name.setdefault(m.name, [index, 0, {}, m])
                entry[1] += 1
                sums = entry[2]
                for key in keys:
                    value = counters.get(key)
                    if value is not None:
                        sums[key] = sums.get(key, 0) + value
            return self.part_of_sums(by_name)[0], None
        for index, m in enumerate(mappings):
            entry = by_name.get(m.name)
            if entry is None:  # (most names are one mapping's)
                by_name[m.name] = [index, 1, m.counters.copy(), m]
                continue
            entry[1] += 1
            sums = entry[2]
            for key, value in m.counters.items():  # (kept counters are all present: never None)
                sums[key] = sums.get(key, 0) + value
        return self.part_of_sums(by_name)

    def part_of_sums(self, by_name):
        """(part, totals) as :meth:`part` gives them, of a process's counters summed by name
        (smem.parsers.smaps.sum_smaps_by_name's groups: the loader makes no Mapping of each
        mapping for the page); ``by_name`` is not kept."""
        getters = _getters()
        named, ranked, totals = [], [], {}
        row = MappingRow("", None)
        for name, (index, count, sums, first) in by_name.items():
            for key, value in sums.items():
                totals[key] = totals.get(key, 0) + value
            row.totals = sums
            values = [get(row) for get in getters]
            named.append((name, index, count, sums, values))
            ranked.append((mapping_kind(first), name, count, values))
        if not named:
            return None, totals
        ranked.sort(key=lambda r: _by_pss(r[3]), reverse=True)
        return (named, _shown(ranked, self.top)), totals

    def add(self, process):
        part = process.fold_part
        if part is None and process.mappings is not None:  # (not taken where it was read)
            part = self.part(process)[0]
        if part is None:
            return
        named, shown = part
        pid = process.pid
        by_name, mappers = self.by_name, self.mappers
        for name, index, count, totals, values in named:
            row = by_name.get(name)
            if row is None:
                row = by_name[name] = MappingRow(name, (pid, index))
            elif pid < row.first[0]:
                row.first = (pid, index)
            row.count += count
            row.process_count += 1
            into = row.totals
            for key, value in totals.items():
                if value is not None:
                    into[key] = into.get(key, 0) + value
            mappers.setdefault(name, []).append([pid, *values])
        self.shown[pid] = shown

    def largest(self):
        """(maps, sharers), plain data for JSON; names numbered in the order of their first
        mapping (pid, then place), whatever order the processes came in.

        ``maps["processes"][pid]``: rows ``[kind, name, mappings, *FIELDS]`` (kind an index in
        KINDS, name an index in ``maps["names"]``, or -1 for the box of the rest of that kind),
        the ``top`` largest by PSS first.  ``sharers["mappings"][name index]``: ``{"rows": [[pid,
        *FIELDS], ...], "more": [processes, *FIELDS] or None}`` for mappings of two or more
        processes, the ``top_sharers`` largest by PSS listed (ties in pid order).
        """
        names = {row.name: index for index, row in enumerate(self.rows())}
        per_process = {pid: [[kind, -1 if name is None else names[name], *rest] for kind, name, *rest in self.shown[pid]]
                       for pid in sorted(self.shown)}
        shared = {}
        for name, rows in self.mappers.items():
            if len(rows) < 2:
                continue
            rows.sort(key=lambda r: (-_by_pss(r[1:]), r[0]))
            rest = rows[self.top_sharers:]
            shared[names[name]] = {"rows": rows[:self.top_sharers],
                                   "more": [len(rest), *_added([r[1:] for r in rest])] if rest else None}
        shared = dict(sorted(shared.items()))
        return _documents(names, per_process, shared, self.top, self.top_sharers)


def _counters():
    """The smaps counters the mapping view's FIELDS columns read: all the page sums by name."""
    return tuple(sorted({c for key in FIELDS for c in MAPPING_VIEW.columns[key].counters}))


def _getters():
    return [MAPPING_VIEW.columns[key].getter for key in FIELDS]


def _shown(ranked, top):
    """The ``top`` rows of ``ranked`` (largest first) and one row per kind for the rest."""
    shown = [[kind, name, count, *values] for kind, name, count, values in ranked[:top]]
    for kind in range(len(KINDS)):
        rest = [r for r in ranked[top:] if r[0] == kind]
        if rest:
            shown.append([kind, None, sum(r[2] for r in rest), *_added([r[3] for r in rest])])
    return shown


def _documents(names, per_process, shared, top, top_sharers):
    maps = {"kinds": list(KINDS), "fields": ["kind", "name", "mappings", *FIELDS], "top": top,
            "names": [printable(name, controls=False) for name in names], "processes": per_process}
    sharers = {"fields": ["pid", *FIELDS], "top": top_sharers, "mappings": shared}
    return maps, sharers
