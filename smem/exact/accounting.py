"""The arithmetic: figures for processes and any grouping of them, vectorised with numpy."""

import numpy as np

from ..errors import ProcessGone, ProcessUnreadable
from .frames import (FRAMES_MEMBER, KPAGES_MEMBER, _BLOCK_MASK, _BLOCK_SHIFT, _UNOWNED,
                     DistinctFrames, ExactUnavailable, FrameTable, settle_own)
from .frame_arrays import (SHARES_AT_ONCE, blocks_of, freed_arrays_returned, raise_to_listed, rank_in_place,
                           shares, unique_counts)
from .members import encode_frames, encode_kpages
from .readers import PagemapReader, frame_reader

#: Blocks of 4096 frames index the frames directly while they hold no more than this
#: many times the frames mapped (plus the floor: small tables cost nothing); beyond,
#: frames spread one per block would cost 4096 times their number in memory and time.
_SPREAD = 4
_SPREAD_FLOOR = 1 << 22

__all__ = ["ExactFigures", "SharedWith", "ExactAccounting", "account", "exact_capture_members"]


class ExactFigures:
    """A group's exact figures, KiB (PSS is fractional: sum of c / K pages)."""

    __slots__ = ("rss_kib", "pss_kib", "uss_kib", "shared_kib", "swap_kib")

    def __init__(self, rss_kib, pss_kib, uss_kib, shared_kib, swap_kib):
        self.rss_kib = rss_kib          # distinct frames the group maps
        self.pss_kib = pss_kib          # its proportional share of them
        self.uss_kib = uss_kib          # frames nothing outside the group maps
        self.shared_kib = shared_kib    # rss - uss: frames shared with the rest
        self.swap_kib = swap_kib        # distinct swap slots (see module notes)

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __eq__(self, other):
        return isinstance(other, ExactFigures) and self.as_dict() == other.as_dict()

    def __repr__(self):
        return ("ExactFigures(rss={0.rss_kib}, pss={0.pss_kib:.1f}, uss={0.uss_kib}, "
                "shared={0.shared_kib}, swap={0.swap_kib})".format(self))


class SharedWith:
    """Where the frames a selection shares with others are mapped (KiB).

    ``shared_kib``: distinct frames of the selection that something outside
    it maps too.  ``holders``: for each other process (or group), how much of
    that it maps, largest first; a frame counts once per holder, so holders
    overlap and may sum to more than ``shared_kib``.  ``elsewhere_kib``:
    frames with mappings not found in any process looked at (processes not
    read, or gone since).
    """

    __slots__ = ("shared_kib", "holders", "elsewhere_kib")

    def __init__(self, shared_kib, holders, elsewhere_kib):
        self.shared_kib = shared_kib
        self.holders = holders
        self.elsewhere_kib = elsewhere_kib

    def __repr__(self):
        return f"SharedWith(shared={self.shared_kib}, holders={len(self.holders)}, elsewhere={self.elsewhere_kib})"


def account(source, mappings_by_pid, *, page_size=None, keep_frames=False, jobs=None, read=None):
    """Exact accounting of the processes in ``mappings_by_pid`` ({pid: [Mapping] or None}).

    Only the pagemap ranges of the mappings given are read (so a -M filter
    restricts the accounting to those mappings); None stands for every mapping
    of the process, read whole where it is read (smem.exact.scanned: PAGEMAP_SCAN
    in worker processes, ``jobs`` of them as smem.collect decides), or all a
    capture holds of it.  Then kpagecount/kpageflags for the frames found.
    Processes that exit meanwhile, or whose pagemap cannot be read, are left
    out and listed in ``skipped``.  Raises :class:`ExactUnavailable` without
    root, or without kernel support.  ``read``: a :class:`~smem.exact.scanned.FramesPass` the
    loader ran (frames_pass), whose frames of whole processes are taken as read; those it lacks
    are read here.
    """
    reader = read.reader if read is not None else frame_reader(source, page_size)
    reader.check()
    frames, skipped = {}, {}
    whole = [pid for pid, mappings in mappings_by_pid.items() if mappings is None]
    if whole and isinstance(reader, PagemapReader) and not keep_frames:
        from .scanned import collect_distinct_frames, no_hugetlb
        freed_arrays_returned()
        if read is not None:  # (each taken out of the pass: it holds none once accounted)
            frames = {pid: read.frames.pop(pid) for pid in whole if pid in read.frames}
            skipped = {pid: read.skipped[pid] for pid in whole if pid in read.skipped}
            read.frames.clear()
        rest = [pid for pid in whole if pid not in frames and pid not in skipped]
        if rest:
            more, also = collect_distinct_frames(source, reader, rest, jobs)
            frames.update(more)
            skipped.update(also)
        # what kpageflags would zero (the zero page, hugetlb) cannot be among frames PAGEMAP_SCAN
        # found (it leaves the zero page out) while no hugetlb page exists
        reader.skip_flags = (len(frames) == len(mappings_by_pid) and all(f.scanned for f in frames.values())
                             and no_hugetlb(source))
    for pid, mappings in mappings_by_pid.items():
        if pid in frames or pid in skipped:
            continue
        try:
            frames[pid] = reader.process_frames(pid, mappings)
            if mappings is None and not keep_frames:  # a process whole: its distinct frames suffice
                frames[pid] = DistinctFrames.of(pid, frames[pid].pfns, frames[pid].swap)
        except ProcessGone:
            skipped[pid] = "gone"
        except ProcessUnreadable as e:
            skipped[pid] = e.reason
    if isinstance(reader, PagemapReader):
        present = [f.pfns for f in frames.values() if len(f.pfns)]
        if present and not any(p.any() for p in present):
            raise ExactUnavailable(
                f"{source.description}: pagemap shows no physical frame numbers: since Linux "
                "4.0 only CAP_SYS_ADMIN sees them (run as root)")
    acc = ExactAccounting(frames, reader, reader.page_size, keep_frames=keep_frames)
    acc.skipped = skipped
    return acc


