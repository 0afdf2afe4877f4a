"""Loading a source read in one pass (a capture's archive): each process as its files arrive."""

from ..errors import ProcessGone, ProcessSkipped, ProcessUnreadable, SmapsAbsent
from .gathered import Gathered, collector_paused, folded_where_read
from .process import name_of, read_counters, read_identity, read_meminfo, user_name

__all__ = ["load_streamed", "MAX_WALKERS"]


def load_streamed(source, selection, needs, fold, with_processes, jobs):
    """load_reading of a source read in one pass: each process as its files arrive.

    The -U filter needs the user's name, which a capture may give only at its end
    (its passwd member): a process whose name is not known yet when it arrives is read
    and kept aside (folded only once the name is known), the one case where what is
    held grows with the capture (-U on a capture whose directories name no users).

    With workers (:func:`_streamed_workers`), each walks the archive too, from its start
    (``source.replayed()``), and loads its share of the processes (every n-th): the stream is
    one (a gzip stream cannot be split), but the processes' parsing is shared.
    """
    gathered = Gathered(fold, needs)
    pending = []  # (uid, result) whose -U verdict waits for the user's name
    unfiltered = selection.without_user()
    none = frozenset()

    def shares(mine, n):
        """(None, result) of each process in the shares ``mine`` of n (the processes whose
        position in the archive is k modulo n, for k in mine), or (uid, result) where the -U
        verdict waits for the user's name; ``source`` itself walked for share 0."""
        walked = source if 0 in mine else source.replayed()
        for position, (pid, files) in enumerate(walked.each_process()):
            if position % n not in mine or not with_processes or not selection.wants_pid(pid):
                continue
            try:
                process = read_identity(files, pid, unfiltered, none, {}, needs.stat)
            except ProcessGone:
                continue
            if process is None:
                continue
            decided = selection.user is None or process.uid is None or walked.knows_user(process.uid)
            if selection.user is not None and decided and not selection.wants_user(process.user, process.uid):
                continue
            try:
                result = read_counters(files, process, selection, needs, fold)
            except (ProcessUnreadable, ProcessSkipped, SmapsAbsent) as e:
                if isinstance(e, ProcessUnreadable):
                    e.name = name_of(files, process)
                result = e
            except ProcessGone:
                continue
            if decided:  # (one kept aside is folded once its user is known, as a whole process)
                result = folded_where_read(result, fold)
            yield (None if decided else process.uid), result

    with collector_paused():
        from ..collect import each_of_shares
        workers = _streamed_workers(source, jobs, needs, fold) if with_processes else 1
        for waiting_for, result in each_of_shares(shares, workers):
            if waiting_for is None:
                gathered.add(result)
            else:
                pending.append((waiting_for, result))
    meminfo = read_meminfo(source)
    names = {}
    for uid, result in pending:  # the whole capture read: every user name known
        if selection.wants_user(user_name(source, uid, names), uid):
            gathered.add(result)
    gathered.processes = [process.replaced(user=user_name(source, process.uid, names))
                          for process in gathered.processes]
    return gathered.reading(source, meminfo, selection.selects)


#: Walkers of a streamed archive at most: each decompresses all of it (most of the time of
#: loading a capture: docs/benchmarks.md, "Captures parsed by two walkers"), so only the parsing
#: is shared; a third would save little wall time for another walk's CPU.
MAX_WALKERS = 2


def _streamed_workers(source, jobs, needs, fold=None):
    """Walkers of a streamed archive: as collect.workers_for decides for the processes its size
    suggests, at most MAX_WALKERS, and one where the report keeps each process's mappings (-m
    on a capture without rollups: sending them back costs what parsing them saved, measured),
    unless the fold takes its part of them in the worker (the page's: only that part is sent)."""
    from ..collect import workers_for
    folds_in_worker = fold is not None and hasattr(fold, "part")
    if not source.replayable or (needs.mappings and not folds_in_worker):
        return 1
    return min(MAX_WALKERS, workers_for(jobs, source.processes_suggested(), needs.counters is None))
