"""Reading one process: its identity and owner, then the counters the report needs.

OS errors become smem's in one place (smem.errors.translated, through Source.read_process): a
process whose files vanish raises ProcessGone (skipped silently); one whose smaps cannot be read,
ProcessUnreadable (counted and summarised in one warning); one --max-rss leaves out, ProcessSkipped.  Filters (-P, -U, -M) are applied as soon
as what they match is read, so a filtered-out process's smaps is never read.
"""

import time

from ..errors import CaptureError, ProcessGone, ProcessSkipped, ProcessUnreadable, SmapsAbsent, SourceError
from ..aggregate import pss_split_of_mappings
from ..model import ROLLUP_SPLIT, Process, rollup_keys, summed
from ..parsers.cmdline import parse_cmdline
from ..parsers.ksm import parse_ksm_value
from ..parsers.maps import DMABUF_PREFIX
from ..parsers.meminfo import parse_meminfo
from ..parsers.smaps import parse_smaps, parse_smaps_kept, sum_smaps_by_name, sum_smaps_kept
from ..parsers.stat import parse_stat
from ..parsers.status import parse_status, status_kib
from ..sources.base import VANISHING

__all__ = ["read_process_memory", "read_identity", "read_counters", "read_meminfo", "user_name", "name_of",
           "files_read_ahead",
           "kernel_gives_no_smaps",
           "SLOW_READ_SECONDS", "MAX_KIB"]


#: A process whose smaps took longer than this to read is named in a warning (app.load_warnings):
#: the kernel walks its page tables to build smaps and the process stalls meanwhile.
SLOW_READ_SECONDS = 1.0


#: No machine has 2**64 bytes: a counter at or past this many KiB is a damaged or hostile file.
MAX_KIB = 1 << 54


#: What is checked against MAX_KIB where the report keeps every counter.
_CHECKED = ("Size", "Rss", "Pss", "Swap", "Private_Clean", "Private_Dirty")
#: what pss_split_of_mappings reads of each mapping
_SPLIT_COUNTERS = frozenset({"Pss", "Anonymous", "Rss"})


def read_meminfo(source):
    """The source's meminfo; a CaptureError where it has none, or one no kernel writes (no MemTotal,
    or one not above 0): a damaged capture (a recording's frame that is one is skipped, as a frame
    damaged on disk), named."""
    try:
        meminfo = parse_meminfo(source.read("meminfo"))
    except FileNotFoundError:
        raise CaptureError(f"{source.description}: no meminfo") from None
    except PermissionError:
        raise SourceError(f"{source.description}: meminfo is not readable") from None
    except CaptureError as e:
        raise CaptureError(f"{source.description}: {e}") from None
    total = meminfo.kib.get("MemTotal")
    if total is None:
        raise CaptureError(f"{source.description}: meminfo holds no MemTotal (not a /proc/meminfo)")
    if total <= 0:  # (other figures may be: old kernels printed a negative Committed_AS)
        raise CaptureError(f"{source.description}: meminfo holds MemTotal {total} kB, which no machine has "
                           "(not a /proc/meminfo)")
    return meminfo


#: the clock rate of /proc/PID/stat's times (USER_HZ) where the source cannot say: 100 on every
#: architecture Linux runs on today (alpha and ia64 had 1024)
USER_HZ = 100


def read_clock(source):
    """(seconds since boot, clock ticks a second) of the source's machine, or None without uptime."""
    import os
    from ..parsers.uptime import parse_uptime
    raw = source.read_optional("uptime")
    uptime = parse_uptime(raw) if raw else None
    if uptime is None:
        return None
    return uptime, os.sysconf("SC_CLK_TCK") if source.local else USER_HZ


def user_name(source, uid, cache):
    if uid is None:
        return "?"
    name = cache.get(uid)
    if name is None:
        name = cache[uid] = source.user_name(uid) or str(uid)
    return name


def read_process_memory(source, pid, selection, own_pid, names, needs, fold=None):
    """(Process, whether its smaps had Pss) or None if it is not to be reported."""
    process = read_identity(source, pid, selection, own_pid, names, needs.stat)
    if process is None:
        return None
    try:
        return read_counters(source, process, selection, needs, fold)
    except ProcessUnreadable as e:
        e.name = name_of(source, process)  # so the warning can say which
        raise


