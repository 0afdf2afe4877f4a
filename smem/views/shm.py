"""The shared-memory view (--shm): each tmpfs mount, tmpfs file, SysV segment and memfd, with
its size, what of it is in RAM and in swap, how much processes map and which.

Rows come from :func:`smem.shared_memory.shared_memory` (the app reads it into
``snapshot.shared_memory``).  A file row is part of its mount's row (its name is under
the mount point), so totals (-t) count mounts, segments and memfds, never a file again:
each page once.  Memfds and SysV segments live in the kernel's internal shmem mount, not
in any tmpfs mount, so no row holds another's pages.

A chart (--pie, --bar) draws the same objects each page once too: a mount with files
listed is split into those files and its rest (``/dev/shm (rest)``, what its other files
hold), so the slices add up to the -t totals (:func:`chart_rows`).  A row is the same object
in two readings (smem diff, watch mode) by ``SharedObject.key``: device and inode, shmid,
mount point and device.
"""

from ..units import human
from .columns import Accounting, Charting, Column, Comparison, Metrics, Reads, View, count, text

__all__ = ["SHM_VIEW"]


def rows(snapshots, options):
    return list(snapshots[0].shared_memory.objects)


#: the summary's note on how totals count files (a chart has no totals: it says its own)
FILES_IN_TOTALS = "files are part of their mount: totals count the mount, not the file again"


def chart_rows(rows, notes):
    """The rows of a chart, each page once: every mount, SysV segment and memfd, and each file
    listed, but a mount with files listed is drawn as its rest (``/dev/shm (rest)``: what its
    other files hold), its listed files as slices or bars of their own."""
    parts = {}
    for row in rows:
        if row.kind == "file" and row.parent is not None:
            parts.setdefault(row.device, []).append(row)
    drawn, notes = [], [n for n in notes if n != FILES_IN_TOTALS]
    for row in rows:
        files = parts.get(row.device) if row.fstype is not None else None
        if not files:
            drawn.append(row)
            continue
        rest, short = row.rest(files)
        drawn.append(rest)
        if short:
            notes.append(f"{row.name}: its files listed hold more {' and '.join(n[:-4] for n in short)} than "
                         f"the mount (read a moment apart): its rest is drawn as 0")
    if parts:
        notes.insert(0, "a mount is drawn as its files listed and its rest (MOUNT (rest)): each page once")
    return drawn, notes


def summary(snapshot, rows, options, system):
    """Under the table: how the rows nest, and how they compare with meminfo's Shmem."""
    notes = []
    if any(r.kind == "file" for r in rows):
        notes.append(FILES_IN_TOTALS)
    shmem = snapshot.meminfo.kib.get("Shmem")
    counted = [r.rss_kib for r in rows if r.counted]
    known = [kib for kib in counted if kib is not None]
    if shmem is not None and known:
        unknown = len(counted) - len(known)
        unknown = f", and {unknown} row{'s' if unknown > 1 else ''} whose RAM is unknown (-)" if unknown else ""
        notes.append(f"meminfo Shmem {human(shmem)}; these rows hold {human(sum(known))} in RAM "
                     f"(the rest: shared anonymous memory, objects not listed{unknown})")
    unread = sum(map(len, snapshot.unreadable.values()))
    if unread:  # (their maps and fds are what says who maps an object: without them it looks unmapped)
        notes.append(f"Mapped, Unmapped and Processes are of the processes read: what the {unread} not read "
                     f"map{'s' if unread == 1 else ''} counts as unmapped")
    return None, notes


def _amount(key, header, getter, help, percent_of="ram", total="sum"):
    return Column(key, header, getter, help, width=max(8, len(header)), is_amount=True, percent_of=percent_of,
                  total=total)


#: where one name[pid] of _processes ends and the next begins: a name may hold a space ("Web Content")
_BETWEEN_LABELS = r"(?<=\]) |(?<=\]\(fd\)) "


def _processes(obj):
    return " ".join(m.label for m in sorted(obj.mappers.values(), key=lambda m: m.pid))


COLUMNS = {c.key: c for c in (
    Column("order", "Order", lambda r: r.order, "listing order: each mount, then its files, segments, memfds",
           width=5, total=None),
    text("kind", "Kind", lambda r: r.kind, "tmpfs or devtmpfs (a mount), file (in such a mount), sysv (a SysV "
         "segment) or memfd", 8),
    text("name", "Name", lambda r: r.name, "mount point, file path, SysV key and id, or memfd name", 32,
         truncate=True),
    _amount("size", "Size", lambda r: r.size_kib, "length of the file or segment; a mount's capacity",
            total=None),
    _amount("used", "Used", lambda r: r.used_kib, "in RAM or in swap"),
    _amount("rss", "RSS", lambda r: r.rss_kib, "in RAM"),
    _amount("swap", "Swap", lambda r: r.swap_kib, "in swap", percent_of="swap"),
    _amount("mapped", "Mapped", lambda r: r.mapped_kib,
            "mapped by processes, each page once (their PSS of it summed)"),
    _amount("unmapped", "Unmapped", lambda r: r.unmapped_kib, "in RAM and mapped by no process"),
    count("pids", "PIDs", lambda r: len(r.mapping_processes), "number of processes mapping it", total=None,
          compared=True),
    count("attached", "Attach", lambda r: r.attached, "attachments the kernel counts (SysV only)", width=6,
          total=None, compared=True),
    count("inode", "Inode", lambda r: r.inode, "inode (a SysV segment's is its shmid)", width=8, total=None),
    text("id", "ID", lambda r: r.identity, "what tells it from others of its name: device, device:inode, shmid",
         12),
    text("processes", "Processes", _processes,
         "who maps it, as name[pid]; (fd): holds a descriptor of it without mapping it (cut in a "
         "table: +N for the N more)", 30, truncate=True, cut_words=_BETWEEN_LABELS),
)}

SHM_VIEW = View(
    name="shm", title="shared memory", columns=COLUMNS,
    default_columns=("kind", "name", "size", "rss", "swap", "mapped", "unmapped", "processes"),
    default_sort="order", rows=rows, summary=summary, flowing_column="processes",
    reads=Reads(needs=frozenset({"mappings", "stat"}), counters=frozenset({"Pss", "Rss", "Swap", "Anonymous"}),
                shared_memory=True, selection=False),
    accounting=Accounting(counted=lambda r: r.counted),
    charting=Charting(measure="rss", measure_without_pss="rss", noun="objects", rows=chart_rows),
    metrics=Metrics(labels=(("kind", lambda r: r.kind), ("name", lambda r: r.name), ("id", lambda r: r.identity))),
    comparison=Comparison(row_key=lambda r: r.key),
)
