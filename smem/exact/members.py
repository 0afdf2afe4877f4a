"""The capture members that carry exact data offline: N/frames and kpages.sparse.

Formats in docs/capture-format.md ("Exact page-frame data").
"""

import numpy as np

from ..errors import CaptureError
from ..parsers.pagemap import PFN_MASK
from .frames import (FRAMES_MEMBER, KPAGES_MEMBER, _FRAMES_MAGIC, _KPAGES_MAGIC, FrameTable, ProcessFrames,
                     page_size_of)

__all__ = ["encode_frames", "decode_frames", "encode_kpages", "decode_kpages", "KPAGES_MEMBER",
           "FRAMES_MEMBER"]


def _delta(values):
    return np.diff(values, prepend=np.uint64(0)) if len(values) else values


def _undelta(values):
    return np.cumsum(values, dtype=np.uint64) if len(values) else values


def _le(values):
    return np.ascontiguousarray(values, dtype="<u8").tobytes()


def encode_frames(frames, page_size):
    """The ``N/frames`` member for one process (format in the module's capture notes)."""
    head = np.array([len(frames.segments), len(frames.pfns), len(frames.swap)], dtype="<u8")
    return b"".join((_FRAMES_MAGIC, _le([page_size]), head.tobytes(),
                     _le(frames.segments.reshape(-1)), _le(_delta(frames.pfns)),
                     _le(_delta(frames.swap))))


def _words(data, name):
    if len(data) % 8 or len(data) < 8:
        raise CaptureError(f"capture member {name} is truncated")
    return np.frombuffer(data, dtype="<u8").astype(np.uint64)


def decode_frames(pid, data):
    """A :class:`ProcessFrames` from an ``N/frames`` member; CaptureError if malformed."""
    name = f"{pid}/{FRAMES_MEMBER}"
    if data[:8] != _FRAMES_MAGIC:
        raise CaptureError(f"capture member {name} is not page frame data")
    words = _words(data[8:], name)
    if len(words) < 4:
        raise CaptureError(f"capture member {name} is truncated")
    page_size_of(int(words[0]), f"capture member {name}")
    nseg, npresent, nswap = (int(w) for w in words[1:4])
    body = words[4:]
    if len(body) != nseg * 3 + npresent + nswap:
        raise CaptureError(f"capture member {name} is truncated or corrupt")
    segments = body[:nseg * 3].reshape(nseg, 3)
    # each count no more than the total, so the sums cannot wrap round 2**64 to look right
    if nseg and (int(segments[:, 1].max()) > npresent or int(segments[:, 2].max()) > nswap
                 or int(segments[:, 1].sum()) != npresent or int(segments[:, 2].sum()) != nswap):
        raise CaptureError(f"capture member {name} is inconsistent")
    if not nseg and (npresent or nswap):
        raise CaptureError(f"capture member {name} is inconsistent")
    pfns = _undelta(body[nseg * 3:nseg * 3 + npresent])
    swap = _undelta(body[nseg * 3 + npresent:])
    _check_entries(pfns, name, "frame numbers")
    _check_entries(swap, name, "swap entries")
    return ProcessFrames(pid, pfns, swap, segments)


def _check_entries(values, name, what):
    """Frame numbers and swap entries are pagemap's bits 0-54: larger ones are damage
    (deltas that wrap round 2**64 to garbage)."""
    if len(values) and int(values.max()) > PFN_MASK:
        raise CaptureError(f"capture member {name} is corrupt ({what} past 55 bits)")


def encode_kpages(table, page_size):
    """The ``kpages.sparse`` member: kpagecount and kpageflags of the frames used."""
    has_flags = table.flags is not None
    head = np.array([page_size, len(table.pfns), int(has_flags)], dtype="<u8")
    parts = [_KPAGES_MAGIC, head.tobytes(), _le(_delta(table.pfns)), _le(table.counts)]
    if has_flags:
        parts.append(_le(table.flags))
    return b"".join(parts)


def decode_kpages(data):
    """(page size, :class:`FrameTable`) from a ``kpages.sparse`` member."""
    if data[:8] != _KPAGES_MAGIC:
        raise CaptureError(f"capture member {KPAGES_MEMBER} is not page frame data")
    words = _words(data[8:], KPAGES_MEMBER)
    if len(words) < 3:
        raise CaptureError(f"capture member {KPAGES_MEMBER} is truncated")
    page_size, n, has_flags = (int(w) for w in words[:3])
    body = words[3:]
    if has_flags not in (0, 1) or len(body) != n * (2 + has_flags):
        raise CaptureError(f"capture member {KPAGES_MEMBER} is truncated or corrupt")
    page_size = page_size_of(page_size, f"capture member {KPAGES_MEMBER}")
    pfns = _undelta(body[:n])
    _check_entries(pfns, KPAGES_MEMBER, "frame numbers")
    if n > 1 and not (pfns[1:] > pfns[:-1]).all():
        raise CaptureError(f"capture member {KPAGES_MEMBER} is corrupt (frames out of order)")
    flags = body[2 * n:3 * n] if has_flags else None
    return page_size, FrameTable(pfns, body[n:2 * n], flags)