class ExactAccounting:
    """Exact figures for processes and any grouping of them.

    Build it with :func:`account`; or directly from ``frames``
    ({pid: ProcessFrames}) and ``table``, a :class:`FrameTable` covering
    their frames or a function from a sorted array of distinct PFNs to one
    (a reader's ``frame_table``).  Unless ``keep_frames`` (needed for
    :meth:`capture_members`), the frames' PFN arrays are sorted in place and
    not kept: memory peaks near 12 bytes per present page.

    Internally every frame gets a dense index (PFNs grouped in blocks of
    4096, only blocks in use), so per-frame arrays are indexed directly and
    a grouping costs time proportional to its processes' pages.  Where the
    frames are so spread that blocks would hold mostly frames no one maps
    (more than _SPREAD times the frames mapped), the index is the rank among
    the distinct frames instead: memory follows the frames, never the PFNs.
    """

    def __init__(self, frames, table, page_size, *, keep_frames=False):
        self.page_size = page_size
        self.page_kib = page_size // 1024
        self.skipped = {}
        self.flags_available = None
        self._own = settle_own(frames)  # pid: frames only it maps, not among its frames
        self._frames = dict(frames) if keep_frames else None
        if (frames and not keep_frames and hasattr(table, "owned_counts")
                and all(isinstance(f, DistinctFrames) for f in frames.values())):
            self._take_distinct(frames, table)
            return
        # Fresh memory is costly (page faults): sort in place where we may, and never
        # make whole-array temporaries we can avoid.
        if not isinstance(table, FrameTable) and hasattr(table, "frame_table"):
            table = table.frame_table  # a reader
        uniques, blocks = {}, []
        for pid, f in frames.items():
            u, c = (f.distinct() if isinstance(f, DistinctFrames)
                    else unique_counts(f.pfns, in_place=not keep_frames))
            uniques[pid] = (u, c)
            if len(u):
                blocks.append(blocks_of(u))
        self._blocks = np.unique(np.concatenate(blocks)) if blocks else np.zeros(0, np.uint64)
        del blocks
        self._shift, self._mask = _BLOCK_SHIFT, _BLOCK_MASK
        entries = sum(len(u) for u, _ in uniques.values())
        if len(self._blocks) << _BLOCK_SHIFT > _SPREAD * entries + _SPREAD_FLOOR:
            # blocks of one frame each: the distinct frames themselves
            self._shift, self._mask = 0, 0
            self._blocks = np.unique(np.concatenate([u for u, _ in uniques.values()]))
        size = len(self._blocks) << self._shift
        self._itype = np.uint32 if size < 1 << 32 else np.int64
        self._proc = {}
        mark = np.zeros(size, dtype=bool)
        for pid in list(uniques):
            u, c = uniques.pop(pid)
            d = self._dense(u)
            del u
            mark[d] = True
            swap = np.unique(frames[pid].swap)
            self._proc[pid] = (d, c, swap)
        used = np.flatnonzero(mark)
        del mark
        pfns = self._pfn_of(used)
        if not isinstance(table, FrameTable):
            table = table(pfns)
        self.table = table if keep_frames else None
        self.flags_available = table.flags is not None
        self._count = np.zeros(size, dtype=np.uint32)
        self._fill_counts(table)
        self._acc = np.zeros(size, dtype=np.uint32)
        raise_to_listed(self._count, self._proc.values(), self._acc)

    def _take_distinct(self, frames, reader):
        """Build from DistinctFrames (each process's distinct frames, what the workers sent),
        taking their arrays: every frame's index is its rank among all the frames mapped, written
        over the process's PFNs in place, and the counts are read into one array (the reader's
        ``owned_counts``), so memory holds about 4 bytes per process and frame, and 8 per frame."""
        procs = [(pid, f) for pid, f in frames.items()]
        entries = sum(len(f.pfns) for _, f in procs)
        top = max((int(f.pfns[-1]) for _, f in procs if len(f.pfns)), default=-1)
        if top + 1 <= _SPREAD * entries + _SPREAD_FLOOR:
            distinct = rank_in_place(procs, top)
        else:  # frames too spread for a map of every PFN: ranks found by bisection
            distinct = np.unique(np.concatenate([f.pfns for _, f in procs])) if entries else np.zeros(0, np.uint32)
            for _, f in procs:
                f.pfns = np.searchsorted(distinct, f.pfns).astype(np.uint32)
        self._blocks, self._shift, self._mask = distinct, 0, 0
        self._itype = np.uint32
        self._proc = {}
        for pid, f in procs:
            d = f.pfns if f.pfns.dtype == np.uint32 else f.pfns.astype(np.uint32)
            f.pfns = None
            self._proc[pid] = (d, f.counts, f.swap)
        self._count = reader.owned_counts(distinct)
        self.flags_available = reader.flags_available
        self.table = None
        self._blocks = None  # (only the reference's construction looks PFNs up again)
        self._acc = np.zeros(len(distinct), dtype=np.uint32)
        raise_to_listed(self._count, self._proc.values(), self._acc)

    # dense frame index
    def _dense(self, pfns_sorted):
        """Dense indices of sorted PFNs whose blocks are in use (all of ours are)."""
        u = pfns_sorted
        if not len(u):
            return np.zeros(0, dtype=self._itype)
        if self._shift == 0:
            return np.searchsorted(self._blocks, u).astype(self._itype)
        shift = np.uint64(self._shift)
        first = int(np.searchsorted(self._blocks, u[0] >> shift))
        last = int(np.searchsorted(self._blocks, u[-1] >> shift, side="right"))
        blocks = self._blocks[first:last]
        starts = np.searchsorted(u, blocks << shift)
        lengths = np.diff(np.append(starts, len(u)))
        out = np.empty(len(u), dtype=self._itype)
        np.bitwise_and(u, np.uint64(self._mask), out=out, casting="unsafe")
        bases = (np.arange(first, last, dtype=np.int64) << self._shift).astype(self._itype)
        if len(bases) == 1:
            out += bases[0]
        else:
            out += np.repeat(bases, lengths)
        return out

    def _pfn_of(self, dense):
        dense = dense.astype(np.int64)
        return ((self._blocks[dense >> self._shift] << np.uint64(self._shift))
                | (dense & self._mask).astype(np.uint64))

    def _fill_counts(self, table):
        pfns, counts = table.pfns, table.counts
        if not len(pfns) or not len(self._blocks):
            return
        b = pfns >> np.uint64(self._shift)
        at = np.searchsorted(self._blocks, b)
        at[at == len(self._blocks)] = 0
        inside = self._blocks[at] == b  # a capture's table may hold frames we do not use
        counts = np.minimum(counts, np.uint64(np.iinfo(np.uint32).max)).astype(np.uint32)
        if table.flags is not None:
            counts[(table.flags & np.uint64(_UNOWNED)) != 0] = 0
        d = self._dense(pfns[inside])
        self._count[d] = counts[inside]

    # per group
    @property
    def pids(self):
        """The pids accounted, ascending."""
        return sorted(self._proc)

    def _group_frames(self, pids):
        """(distinct dense frames, mappings of each inside the group) for ``pids``."""
        members = [self._proc[p] for p in dict.fromkeys(pids) if p in self._proc]
        if len(members) == 1:
            d, c, _ = members[0]
            return d, (c if c is not None else np.ones(len(d), dtype=np.uint32)), members
        acc = self._acc
        fresh = []
        for d, c, _ in members:
            fresh.append(d[acc[d] == 0])
            acc[d] += c if c is not None else np.uint32(1)
        frames = np.concatenate(fresh) if fresh else np.zeros(0, dtype=self._itype)
        inside = acc[frames]
        acc[frames] = 0
        return frames, inside, members

    def _figures(self, pids):
        pids = [p for p in dict.fromkeys(pids) if p in self._proc]
        members = [self._proc[p] for p in pids]
        if len(members) == 1 and members[0][1] is None:
            # one process, every frame mapped once in it: the common case, made cheap
            k = self._count[members[0][0]]
            k = k[k > 0]
            pages = len(k)
            uss = int(np.count_nonzero(k == 1))
            pss = float(np.reciprocal(k, dtype=np.float64).sum()) if pages else 0.0
        else:
            frames, inside, members = self._group_frames(pids)
            pages, uss, pss = 0, 0, 0.0
            for lo in range(0, len(frames), SHARES_AT_ONCE):  # (temporaries of a slice at a time)
                part = shares(self._count[frames[lo:lo + SHARES_AT_ONCE]], inside[lo:lo + SHARES_AT_ONCE])
                pages, uss, pss = pages + part[0], uss + part[1], pss + part[2]
        own = sum(self._own.get(p, 0) for p in pids)  # frames no other process maps: its USS
        pages, uss, pss = pages + own, uss + own, pss + own
        swaps = [s for _, _, s in members if len(s)]
        nswap = len(swaps[0]) if len(swaps) == 1 else (len(np.unique(np.concatenate(swaps)))
                                                      if swaps else 0)
        pk = self.page_kib
        return ExactFigures(pages * pk, pss * pk, uss * pk, (pages - uss) * pk, nswap * pk)

    def process(self, pid):
        """:class:`ExactFigures` of one process (KeyError if it was not accounted)."""
        if pid not in self._proc:
            raise KeyError(pid)
        return self._figures([pid])

    def processes(self):
        """{pid: ExactFigures} for every process accounted."""
        return {pid: self._figures([pid]) for pid in self.pids}

    def groups(self, grouping):
        """{key: ExactFigures} for ``grouping`` ({key: iterable of pids}).

        Groups may overlap; each is accounted on its own.  Pids not
        accounted (gone, unreadable, unknown) are ignored.
        """
        return {key: self._figures(list(pids)) for key, pids in grouping.items()}

    def total(self):
        """The figures of all processes accounted as one group (distinct frames system-wide)."""
        return self._figures(self.pids)

    def shared_with(self, selection_pids, all_pids=None, *, grouping=None):
        """Who maps the frames the selection shares: a :class:`SharedWith`.

        Holders are the processes of ``all_pids`` (default: all accounted)
        outside the selection, by pid; or, with ``grouping`` ({key: pids}),
        those groups (their members outside the selection).
        """
        selection = set(selection_pids)
        frames, inside, _ = self._group_frames(list(selection))
        k = self._count[frames]
        shared = (k > 0) & (inside < np.maximum(k, inside))
        frames = frames[shared]
        missing = (k[shared] - inside[shared]).astype(np.int64)
        pk = self.page_kib
        others = [p for p in dict.fromkeys(self.pids if all_pids is None else all_pids)
                  if p in self._proc and p not in selection]
        if grouping is None:
            holder_groups = {p: [p] for p in others}
        else:
            holder_groups = {key: [p for p in pids if p in self._proc and p not in selection]
                             for key, pids in grouping.items()}
        mark = np.zeros(len(self._count), dtype=bool)
        mark[frames] = True
        acc = self._acc
        for p in others:
            d, c, _ = self._proc[p]
            hit = mark[d]
            acc[d[hit]] += c[hit] if c is not None else np.uint32(1)
        seen = np.zeros(len(self._count), dtype=np.int32)
        holders = {}
        for n, (key, pids) in enumerate(holder_groups.items(), 1):
            held = 0
            for p in dict.fromkeys(pids):
                d = self._proc[p][0]
                h = d[mark[d]]
                new = h[seen[h] != n]
                seen[new] = n
                held += len(new)
            if held:
                holders[key] = held * pk
        elsewhere = int(np.count_nonzero(acc[frames].astype(np.int64) < missing))
        acc[frames] = 0
        holders = dict(sorted(holders.items(), key=lambda kv: -kv[1]))
        return SharedWith(len(frames) * pk, holders, elsewhere * pk)

    # capture
    def capture_members(self):
        """Capture members holding exactly the data this accounting used.

        Needs ``keep_frames=True`` at construction.
        """
        if self._frames is None:
            raise ValueError("capture_members needs ExactAccounting(..., keep_frames=True)")
        members = {f"{pid}/{FRAMES_MEMBER}": encode_frames(f, self.page_size)
                   for pid, f in sorted(self._frames.items())}
        members[KPAGES_MEMBER] = encode_kpages(self.table, self.page_size)
        return members


def exact_capture_members(source, pids, mappings_by_pid, page_size=None):
    """Members to add to a capture of ``source`` so it can be accounted exactly offline.

    Returns {member name: bytes}: ``N/frames`` for each process of ``pids``
    that could be read and ``kpages.sparse`` for the frames they map.
    Raises :class:`ExactUnavailable` as :func:`account` does.
    """
    acc = account(source, {pid: mappings_by_pid[pid] for pid in pids if pid in mappings_by_pid},
                  page_size=page_size, keep_frames=True)
    return acc.capture_members()
