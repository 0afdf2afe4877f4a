"""What smem diff (and smem html --compare) says of its two sides before comparing them: NEW
taken before OLD, both one frame of a recording, or two frames a report of mappings would read
from one key frame."""

import os
import stat

from .errors import UsageError

__all__ = ["one_key_frame", "same_frame", "backwards", "DIFF_FRAMES_HINT"]


def one_key_frame(old, new):
    """smem diff of two frames of a recording that a report of mappings reads from one key frame
    (the later kept no smaps: a recording under way, whose last key frame is its first): every change
    would be 0, whatever grew between them, so it is refused."""
    before, after = (getattr(s.source, "recording_frame", None) for s in (old, new))
    if before is None or after is None or before.path != after.path or before.read != after.read \
            or before.asked == after.asked:
        return
    which = "them" if before.asked != before.read else f"--to's frame {after.asked}"
    raise UsageError(f"--from {before.asked} and --to {after.asked}: this report reads mappings (-m, -M, --shm, maps, "
                     f"vss), which only key frames keep, and the key frame before {which} is frame {before.read}: both "
                     "sides would be that frame, every change 0; compare key frames (smem record --smaps-every N "
                     "keeps every Nth), or a view without mappings")


DIFF_FRAMES_HINT = "smem diff REC alone compares its first frame with its last; --from and --to choose others"


def same_frame(old, new, hint=DIFF_FRAMES_HINT):
    """The warning where OLD and NEW are one frame of one recording (``smem diff REC REC`` compares
    its last frame with itself; REC alone compares the first with the last), or one capture file (by
    name or through a link): every change is 0."""
    before, after = (getattr(s.source, "recording_frame", None) for s in (old, new))
    if before is None and after is None:
        return _same_capture(old.source, new.source)
    if before is None or after is None or before.path != after.path or before.asked != after.asked:
        return []
    return [f"OLD and NEW are one frame, frame {after.asked} of recording {after.name}: "
            f"every change is 0 ({hint})"]


def _same_capture(old, new):
    names = [getattr(source, "path", None) or getattr(source, "name", None) for source in (old, new)]
    if None in names or "-" in names:
        return []
    try:
        before, after = os.stat(names[0]), os.stat(names[1])
    except (OSError, ValueError, TypeError):  # (a name that is no file here: a host, a port)
        return []
    # (a capture's file; not a directory, which may be a /proc, read anew for each side)
    same = stat.S_ISREG(after.st_mode) and os.path.samestat(before, after)
    return [f"OLD and NEW are one capture, {names[1]}: every change is 0"] if same else []


def backwards(old, new):
    """smem diff's warning where NEW was taken before OLD (the arguments swapped, a recording's
    --from after its --to): every change would read backwards in time."""
    before, after = old.source.machine(), new.source.machine()
    if before.epoch is None or after.epoch is None or after.epoch >= before.epoch:
        return []
    return [f"NEW ({after.time or after.epoch}) was taken before OLD ({before.time or before.epoch}): each change "
            "is from the later to the earlier"]
