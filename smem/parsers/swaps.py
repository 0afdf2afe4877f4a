"""Parser for /proc/swaps (Documentation/filesystems/proc.rst, "swaps"; mm/swapfile.c).

A header line, then one line per swap area in use: ``Filename Type Size Used Priority``,
whitespace separated (a name's own spaces and tabs are written as \\040 and \\011).
"""

__all__ = ["parse_swap_devices"]


def parse_swap_devices(data):
    """The names of the swap areas in use, without their directory ("zram0", "swapfile")."""
    names = set()
    for line in data.split(b"\n")[1:]:
        words = line.split()
        if words:
            names.add(words[0].decode("utf-8", "replace").rpartition("/")[2])
    return names
