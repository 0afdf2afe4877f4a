"""The machine a source's data came from, as typed facts.

A capture is analysed on another machine, so every figure that depends on the
machine (the page size above all: pagemap counts pages) must come from the
data's machine, never from the one smem runs on.  The live source states
them from uname and sysconf; a capture from its ``capture-info`` member
(written by ``smem capture`` and scripts/smemcap.sh) and its ``version``.
"""

import re
from typing import Dict, NamedTuple, Optional

__all__ = ["Machine"]

#: uname -m of kernels with 8-byte words, and of those with 4 (a kernel's, not its userspace's:
#: a 32-bit userspace on a 64-bit kernel still reports the kernel's, unless run under linux32)
_WORD_BYTES = ((r"x86_64|aarch64|riscv64|ppc64.*|s390x|mips64.*|loongarch64", 8),
               (r"armv[4-7].*l|i[3-6]86|mips|mipsel", 4))  # (compiled by re at their first use)


def _count(text):
    """A non-negative integer written in ASCII digits, else None (a fact we cannot use is unknown)."""
    text = str(text).strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 20 else None


class Machine(NamedTuple):
    """What is known of the data's machine; None where the source does not say."""

    page_size: Optional[int] = None    # bytes (sysconf(_SC_PAGESIZE) of the machine)
    kernel: Optional[str] = None       # uname -r
    arch: Optional[str] = None         # uname -m
    hostname: Optional[str] = None
    time: Optional[str] = None         # when the data was read, ISO 8601 UTC
    epoch: Optional[int] = None        # the same, in seconds since 1970
    tool: Optional[str] = None         # what wrote the capture
    # what a capture left out, its writer not root: processes it could not read, and the hidepid=
    # of a /proc that hid others (a capture read later says so: its totals are not the machine's)
    unreadable_processes: Optional[int] = None
    #: 1 where its writer ran as root and was refused those even so (another namespace's, a
    #: security module's choice): reading it again as root would not bring them back
    unreadable_by_root: Optional[int] = None
    hidepid: Optional[str] = None
    #: 1 where the data lists the processes of a PID namespace of their own (a container's), not
    #: the machine's (smem.sources.hidden_pids); None where not said
    pid_namespace: Optional[int] = None

    #: the names these facts have in capture-info and in JSON's "source" object
    KEYS = {"page_size": "pagesize", "kernel": "kernel", "arch": "machine", "hostname": "hostname",
            "time": "time", "epoch": "epoch", "tool": "tool", "unreadable_processes": "unreadable_processes",
            "unreadable_by_root": "unreadable_by_root", "hidepid": "hidepid", "pid_namespace": "pid_namespace"}

    @property
    def word_bytes(self) -> Optional[int]:
        """The kernel's word size (8 on a 64-bit kernel, 4 on a 32-bit one) from the arch; None
        where the arch is unknown or not one we know the size of."""
        for pattern, size in _WORD_BYTES:
            if self.arch is not None and re.fullmatch(pattern, self.arch):
                return size
        return None

    @classmethod
    def from_facts(cls, facts: Dict[str, str]) -> "Machine":
        """From capture-info's ``key=value`` strings; unknown keys are ignored, bad numbers unknown."""
        values = {}
        for field, key in cls.KEYS.items():
            value = facts.get(key)
            if value is None or value == "":
                continue
            values[field] = (_count(value) if field in ("page_size", "epoch", "unreadable_processes", "unreadable_by_root",
                                                  "pid_namespace")
                             else str(value))
        return cls(**values)

    def as_facts(self) -> Dict[str, object]:
        """The known facts under their capture-info / JSON names (numbers as numbers)."""
        return {self.KEYS[name]: value for name, value in self._asdict().items() if value is not None}
