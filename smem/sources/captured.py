"""What a capture says of the machine it came from, read from its own members.

``capture-info`` (``key=value`` lines: pagesize, kernel, hostname, time, ...,
docs/capture-format.md), ``version``, ``passwd`` (the names of the users that
own processes), ``dmesg`` (the kernel's boot "Memory:" line) and
``sys/firmware/memmap``: shared by archives and directories.
"""

import abc

from ..parsers.capture_info import parse_capture_info
from ..parsers.passwd import parse_passwd

__all__ = ["CaptureFacts"]


class CaptureFacts(abc.ABC):
    """What archive and directory captures know of their machine, from their own files.

    Mixed into a Source (its ``read_optional``); the capture says where its files are
    (:meth:`_paths`).  The passwd member is parsed when a user name is first asked for, and
    again if a streamed archive's passwd arrives after (it sets ``_passwd`` back to None).
    """

    #: the capture's passwd as {uid: name}, once parsed (None: not yet)
    _passwd = None

    @abc.abstractmethod
    def _paths(self, prefix):
        """The capture's file paths under ``prefix`` four levels deep (sys/firmware/memmap/N/x)."""

    def facts(self):
        facts = {}
        info = self.read_optional("capture-info")
        if info:
            facts.update(parse_capture_info(info))
        version = self.read_optional("version")
        if version and "kernel" not in facts:
            words = version.split()
            if len(words) > 2:
                facts["kernel"] = words[2].decode("utf-8", "replace")
        return facts

    def firmware_memmap(self):
        entries = sorted({p.split("/")[3] for p in self._paths("sys/firmware/memmap/")},
                         key=lambda e: (len(e), e))
        memmap = []
        for entry in entries:
            fields = [self.read_optional(f"sys/firmware/memmap/{entry}/{name}")
                      for name in ("start", "end", "type")]
            if None not in fields:
                memmap.append(tuple(fields))
        return memmap or None

    def boot_log(self):
        return self.read_optional("dmesg")

    def _passwd_names(self):
        if self._passwd is None:
            data = self.read_optional("passwd")
            self._passwd = parse_passwd(data) if data else {}
        return self._passwd
