"""Which processes KSM may have moved the figures of since the last collection (smem.incremental).

ksmd merges the identical pages of regions given to it (madvise MADV_MERGEABLE, prctl
PR_SET_MEMORY_MERGE) while their processes sleep (Documentation/admin-guide/mm/ksm.rst).  A
merged page stays mapped, so the process's stat does not move, yet its PSS and USS fall, and
so does the PSS of every process mapping the KSM page it joined; a page merged into the zero
page (``use_zero_pages``) leaves its RSS.  A collection that re-reads only the processes whose
stat moved kept such figures up to ``--max-staleness``: a sleeping virtual machine's PSS GiBs
too high on a host that runs KSM.

The system's counters (``pages_shared``, ``pages_sharing``, ``ksm_zero_pages``) move with every
merge and unmerge.  Where they are as they were, nothing is read; where they moved, each
process's ``/proc/PID/ksm_stat`` (``ksm_merging_pages`` 6.4+, ``ksm_zero_pages`` 6.10+; else
``/proc/PID/ksm_merging_pages``, 5.19+) says whose pages are merged.  One whose counts moved is
read again.  One whose counts did not but that has merged pages shares KSM pages others may
have joined or left, each moving its share of one page by less than that page: it is read again
once the pages merged and unmerged in all since its last read pass its tolerance.  A kernel
before 5.19 says no process's count: its figures wait for ``--max-staleness``.

Only processes ksmd may scan are asked each time: ``ksm_stat`` says whether it may
(``ksm_mergeable`` and ``ksm_merge_any``, kernels of 2025 on; before them, 6.1 to 6.13 at
least, ``ksm_rmap_items`` 0 says only that ksmd has not reached it yet, up to a whole pass after
its region was given: there, one still without an rmap item two of ksmd's full scans after it
was first asked so is taken for one ksmd does not scan: a pass makes an rmap item of each page
of a region given).  One that said no is asked again once it has run (it may have given ksmd a
region since): its stat moved (CPU time, faults) or, where the stats are held
(smem.sources.held_stats), its schedstat did: madvise faults nothing, and a wake-up shorter than
a clock tick moves no CPU time in the stat.  Elsewhere (no C step, --pid, another /proc; or no
run time kept) a region given so waits, as any unseen change does, for its next read by age.
"""

from .parsers.ksm import parse_ksm_stat, parse_ksm_value

__all__ = ["KsmChanges", "SYSTEM_COUNTERS"]

#: /sys/kernel/mm/ksm counters that move when a page is merged or unmerged
SYSTEM_COUNTERS = ("pages_shared", "pages_sharing", "ksm_zero_pages")


