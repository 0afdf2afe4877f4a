"""A moved process's figures from its counters, where all it did was fault in pages of its own.

Re-reading a process's smaps_rollup walks its page tables, and most of what a collection costs
is that walk for the processes that moved (smem.incremental).  Many of them only allocated:
each fault of theirs made a new anonymous page, mapped by them alone.  The kernel's counters
say so without a walk.  Between the walk that gave a process's figures and now, with its
/proc/PID/stat (minflt, majflt: proc(5)) and /proc/PID/statm (resident and shared pages:
Documentation/filesystems/proc.rst, Table 1-3) read at both:

* a minor fault maps a new page (RSS + 1), breaks copy-on-write or maps the zero page (RSS
  unchanged, and a copy-on-write break raises PSS), or maps a page back from the swap cache;
* a page freed, swapped out or reclaimed lowers RSS with no fault;

so where its anonymous pages rose by exactly as many as its minor faults, with no major fault,
no page of files or shmem in or out, and nothing in swap to come back, every fault made a
private page and none went: its RSS, PSS and USS each rose by those pages, and nothing else
in smaps_rollup moved (a page made by a fault is dirty, and no page changes hands).

A fault can also map many pages (a huge page or a large folio: one fault, 512 pages), and
pages can come with no fault of its own (another process's process_vm_writev or /proc/PID/mem
write, userfaultfd filling them), while a write to a page it shares with a child breaks
copy-on-write, a minor fault that maps no new page and raises its PSS and USS: the two can
balance.  So a process that shared anonymous pages at the walk (its Pss_Anon less than its
Anonymous) is given figures so only while the machine made no large anonymous folio since the
walk (:func:`large_folios`), and its huge pages (AnonHugePages) are never estimated.  (Pages
another writes into one that shares, balanced by its copy-on-write breaks, still pass: its
figure waits for ``--max-staleness``.)

What others do to its shared pages moves its PSS too; smem.incremental follows that as it
does for a process that did not move.  A process that forks makes its pages shared, so one
whose child is new is walked.  The counters are exact on some kernels and summed lazily per
CPU (or per thread) on others; :class:`CounterTrust` gives them trust only while they agree
with the walks.
"""

import collections
from typing import NamedTuple, Optional


__all__ = ["Baseline", "agrees", "baseline_of", "grown", "CounterTrust", "Payoff", "estimable", "BASELINE_KEYS",
           "large_folios"]

#: what a private page faulted in adds to (each by its size)
_GROWN = frozenset({"Rss", "Pss", "Pss_Anon", "Pss_Dirty", "Private_Dirty", "Anonymous"})
#: what it leaves as it was
_UNMOVED = frozenset({"Pss_File", "Pss_Shmem", "Shared_Clean", "Shared_Dirty", "Private_Clean", "Swap",
                      "SwapPss", "Shared_Hugetlb", "Private_Hugetlb", "ShmemPmdMapped",
                      "FilePmdMapped", "LazyFree", "KSM"})
#: what a baseline needs of smaps_rollup beside what the report keeps
BASELINE_KEYS = ("Rss", "Anonymous", "Pss_Anon", "Swap")


def estimable(kept):
    """Whether the counters ``kept`` (smaps_rollup keys; None: all of them) can be estimated:
    none of them moves in a way the counters cannot say (Referenced, Locked)."""
    return kept is not None and _GROWN.union(_UNMOVED).issuperset(kept)


class Baseline(NamedTuple):
    """A process's counters at the walk that gave its figures."""

    minflt: int
    majflt: int
    anonymous: int   # pages
    shared: int      # pages
    counters: dict   # its smaps_rollup counters as the report keeps them
    private: bool = True          # none of its anonymous pages was shared (Pss_Anon == Anonymous)
    large: Optional[int] = None   # large_folios() before the walk


#: /proc/vmstat's counts of anonymous huge pages made by a fault or by khugepaged
_LARGE_EVENTS = ("thp_fault_alloc", "thp_collapse_alloc")


def large_folios(counters, mthp):
    """How many anonymous large folios (many pages for one fault, or none) this machine has made,
    from /proc/vmstat's ``counters`` (parsers.vmstat) and each size's counts
    (smem.sources.folio_stats); None where either is not known."""
    if not counters or mthp is None:
        return None
    if any(name not in counters for name in _LARGE_EVENTS):
        return None
    return sum(counters[name] for name in _LARGE_EVENTS) + sum(mthp)


