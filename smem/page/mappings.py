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
from ..views.mapping import MAPPING_VIEW, MappingSums

__all__ = ["KINDS", "FIELDS", "largest_mappings", "mapping_kind"]

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


def largest_mappings(processes, top, top_sharers):
    """(maps, sharers), plain data for JSON.

    ``maps["processes"][pid]``: rows ``[kind, name, mappings, *FIELDS]`` (kind an index in
    KINDS, name an index in ``maps["names"]``, or -1 for the box of the rest of that kind),
    the ``top`` largest by PSS first.  ``sharers["mappings"][name index]``: ``{"rows": [[pid,
    *FIELDS], ...], "more": [processes, *FIELDS] or None}`` for mappings of two or more
    processes, the ``top_sharers`` largest by PSS listed.
    """
    getters = [MAPPING_VIEW.columns[key].getter for key in FIELDS]
    names, per_process, mappers = {}, {}, {}
    for process in processes:
        if process.mappings is None or not process.has_memory:
            continue
        sums = MappingSums(split=False)
        sums.add(process)
        mappings = process.mappings
        rows, own = [], {}
        for row in sums.rows():
            values = [get(row) for get in getters]
            index = names.setdefault(row.name, len(names))
            rows.append((mapping_kind(mappings[row.first[1]]), index, row.count, values))
            own[index] = values
        rows.sort(key=lambda r: _by_pss(r[3]), reverse=True)
        shown = [[kind, index, count, *values] for kind, index, count, values in rows[:top]]
        for kind in range(len(KINDS)):
            rest = [r for r in rows[top:] if r[0] == kind]
            if rest:
                shown.append([kind, -1, sum(r[2] for r in rest), *_added([r[3] for r in rest])])
        per_process[process.pid] = shown
        for index, values in own.items():
            mappers.setdefault(index, []).append([process.pid, *values])
    shared = {}
    for index, rows in mappers.items():
        if len(rows) < 2:
            continue
        rows.sort(key=lambda r: _by_pss(r[1:]), reverse=True)
        rest = rows[top_sharers:]
        shared[index] = {"rows": rows[:top_sharers],
                         "more": [len(rest), *_added([r[1:] for r in rest])] if rest else None}
    maps = {"kinds": list(KINDS), "fields": ["kind", "name", "mappings", *FIELDS], "top": top,
            "names": [printable(name, controls=False) for name in names], "processes": per_process}
    sharers = {"fields": ["pid", *FIELDS], "top": top_sharers, "mappings": shared}
    return maps, sharers
