"""Whether a proc mount hides other users' processes from us (``hidepid=``, proc(5)), or lists
those of one PID namespace only (a container's).

A /proc mounted ``hidepid=invisible`` (or ``2``; ``ptraceable``, ``4``: all but the processes we may
ptrace) has no directory for another user's process: such a process is not unreadable, it is
not there, so nothing else tells smem (or its user) that a report of "every process" left
out everyone else's.  ``hidepid=noaccess`` (``1``) lists the directories and refuses their files:
those processes are named as unreadable like any other.  Root (or CAP_SYS_PTRACE) sees every
process, and so do the members of the mount's ``gid=`` group under ``invisible``.

A /proc mounted in a PID namespace of its own (a container's: pid_namespaces(7)) lists the
processes of that namespace and no other, while /proc/meminfo is still the machine's: a system
view's rows that are not processes' then hold what the machine's other processes hold.  The
machine's /proc always lists the kernel's kthreadd as pid 2 (Linux 2.6.22 and later); a
namespace's pid 2, if any, is one of its own processes.
"""

import os
from typing import NamedTuple

__all__ = ["hidden_by_mount", "pid_namespaced", "Hiding"]

#: hidepid values under which another user's processes are not listed (kernels before 5.8 say the number)
_HIDING = {"2": "invisible", "invisible": "invisible", "4": "ptraceable", "ptraceable": "ptraceable"}


class Hiding(NamedTuple):
    """A proc mount at ``where`` that hides processes from us: ``mode`` invisible or ptraceable."""

    where: str
    mode: str

    def __str__(self):
        which = "the processes smem may not trace" if self.mode == "ptraceable" else "other users' processes"
        return f"{self.where} is mounted hidepid={self.mode}: {which} are hidden from smem"


def hidden_by_mount(proc, mountinfo="/proc/self/mountinfo"):
    """The Hiding of the proc mount at ``proc`` (the one on top, if several), None where it shows
    us every process."""
    if os.geteuid() == 0 or _may_trace_all():
        return None
    options = _proc_mount_options(os.path.realpath(proc), mountinfo)
    if options is None:
        return None
    hiding = _HIDING.get(options.get("hidepid", ""))
    if hiding is None:
        return None
    gid = options.get("gid")  # (which ptraceable does not heed: fs/proc/base.c has_pid_permissions)
    if (hiding == "invisible" and gid is not None and gid.isdigit()
            and (int(gid) == os.getegid() or int(gid) in os.getgroups())):
        return None
    return Hiding(proc, hiding)


def _may_trace_all(status="/proc/self/status"):
    """Whether we hold CAP_SYS_PTRACE (capability 19), under which every process is listed (the
    hardened smem serve unit grants it: docs/smem-serve.service)."""
    try:
        with open(status, "rb") as f:
            for line in f:
                if line.startswith(b"CapEff:"):
                    return bool(int(line.split()[1], 16) >> 19 & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def _proc_mount_options(mount_point, mountinfo):
    """The super options of the proc mount at ``mount_point`` ({name: value}), None if there is none."""
    try:
        with open(mountinfo, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    found = None
    for line in lines:  # proc(5): ID PARENT MAJ:MIN ROOT MOUNT-POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER
        fields = line.split(" ")
        if "-" not in fields[6:]:
            continue
        dash = fields.index("-", 6)
        if len(fields) < dash + 4 or fields[dash + 1] != "proc" or _unescaped(fields[4]) != mount_point:
            continue
        found = dict(o.partition("=")[::2] for o in fields[dash + 3].split(","))  # later mounts are on top
    return found


def _unescaped(field):
    """A mountinfo path with its octal escapes (\\040 for a space) undone."""
    if "\\" not in field:
        return field
    import re
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def pid_namespaced(proc):
    """Whether ``proc`` lists the processes of a PID namespace of their own rather than the
    machine's (its pid 2 is no kthreadd); None where that cannot be told (processes hidden from us)."""
    if hidden_by_mount(proc) is not None:
        return None
    try:
        with open(f"{proc}/2/stat", "rb") as f:
            return not f.read().startswith(b"2 (kthreadd) ")
    except FileNotFoundError:
        return True
    except OSError:
        return None