def read_counters(source, process, selection, needs, fold=None):
    """(Process, whether its smaps had Pss): its counters read as ``needs`` says, gathered and
    then made into one new Process beside the identity ``process``.  A ``fold`` that takes its
    part of a process where it is read (``part``: the page's) takes it here, and the process's
    totals with it, in one pass over the mappings (smem.loading.gathered)."""
    pid = process.pid
    read = {}  # the fields read (named as Process.replaced names them), given to the Process made at the end
    status = None
    if needs.max_rss_kib is not None or needs.status:
        raw = source.read_optional(f"{pid}/status")
        status = parse_status(raw) if raw else None
        rss = status_kib(status, "VmRSS") if status is not None else None
        if needs.max_rss_kib is not None and rss is not None and rss > needs.max_rss_kib:
            raise ProcessSkipped(pid, name_of(source, process), rss)
    started = time.monotonic()
    had_pss = True
    maps_dmabuf = True  # (False once its smaps was read and names no dma-buf)
    rollup = None
    rollup_totals = not needs.mappings and source.prefer_rollup
    if needs.rollup or rollup_totals:
        raw = source.read_optional(f"{pid}/smaps_rollup")
        if needs.counters is not None:
            # only what the report reads, as a plain dict, the text let go; a garbled line among
            # them is found here
            try:
                parsed = parse_smaps_kept(raw, rollup_keys(needs))[0] if raw else []
            except ValueError:
                try:
                    parse_smaps(raw)
                except ValueError:  # no mapping in it: smaps says what it holds
                    parsed = []
                else:
                    raise ProcessUnreadable(pid, "malformed smaps_rollup") from None
        else:
            try:
                parsed = parse_smaps(raw) if raw else []
            except ValueError:
                parsed = []
        rollup = parsed[0].counters if parsed else None
    raw = None
    if rollup_totals and rollup is not None and needs.split and "Pss_Anon" not in rollup:
        rollup_totals = False  # a kernel before 5.9: the split is estimated per mapping
        if not source.local:
            raw = source.read_optional(f"{pid}/smaps")
            # a tree or capture holding the rollup alone: its sums, without the split (not no process)
            rollup_totals = raw is None
    if not rollup_totals or rollup is None:
        try:
            raw = raw if raw is not None else _smaps(source, pid)
            search = selection.mapping.matches if selection.mapping is not None else None
            mappings = None
            if needs.counters is not None and search is None and fold is not None and hasattr(fold, "part_of_rows"):
                # a fold that reads each name's figures (the page's): one pass, no Mapping of each
                # mapping, the process's totals summed with them
                rows, read["_totals"], count, had_pss = sum_smaps_by_name(
                    raw, needs.counters, needs.counters | {"Rss"}, fold.fields)
                read["_mapped"], read["_map_count"] = count > 0, count
                read["fold_part"] = fold.part_of_rows(rows)
                if needs.split and not (rollup and all(k in rollup for k in ROLLUP_SPLIT)):
                    # (a kernel before 5.9: the breakdown's split, estimated per mapping as -w's is)
                    read["split"] = pss_split_of_mappings(parse_smaps_kept(raw, _SPLIT_COUNTERS)[0])
                maps_dmabuf = any(row[0].startswith(DMABUF_PREFIX) for row in rows)
            elif needs.counters is not None and not needs.mappings and not needs.split and search is None:
                # the report shows the process's sums only: no mapping is made (a capture by C
                # smemcap, a kernel before 4.14); without PSS it sorts by RSS (report.make_table)
                read["_totals"], had_pss, count = sum_smaps_kept(raw, needs.counters, needs.counters | {"Rss"})
                read["_mapped"] = count > 0
            elif needs.counters is not None:
                mappings, had_pss = parse_smaps_kept(raw, needs.counters, needs.counters | {"Rss"}, search)
            else:
                mappings = parse_smaps(raw)
                if mappings and "Pss" not in mappings[0].counters:
                    had_pss = False
                if search is not None:
                    mappings = [m for m in mappings if search(m.name)]
        except ValueError:
            raise ProcessUnreadable(pid, "malformed smaps") from None
        read["mappings"] = mappings
        if search is not None:
            rollup = None  # the whole process's: its PSS split is not of the mappings -M chose
        if mappings is not None and fold is not None and hasattr(fold, "part"):
            read["fold_part"], totals = fold.part(mappings)
            if totals is not None:
                read["_totals"] = totals
    read["rollup"] = rollup
    if source.local:
        read["read_seconds"] = seconds = time.monotonic() - started
        if seconds > SLOW_READ_SECONDS:
            read["name"] = name_of(source, process)  # (the warning names it)
    if needs.status:
        read["status"] = status
    if needs.cgroup:
        from ..parsers.cgroup import parse_cgroup  # (its patterns compiled for the cgroup view only)
        raw = source.read_optional(f"{pid}/cgroup")
        read["cgroup"] = parse_cgroup(raw) if raw else None
    totals = read.get("_totals")
    if totals is None:  # (the sums the report reads anyway: summed once, here)
        totals = read["_totals"] = summed(read.get("mappings", process.mappings), rollup)
    for key in needs.counters if needs.counters is not None else _CHECKED:
        value = totals.get(key)
        if value is not None and value >= MAX_KIB:
            raise ProcessUnreadable(pid, "malformed smaps: a figure no machine has")
    if needs.ksm and totals.get("KSM") is None:
        read["ksm_kib"] = ksm_merging_kib(source, pid)
    if needs.devices:
        from ..device_memory import read_device_handles
        read["devices"] = read_device_handles(source, pid, maps_dmabuf)
    return process.replaced(**read), had_pss


