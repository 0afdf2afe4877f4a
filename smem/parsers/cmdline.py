"""Parser for /proc/PID/cmdline (Documentation/filesystems/proc.rst).

The arguments are separated and terminated by NUL bytes.  smem shows them
joined by spaces.  Trailing NULs are dropped, not just the terminating one: a
process that rewrites its title in place (PostgreSQL's ``postgres:
checkpointer``, setproctitle(3)) pads the rest of its old argv area with NULs,
which are not part of the command (an empty last argument looks the same and
is dropped with them).  smem 1.5 dropped the last byte whatever it was, cutting
a character from command lines that a process rewrote without a final NUL.
Kernel threads and zombies have an empty cmdline.
"""

__all__ = ["parse_cmdline"]


def parse_cmdline(data):
    return data.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "surrogateescape")
