"""Parser for /proc/PID/cgroup (man 7 cgroups; Documentation/admin-guide/cgroup-v2.rst).

Lines are ``hierarchy-ID:controllers:path``.  On cgroup v2 there is one line,
``0::/system.slice/nginx.service``; on v1 one per hierarchy.  The memory
cgroup is what accounts a service's or container's memory, so we take the v2
path, else v1's ``memory`` hierarchy, else the systemd one, else the first.
A cgroup's name may hold any character but "/" and a newline, unescaped, so
only a newline ends a line (``str.splitlines`` also splits at a carriage
return, \\x1c or U+2028: a name could spell a line of another cgroup).
"""

import re

__all__ = ["parse_cgroup", "cgroup_v2_path", "cgroup_label"]


def _lines(data):
    return data.decode("utf-8", "surrogateescape").split("\n")


def parse_cgroup(data):
    """The memory cgroup path of a process, or None for an empty file."""
    v2 = memory = systemd = first = None
    for line in _lines(data):
        hierarchy, sep, rest = line.partition(":")
        controllers, sep2, path = rest.partition(":")
        if not (sep and sep2):
            continue
        if first is None:
            first = path
        if hierarchy == "0" and controllers == "":
            v2 = path
        elif "memory" in controllers.split(","):
            memory = path
        elif controllers == "name=systemd":
            systemd = path
    return memory or v2 or systemd or first


def cgroup_v2_path(data):
    """The cgroup v2 path of a process (its ``0::`` line), or None where it has none (v1 only);
    its memory.stat is ``memory.stat`` in that directory of the cgroup2 mount."""
    for line in _lines(data):
        if line.startswith("0::"):
            return line[3:]
    return None


#: (a pattern, compiled by re at its first use: most reports show no cgroup)
_CONTAINER = r"(docker|cri-containerd|crio|libpod|containerd)-([0-9a-f]{12})[0-9a-f]{52}(\.scope)?"


def cgroup_label(path):
    """The path with 64-hex container ids cut to the 12 that docker and podman show."""
    if path is None:
        return "?"
    return re.sub(_CONTAINER, lambda m: f"{m.group(1)}-{m.group(2)}{m.group(3) or ''}", path)
