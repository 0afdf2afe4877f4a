"""The raw cells of rows that did not change, kept from one table to the next (watch mode).

A watched table is made again every frame from rows most of which are those of the frame
before: a process whose stat did not change is the same Process object in the next reading
(smem.incremental keeps it), so its row's cells are what they were.  :class:`RowMemo` keeps,
for each row of the last table, what its cells were computed from (``row.memo_inputs``: its
name across readings and the objects and figures its getters read) and the cells; the next
table takes the kept cells of a row whose inputs are the same (``==``: the same Process
objects, equal figures) and computes the rest.  Sorting, totals and formatting stay
report.make_table's and the format's: the memo only saves calling the getters, and the
classic format making the line of a row whose cells are the same list as last time with the
same template, so a table made with it is the one made without.

A row with no ``memo_inputs`` (or None) is computed each time.  The memo holds one table's
rows: a change of view, columns or sort column starts it afresh.
"""

__all__ = ["RowMemo"]


class RowMemo:
    """Cells of the rows of the last table, by each row's inputs."""

    def __init__(self):
        self._shape = None   # (view, column keys, sort key) of the kept cells
        self._kept = {}      # row name -> (inputs, sort value, cells)
        self.computed = 0    # rows of the latest table whose cells were computed (not kept)
        self._line_shape = None  # what a line is made with beside its cells (the format's template, ...)
        self._lines = {}         # id(cells) -> (cells, line)

    def entries(self, view, rows, columns, sort):
        """(sort value, cells, row) of each row, as report.build_table makes them."""
        shape = (view, tuple(c.key for c in columns), sort.key)
        kept = self._kept if self._shape is not None and self._shape[0] is view and self._shape[1:] == shape[1:] \
            else {}
        getters = [c.getter for c in columns]
        by_sort = sort.getter
        fresh, entries, computed = {}, [], 0
        for row in rows:
            memo = getattr(row, "memo_inputs", None)
            if memo is None:
                entries.append((by_sort(row), [g(row) for g in getters], row))
                computed += 1
                continue
            name, inputs = memo
            hit = kept.get(name)
            if hit is None or hit[0] != inputs:
                hit = (inputs, by_sort(row), [g(row) for g in getters])
                computed += 1
            fresh[name] = hit
            entries.append((hit[1], hit[2], row))
        self._shape, self._kept, self.computed = shape, fresh, computed
        return entries

    def lines(self, shape, rows, make):
        """Each of ``rows`` (a table's cells) as a line: the line made last time for the same cells
        (the same list: kept by :meth:`entries`) with the same ``shape`` (what else the format
        makes a line of), else ``make(n, cells)``."""
        kept = self._lines if shape == self._line_shape else {}
        fresh, out = {}, []
        for n, row in enumerate(rows):
            hit = kept.get(id(row))
            if hit is None or hit[0] is not row:
                hit = (row, make(n, row))
            fresh[id(row)] = hit
            out.append(hit[1])
        self._line_shape, self._lines = shape, fresh
        return out
