"""Parser for /proc/PID/cmdline (Documentation/filesystems/proc.rst).

The arguments are separated and terminated by NUL bytes.  smem shows them
joined by spaces; the terminating NUL is dropped (smem 1.5 dropped the last
byte whatever it was, cutting a character from command lines that a process
rewrote without a final NUL).  Kernel threads and zombies have an empty
cmdline.
"""

__all__ = ["parse_cmdline"]


def parse_cmdline(data):
    if data.endswith(b"\0"):
        data = data[:-1]
    return data.replace(b"\0", b" ").decode("utf-8", "surrogateescape")
