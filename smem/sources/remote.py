"""A remote host: run the capture script over ssh and read its capture from the pipe.

``ssh://[user@]host[:port]`` runs ``sh -s`` on the host through the system
ssh client, feeds it scripts/smemcap.sh on stdin, and reads the gzip tar it
writes to stdout into memory: nothing is installed or left on the host.
The ssh command is an argument vector; set ``SMEM_SSH`` (split like a shell
would, as git's GIT_SSH_COMMAND) to use another client or add options.
"""

import os
import shlex
import subprocess
from importlib import resources
from urllib.parse import urlsplit

from ..errors import SourceError, UsageError
from .capture import ArchiveSource

__all__ = ["RemoteSource", "ssh_command", "capture_script"]


def capture_script():
    return resources.files("smem.data").joinpath("smemcap.sh").read_bytes()


def ssh_command(spec):
    """The argv that runs ``sh -s`` on the host named by ``spec``."""
    parts = urlsplit(spec)
    if parts.scheme != "ssh" or not parts.hostname or parts.path not in ("", "/"):
        raise UsageError(f"bad remote source {spec!r}: expected ssh://[user@]host[:port]")
    try:
        port = parts.port
    except ValueError:
        raise UsageError(f"bad port in {spec!r}") from None
    host = parts.hostname
    if host.startswith("-") or (parts.username or "").startswith("-"):
        raise UsageError(f"bad host in {spec!r}")
    argv = shlex.split(os.environ.get("SMEM_SSH", "ssh"))
    if port is not None:
        argv += ["-p", str(port)]
    if parts.username:
        argv += ["-l", parts.username]
    return argv + ["--", host, "sh", "-s", "-"]


class RemoteSource(ArchiveSource):
    def __init__(self, spec, per_mapping=True):
        argv = ssh_command(spec)
        try:
            proc = subprocess.run(argv, input=capture_script(), capture_output=True)
        except FileNotFoundError:
            raise SourceError(f"cannot run {argv[0]!r}: not found (install an ssh client or set SMEM_SSH)") from None
        if proc.returncode != 0:
            lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            why = lines[-1] if lines else f"exit status {proc.returncode}"
            raise SourceError(f"{spec}: ssh failed: {why}")
        super().__init__(proc.stdout, spec, per_mapping)
        self.description = f"host {urlsplit(spec).hostname}"