def files_read_ahead(source, selection, needs):
    """The files of each process read a chunk of processes at a time before any is parsed, on a
    live machine (Source.read_ahead): its command line (and stat where every process's is read),
    and its smaps_rollup where every process's is read anyway: no -P or -U chooses processes
    first (a process left out never has its page tables walked), no --max-rss is checked first,
    no -M or mapping view reads smaps instead."""
    if not source.local:
        return ()
    names = ("cmdline", "stat") if needs.stat else ("cmdline",)
    if ((needs.rollup or (not needs.mappings and source.prefer_rollup)) and needs.max_rss_kib is None
            and selection.process is None and selection.user is None and selection.mapping is None):
        names += ("smaps_rollup",)
    return names


def _smaps(source, pid):
    """The process's smaps; SmapsAbsent where it has none (counted: the kernel may give none)."""
    try:
        return source.read_process(pid, "smaps")
    except ProcessGone:
        raise SmapsAbsent(pid) from None


def kernel_gives_no_smaps(source):
    """Whether the kernel ``source`` reads gives no /proc/PID/smaps (built without
    CONFIG_PROC_PAGE_MONITOR, or without an MMU: small boards), so no process's memory can be
    measured.  Live, smem's own process has smaps if any has; a tree or capture lists processes
    and none has smaps or smaps_rollup (a kernel thread's is there, empty)."""
    if source.has(VANISHING):
        return source.read_optional("self/smaps") is None
    seen = source.smaps_seen()  # (an archive read in one pass keeps no process it went past)
    if seen is not None:
        return seen == (True, False)
    listed = False
    for pid in source.pids():
        if source.read_optional(f"{pid}/smaps_rollup") is not None or source.read_optional(f"{pid}/smaps") is not None:
            return False
        listed = True
    return listed


def ksm_merging_kib(source, pid):
    """/proc/PID/ksm_merging_pages in KiB (Linux 5.19+), or None (absent, or no page size known)."""
    raw = source.read_optional(f"{pid}/ksm_merging_pages")
    if raw is None:
        return None
    try:
        pages = parse_ksm_value(raw)
    except ValueError:
        return None
    from ..kernel_pools import kib_of_pages
    return kib_of_pages(pages, source.machine().page_size)


def read_identity(source, pid, selection, own_pid, names, with_stat=True):
    """Identity and owner of ``pid``, or None if it is not to be reported.

    ``with_stat`` False (Needs.stat): stat is read only where it is needed anyway (an empty or
    missing cmdline, -P); the process's ``name`` and ``stat`` are then None.
    """
    raw_cmdline = _identity_file(source, pid, "cmdline")
    cmdline = parse_cmdline(raw_cmdline) if raw_cmdline is not None else "?"
    if with_stat or raw_cmdline is None or cmdline == "" or selection.process is not None:
        raw_stat = _identity_file(source, pid, "stat")
        with_stat = True
    else:
        raw_stat = None
    stat = None
    if raw_stat:
        try:
            stat = parse_stat(raw_stat)
        except ValueError:
            stat = None
    if cmdline == "":
        # Kernel threads and zombies have no cmdline and no memory of their own.
        if stat is None or stat.is_kernel_thread or stat.is_zombie:
            return None
    name = stat.comm if stat is not None else "?" if with_stat else None
    if pid in own_pid:
        return None  # never match our own command line
    if not selection.wants_process(name, cmdline):
        return None  # before the owner lookup: most processes stop here
    uid = source.owner(pid)
    if uid is None and source.has(VANISHING):
        raise ProcessGone(pid)  # (live, no owner is its directory gone: it exited as it was read)
    user = user_name(source, uid, names)
    if not selection.wants_user(user, uid):
        return None
    return Process(pid, name, cmdline, uid, user, stat)


def _identity_file(source, pid, name):
    """A file naming the process, or None where it cannot be had; ProcessGone (from the one
    translation, smem.errors.translated) where the source's missing files mean the process
    exited (VANISHING: the live /proc), so a vanished process is skipped, never shown as "?"."""
    try:
        return source.read_process(pid, name)
    except ProcessGone:
        if source.has(VANISHING):
            raise
        return None
    except ProcessUnreadable:
        return None


def name_of(source, process):
    """The process's name for a warning, reading stat now if the report did not (Needs.stat)."""
    if process.name is not None:
        return process.name
    raw = source.read_optional(f"{process.pid}/stat")
    try:
        return parse_stat(raw).comm if raw else "?"
    except ValueError:
        return "?"
