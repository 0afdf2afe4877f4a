"""Who may share pages with whom, and how far others' changes may have moved each one's PSS.

A shared page's PSS is its size over the number of processes mapping it: when a process
starts, exits, or changes how much of its memory is shared, its sharers' PSS moves by as much
in all, the other way.  :class:`Sharers` keeps, for the incremental collection
(smem.incremental), an index of what each process may share pages through (a key: an object
it maps, its device and inode from /proc/PID/maps, with the KiB mapped; or a fork's kin, its
parent's and its own children, None) and, per process, its drift: how many KiB others' changes
may have moved its PSS by since its figure was read, the sum of what each event gave each
sharer of each of its keys.  :meth:`Sharers.drifted` finds those whose drift passed a limit,
looking only at those whose keys moved since it last looked.
"""

__all__ = ["Sharers", "sharing_keys", "caps"]


def sharing_keys(pid, ppid, objects):
    """{what ``pid`` may share pages through: KiB mapped of an object (``objects``, from
    parse_maps_objects), None for a fork's kin (its parent's children, its own)}."""
    keys = dict(objects)
    keys[("children", ppid)] = keys[("children", pid)] = None
    return keys


def caps(before, after):
    """How much of a displacement can have gone through anonymous memory and through objects,
    from two (anonymous PSS, file and shmem PSS) splits (None where the kernel gives none)."""
    if before is None or after is None:
        return None
    return abs(after[0] - before[0]), abs(after[1] - before[1])


class Sharers:
    """The index of keys and what each moved its sharers by (see the module's docstring)."""

    def __init__(self):
        self._who = {}      # key -> {pid}: who may share pages through it
        self._keys = {}     # pid -> its keys
        self._drift = {}    # pid -> KiB others may have moved its PSS by since its figure was read
        self._pending = {}  # key -> KiB each of its sharers was moved by, not yet in their drift
        self._unseen = set()  # pids whose drift grew since drifted() last looked

    def clear(self):
        self.__init__()

    def keys(self, pid):
        return self._keys.get(pid, {})

    def place(self, pid, keys):
        """Index ``pid`` under ``keys`` (those it had before let go, where they differ)."""
        before = self._keys.get(pid)
        if before is keys:
            return
        self._apply()  # (what moved its old keys is its; what moves its new ones from now)
        if before is not None:
            self._unindex(pid, before)
        self._keys[pid] = keys
        who = self._who
        for key in keys:
            group = who.get(key)
            if group is None:
                who[key] = {pid}
            else:
                group.add(pid)

    def remove(self, pid):
        """Take ``pid`` out of the index; the keys it had."""
        self._apply()
        keys = self._keys.pop(pid, {})
        self._drift.pop(pid, None)
        self._unindex(pid, keys)
        return keys

    def _unindex(self, pid, keys):
        who = self._who
        for key in keys:
            group = who.get(key)
            if group is not None:
                group.discard(pid)
                if not group:
                    del who[key]

    def spread(self, events):
        """Give each process that may share with an event's process its part of the displacement.

        ``events``: (pid, displacement KiB, its keys, caps or None).  The displacement is divided
        among what the process shares through: an object of ``size`` KiB that n processes map
        holds about size / (n + 1) of its PSS, a fork's kin may hold all of it.  Where the
        kernel splits PSS (``caps``), what went through objects is at most the change of the
        file and shmem PSS, and what went through a fork's kin at most the change of the
        anonymous PSS; the estimates are scaled down together where they add up to more.  Each
        one's part is then divided among the others that share it (the event's own process is
        read in the same collection, or gone)."""
        who, pending = self._who, self._pending
        for pid, displacement, keys, limit in events:
            if not displacement:
                continue
            through = {}
            held = [0.0, 0.0]  # through a fork's kin, through objects
            for key, size in keys.items():
                others = who.get(key, ())
                count = len(others) - (pid in others)
                if count > 0:
                    estimate = displacement if size is None else min(displacement, size / (count + 1))
                    through[key] = (estimate, count, size is not None)
                    held[size is not None] += estimate
            limits = (displacement, displacement) if limit is None else (min(displacement, limit[0]),
                                                                         min(displacement, limit[1]))
            scales = [min(1.0, most / total) if total else 0.0 for most, total in zip(limits, held)]
            for key, (estimate, count, of_object) in through.items():
                part = estimate * scales[of_object] / count
                if part:
                    pending[key] = pending.get(key, 0.0) + part

    def _apply(self):
        """Add what the keys moved since the last time to their sharers' drift."""
        who, drift, unseen = self._who, self._drift, self._unseen
        for key, part in self._pending.items():
            group = who.get(key, ())
            unseen.update(group)
            for pid in group:
                drift[pid] = drift.get(pid, 0.0) + part
        self._pending.clear()

    def settle(self, pids):
        """Mark what others moved so far as in the figures of ``pids`` (just read)."""
        self._apply()
        drift = self._drift
        for pid in pids:
            drift.pop(pid, None)

    def drifted(self, limits, exclude):
        """The processes (but ``exclude``) whose drift passed their limit (``limits``: {pid: KiB};
        a process not in it is not looked at): only those moved since the last look can have."""
        self._apply()
        drift, found, limit_of = self._drift, set(), limits.get
        for pid in self._unseen:
            limit = limit_of(pid)
            if limit is not None and pid not in exclude and drift.get(pid, 0.0) > limit:
                found.add(pid)
        self._unseen.clear()
        return found