class KsmChanges:
    """The KSM counters of one collection after another."""

    def __init__(self):
        self._system = None  # SYSTEM_COUNTERS at the last collection (None: not read, or no KSM)
        self._pages = {}     # pid -> (merged pages, zero pages) as last read
        self._drift = {}     # pid -> KiB of pages merged or unmerged in all since its last read
        self._unscanned = set()  # pids ksmd did not scan when last asked, and not run or read since
        self._unreached = {}     # pid -> full_scans when first asked without an rmap item (kernels that do not say)

    def moved(self, source, pids, chosen, limits, page_kib):
        """The pids of ``pids`` (but ``chosen``, read anyway) to read again for what KSM did since
        the last call: those whose counts moved, and those with merged pages once what all merged
        or unmerged passes their ``limits`` (KiB, by pid; smem.incremental's tolerance of each PSS)."""
        system = _system_counters(source)
        before, self._system = self._system, system
        if system is None or before is None or system == before or not page_kib:
            return set()
        merged = sum(abs(now - was) for now, was in zip(system, before)) * page_kib
        moved = set()
        unscanned, unreached = self._unscanned, self._unreached
        passes = ()  # (full_scans, read once where needed)
        for pid in pids:
            if pid in unscanned:
                continue
            now, scanned = _process_pages(source, pid)
            if scanned is None:  # (not reached yet, or never will be: two full scans tell)
                if passes == ():
                    passes = _full_scans(source)
                since = unreached.setdefault(pid, passes)
                if passes is not None and since is not None and passes - since >= 2:
                    unscanned.add(pid)
            elif not scanned:
                unscanned.add(pid)
            else:
                unreached.pop(pid, None)
            if now is None:  # (gone, or no count kept: waits for max-staleness)
                continue
            was = self._pages.get(pid)
            self._pages[pid] = now  # (a chosen one's too: its read has what KSM did)
            if pid in chosen:
                continue
            if now != was and (was is not None or any(now)):
                moved.add(pid)
            elif any(now):
                drift = self._drift.get(pid, 0) + merged
                if drift > limits.get(pid, 0):
                    moved.add(pid)
                else:
                    self._drift[pid] = drift
        return moved

    def read(self, pids):
        """``pids`` were read: what KSM did before is in their figures."""
        for pid in pids:
            self._drift.pop(pid, None)
        self.ran(pids)

    def ran(self, pids):
        """``pids`` ran since they were asked (their stat or schedstat moved): each may have given ksmd
        a region (madvise needs no fault), so each is asked again, and given two more of ksmd's scans."""
        self._unscanned.difference_update(pids)
        for pid in pids:
            self._unreached.pop(pid, None)

    def forget(self, pid):
        self._pages.pop(pid, None)
        self._drift.pop(pid, None)
        self._unscanned.discard(pid)
        self._unreached.pop(pid, None)

    def clear(self):
        self._system = None
        self._pages.clear()
        self._drift.clear()
        self._unscanned.clear()
        self._unreached.clear()


def _full_scans(source):
    """How many full passes ksmd has made over the processes it scans, or None where unknown."""
    raw = source.read_sys_optional("kernel/mm/ksm/full_scans")
    try:
        return parse_ksm_value(raw) if raw is not None else None
    except ValueError:
        return None


def _system_counters(source):
    """SYSTEM_COUNTERS (0 for one the kernel lacks), or None where there is no KSM."""
    values = []
    for name in SYSTEM_COUNTERS:
        raw = source.read_sys_optional(f"kernel/mm/ksm/{name}")
        try:
            values.append(parse_ksm_value(raw) if raw is not None else None)
        except ValueError:
            values.append(None)
    return None if values[0] is None else tuple(v or 0 for v in values)


#: ksm_stat's words that ksmd may scan the process: its regions given to KSM (kernels of 2025 on)
_GIVEN = ("ksm_mergeable", "ksm_merge_any")


def _process_pages(source, pid):
    """((pages merged, pages merged into the zero page), whether ksmd may scan it) of ``pid``;
    (None, True) where its count is unknown.  Where ksm_stat does not say (no _GIVEN) and ksmd
    made no rmap item of it, None: not yet, or never; where it is empty the process has no
    address space (a kernel thread, a zombie) and never will be."""
    raw = source.read_optional(f"{pid}/ksm_stat")
    if raw == b"":
        return None, False
    try:
        stat = parse_ksm_stat(raw) if raw else {}
    except ValueError:
        stat = {}
    merging = stat.get("ksm_merging_pages")
    if not isinstance(merging, int):
        raw = source.read_optional(f"{pid}/ksm_merging_pages")
        try:
            merging = parse_ksm_value(raw) if raw else None
        except ValueError:
            merging = None
    if merging is None:
        return None, True
    zero = stat.get("ksm_zero_pages")
    pages = merging, zero if isinstance(zero, int) else 0
    rmap_items = stat.get("ksm_rmap_items")
    given = [stat.get(word) for word in _GIVEN]
    if not isinstance(rmap_items, int) or rmap_items > 0 or any(pages):
        return pages, True
    if all(said is None for said in given):  # (a kernel that does not say)
        return pages, None
    return pages, any(said != "no" for said in given)
