"""Parser for /proc/PID/maps (Documentation/filesystems/proc.rst, "/proc/PID/maps").

Each line is one mapping::

    address           perms offset  dev   inode      pathname
    00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon

The device and inode name the object a mapping maps: a file, a tmpfs or
/dev/shm file, a memfd, a SysV segment or a MAP_SHARED anonymous region (each of
the last four an inode of the kernel's shmem).  Two processes mapping the same
(device, inode) may share its pages; an inode of 0 is anonymous memory (or a
special mapping such as [vdso]) that only a fork shares.  The kernel builds this
file from the mapping list alone, without walking page tables as smaps does.
"""

__all__ = ["parse_maps_objects"]


def parse_maps_objects(data):
    """{(device, inode): KiB mapped} of the objects ``data`` (maps bytes) maps, the device and
    inode as bytes (b"08:02", b"173521"); a line that is not a mapping is passed over."""
    objects = {}
    for line in data.split(b"\n"):
        fields = line.split(None, 5)
        if len(fields) >= 5 and fields[4] != b"0":
            start, _, end = fields[0].partition(b"-")
            try:
                kib = (int(end, 16) - int(start, 16)) >> 10
            except ValueError:
                continue
            key = (fields[3], fields[4])
            objects[key] = objects.get(key, 0) + kib
    return objects