def agrees(statm, walked, page_kib):
    """Whether the counters of ``statm`` say what the walk (``walked``: smaps_rollup's
    BASELINE_KEYS) found: its anonymous pages, and its pages of files and shmem."""
    rss, anonymous = walked.get("Rss"), walked.get("Anonymous")
    return statm.anonymous is not None and rss is not None and anonymous is not None \
        and statm.anonymous * page_kib == anonymous and statm.shared * page_kib == rss - anonymous


def baseline_of(stat, statm, walked, counters, page_kib, large=None):
    """The Baseline of a walk that found ``walked`` (smaps_rollup's BASELINE_KEYS) and ``counters``
    (those the report keeps), with the stat and statm read with it and ``large`` (large_folios()
    read before the walk); or None: the counters and the walk disagree (it moved between the
    reads, or the kernel sums its counters lazily), something is unknown, or it has pages in
    swap (one that comes back from the swap cache is a minor fault that may map a shared page)."""
    if stat.minflt is None or stat.majflt is None or walked.get("Swap") != 0 \
            or not agrees(statm, walked, page_kib):
        return None
    private = walked.get("Pss_Anon") is not None and walked.get("Pss_Anon") == walked.get("Anonymous")
    return Baseline(stat.minflt, stat.majflt, statm.anonymous, statm.shared, counters, private, large)


def grown(baseline, stat, statm, page_kib, large=None):
    """The smaps_rollup counters now, from the ``baseline`` and the stat and statm (and
    large_folios(): ``large``) read now, where every fault since made a page of its own (the
    module's docstring); else None."""
    if not baseline.private and (large is None or large != baseline.large):
        return None
    if stat.majflt != baseline.majflt or statm.shared != baseline.shared or statm.anonymous is None \
            or stat.minflt is None:
        return None
    pages = statm.anonymous - baseline.anonymous
    if pages != stat.minflt - baseline.minflt or pages < 0:
        return None
    if pages == 0:
        return baseline.counters
    kib = pages * page_kib
    return {key: value + kib if key in _GROWN and value is not None else value
            for key, value in baseline.counters.items()}


class CounterTrust:
    """Whether statm's counters agree with the page walk on this kernel, from the walks read with
    the counters: trusted after ``needed`` agreements, while no more than one walk in ten
    disagreed (a process that faults between the two reads does it).  A kernel that sums its
    counters lazily leaves most processes with a remainder, and fails that at once."""

    NEEDED = 16

    def __init__(self, needed=NEEDED):
        self.needed = needed
        self.agreed = 0
        self.disagreed = 0

    def checked(self, agreed):
        if agreed:
            self.agreed += 1
        else:
            self.disagreed += 1

    @property
    def trusted(self):
        return self.agreed >= self.needed and self.disagreed * 10 <= self.agreed

    @property
    def hopeless(self):
        """Whether the counters disagreed too often for agreement to make up for it (then they
        are no longer read)."""
        return self.disagreed >= 64 and self.disagreed > self.agreed


class Payoff:
    """Whether reading the counters pays for itself: each walk reads statm for its baseline and
    each moved process is tried, which is worth it where many moved processes only grew (watch
    mode's 2 s frames), not where nearly all also freed (a 15 s scrape: faults and frees mix
    over a longer interval) or few move.  A walk saved costs as much as some fifty statm reads:
    where, over the latest :data:`WINDOW` collections, fewer than one read in :data:`READS_A_FIGURE`
    gave a figure, the counters are left unread for ``pause`` seconds (twice as long after each
    such verdict, up to 16 times the first), then tried again."""

    WINDOW = 8
    READS_A_FIGURE = 40

    def __init__(self, pause):
        self.first_pause = self.pause = pause
        self.until = None
        self.recent = collections.deque(maxlen=self.WINDOW)  # (reads, tries, figures) of each collection

    def reading(self, now):
        """Whether this collection reads the counters."""
        return self.until is None or now >= self.until

    def collected(self, reads, tries, figures, now):
        """Count what the collection at ``now`` read of statm (``reads``), of which ``tries`` for
        moved processes with a baseline, and the figures they gave.  No verdict before 64 tries:
        the first collections read baselines, which can give no figure yet."""
        if not self.reading(now):
            return
        self.until = None
        self.recent.append((reads, tries, figures))
        read, tried, gave = (sum(column) for column in zip(*self.recent))
        if tried >= 64 and gave * self.READS_A_FIGURE < read:
            self.until = now + self.pause
            self.pause = min(self.pause * 2, self.first_pause * 16)
            self.recent.clear()
        elif tried >= 64:
            self.pause = self.first_pause
