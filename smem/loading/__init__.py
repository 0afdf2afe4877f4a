"""Loading: a source read once, as a report needs it, into a :class:`~smem.model.Reading`.

:func:`load_reading` reads every process of a source that passes the selection: for each its
cmdline, stat (name, kernel-thread flag) and smaps, as :class:`~smem.model.Needs` says, and the
system's meminfo.  A source that lists its pids is read by workers taking chunks of them
(smem.collect); one read in one pass (an archive) by :mod:`.streamed`, each process as it comes.
One process is read by :mod:`.process`; the results are taken in by :mod:`.gathered`.
"""

from ..errors import ProcessGone, ProcessSkipped, ProcessUnreadable, SmapsAbsent
from ..model import Need, Needs
from ..selection import Selection, own_invocation
from ..sources.base import NeedHeld, StreamedSource
from .gathered import Gathered, collector_paused, folded_where_read
from .process import files_read_ahead, read_meminfo, read_process_memory

__all__ = ["load_reading", "selected_pids"]


def load_reading(source, selection=None, *, with_processes=True, needs=None, jobs=None, fold=None,
                 beside=None, listed=None):
    """The :class:`~smem.model.Reading` of every process of ``source`` that passes ``selection``.

    With ``with_processes=False`` only the system files are read (the -w view).
    Kernel threads and zombies (empty cmdline, and stat says so) are left out
    without reading their smaps; a process whose smaps is empty is kept with
    no mappings (views drop it).  ``jobs``: how many processes read
    (smem.collect: None decides by the number of pids and the CPUs, 1 is serial).
    ``fold``: the view's accumulator (``add(process)``), given each process as it is
    read, after which the process's mappings are let go (the mapping view sums them by
    name): memory then holds the sums, not every mapping of every process; the reading
    holds what ``fold.result()`` makes of them once all are read (a value, not the fold).  A source
    that streams (an archive read in one pass) is read so, each process as it comes; where
    it cannot be, from its held form (the reading's ``source``).  ``beside``: more to read of each
    process that has memory, where it is read (a worker), right after it: ``beside.read(pid)``
    there, ``beside.take(what it gave)`` here (--exact's frames: smem.exact.frames_pass); not
    run on a stream.  ``listed``: the pids to read, ascending, where the caller has just listed the
    source's (smem.incremental: those it chose from the stats it read), instead of a listing of
    /proc, which costs as much as reading a few processes.
    """
    selection = selection or Selection()
    needs = needs or Needs()
    if selection.mapping is not None:
        needs = needs.with_kinds(Need.MAPPINGS)  # -M filters mappings: every process's are read
    if isinstance(source, StreamedSource):
        from .streamed import load_streamed
        try:
            return load_streamed(source, selection, needs, fold, with_processes, jobs)
        except NeedHeld:  # out of order, or only tarfile reads it: read it whole, then as any source
            pass
        if fold is not None:  # (outside the handler, whose traceback holds what the stream read)
            fold.clear()
        source = source.held()
    meminfo = read_meminfo(source)
    own_pid = own_invocation(source, selection)
    names = {}
    pids = [pid for pid in (source.pids() if listed is None else listed)
            if selection.wants_pid(pid)] if with_processes else []

    def one(pid):
        try:
            return folded_where_read(read_process_memory(source, pid, selection, own_pid, names, needs, fold), fold)
        except (ProcessUnreadable, ProcessSkipped, SmapsAbsent) as e:
            return e
        except ProcessGone:
            return None

    def one_and_beside(pid):
        result = one(pid)
        return result, (beside.read(pid) if type(result) is tuple and result[0].has_memory else None)

    ahead_names = files_read_ahead(source, selection, needs)

    def ahead(chunk):
        source.read_ahead([f"{pid}/{name}" for pid in chunk for name in ahead_names])

    # in worker processes, not threads: parsing holds the GIL, and 2 and 4 threads were
    # measured slower than one (docs/benchmarks.md)
    gathered = Gathered(fold, needs)
    with collector_paused():
        from ..collect import each_result, workers_for
        workers = workers_for(jobs, len(pids), needs.counters is None)
        if beside is None:
            try:
                for result in each_result(pids, one, workers, ahead if ahead_names else None):
                    gathered.add(result)
            finally:
                if ahead_names:  # (what was read ahead and not read, of a process gone meanwhile, let go)
                    source.read_ahead(())
        else:
            for result, more in each_result(pids, one_and_beside, workers):
                gathered.add(result)
                if more is not None:
                    beside.take(more)
    return gathered.reading(source, meminfo, selection.selects)


def selected_pids(source, selection):
    """The pids ``selection`` (--pid, -P, -U) chooses among the source's processes, as the loader
    would (kernel threads and smem itself left out): whose referenced bits --wss clears."""
    from .process import read_identity
    own_pid = own_invocation(source, selection)
    names = {}
    chosen = []
    for pid in source.pids():
        if not selection.wants_pid(pid):
            continue
        try:
            if read_identity(source, pid, selection, own_pid, names, with_stat=False) is not None:
                chosen.append(pid)
        except ProcessGone:
            continue
    return chosen
