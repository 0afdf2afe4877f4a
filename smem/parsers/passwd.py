"""Parser for an /etc/passwd copy carried in a capture (passwd(5)).

Gives uid -> user name so that a capture analysed on another machine shows
the names of the machine it came from.  The first entry for a uid wins, as
with getpwuid(3).
"""

__all__ = ["parse_passwd"]


def parse_passwd(data):
    names = {}
    for line in data.split(b"\n"):
        if not line or line.startswith(b"#"):
            continue
        fields = line.split(b":")
        if len(fields) < 3:
            continue
        try:
            uid = int(fields[2]) if len(fields[2]) <= 12 else -1
        except ValueError:
            continue
        if not 0 <= uid < 1 << 32:
            continue
        names.setdefault(uid, fields[0].decode("utf-8", "surrogateescape"))
    return names
