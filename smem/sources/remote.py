"""A remote host: run the capture script over ssh and read its capture from the pipe.

``ssh://[user@]host[:port]`` runs ``sh -s`` on the host through the system
ssh client, feeds it scripts/smemcap.sh on stdin, and reads the gzip tar it
writes to stdout into memory: nothing is installed or left on the host.
The ssh command is an argument vector; set ``SMEM_SSH`` (split like a shell
would, as git's GIT_SSH_COMMAND) to use another client or add options.

What the host sends is bounded: at most MAX_REMOTE_BYTES, and a host that sends
nothing for SMEM_SSH_TIMEOUT seconds (default DEFAULT_TIMEOUT), or is not done after ten
times that, is given up on (as a TCP sender is), so a stalled host, one that trickles a
byte a minute, or a runaway remote command cannot hang smem or fill its memory.
"""

import os
import selectors
import shlex
import subprocess
import time
from importlib import resources
from urllib.parse import urlsplit

from ..errors import SourceError, UsageError
from .archive import ArchiveSource

__all__ = ["RemoteSource", "ssh_command", "capture_script", "MAX_REMOTE_BYTES", "DEFAULT_TIMEOUT"]

#: The most a host may send: its compressed capture (a 10,000-process server's is some
#: hundreds of MiB).
MAX_REMOTE_BYTES = 1 << 30
#: Seconds without a byte from the host before it is taken as stalled (SMEM_SSH_TIMEOUT).
DEFAULT_TIMEOUT = 60.0
#: The end of the host's error output kept, for the message.
_STDERR_KEPT = 1 << 16


def capture_script():
    return resources.files("smem.data").joinpath("smemcap.sh").read_bytes()


def ssh_command(spec):
    """The argv that runs ``sh -s`` on the host named by ``spec``."""
    expected = f"bad remote source {spec!r}: expected ssh://[user@]host[:port]"
    try:
        parts = urlsplit(spec)
    except ValueError as e:  # an unclosed IPv6 bracket, say
        raise UsageError(f"{expected} ({e})") from None
    if parts.scheme != "ssh" or not parts.hostname or parts.path not in ("", "/"):
        raise UsageError(expected)
    if "?" in spec or "#" in spec:
        raise UsageError(f"{expected}: a query (?) or fragment (#) means nothing to ssh")
    if parts.password is not None:
        raise UsageError("bad remote source: a password in the URL is not used (ssh asks for it, "
                         "or use a key): expected ssh://[user@]host[:port]")
    try:
        port = parts.port
    except ValueError:
        raise UsageError(f"bad port in {spec!r}") from None
    host = parts.hostname
    if host.startswith("-") or (parts.username or "").startswith("-"):
        raise UsageError(f"bad host in {spec!r}")
    try:
        argv = shlex.split(os.environ.get("SMEM_SSH") or "ssh") or ["ssh"]  # (set but empty or blank: ssh)
    except ValueError as e:  # an unclosed quote
        raise UsageError(f"SMEM_SSH={os.environ.get('SMEM_SSH', '')[:60]!r}: {e}") from None
    if port is not None:
        argv += ["-p", str(port)]
    if parts.username:
        argv += ["-l", parts.username]
    return argv + ["--", host, "sh", "-s", "-"]


def _timeout():
    value = os.environ.get("SMEM_SSH_TIMEOUT")
    if not value:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1
    if not 0 < seconds < 1e6:
        raise UsageError(f"SMEM_SSH_TIMEOUT={value!r}: give seconds, a number above 0")
    return seconds


def _run(argv, script, spec):
    """(exit status, stdout, end of stderr) of ``argv`` fed ``script``, bounded in size and time."""
    timeout = _timeout()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise SourceError(f"cannot run {argv[0]!r}: not found (install an ssh client or set SMEM_SSH)") from None
    except OSError as e:
        raise SourceError(f"cannot run {argv[0]!r}: {e.strerror}") from None
    out, err = bytearray(), bytearray()
    pending = memoryview(script)
    try:
        with selectors.DefaultSelector() as sel:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin, selectors.EVENT_WRITE)
            sel.register(proc.stdout, selectors.EVENT_READ)
            sel.register(proc.stderr, selectors.EVENT_READ)
            reading = 2
            last = time.monotonic()
            done_by = last + 10 * timeout
            while reading:
                now = time.monotonic()
                if now >= done_by:
                    raise SourceError(f"{spec}: the host was not done after {10 * timeout:g} s: given up "
                                      "(set SMEM_SSH_TIMEOUT to wait longer)")
                events = sel.select(timeout=max(0.0, min(last + timeout, done_by) - now))
                if not events and time.monotonic() < done_by:
                    raise SourceError(f"{spec}: nothing from the host for {timeout:g} s: given up "
                                      "(set SMEM_SSH_TIMEOUT to wait longer)")
                last = time.monotonic()
                for key, _ in events:
                    if key.fileobj is proc.stdin:
                        try:
                            pending = pending[os.write(proc.stdin.fileno(), pending[:1 << 16]):]
                        except BrokenPipeError:
                            pending = pending[:0]
                        if not pending:
                            sel.unregister(proc.stdin)
                            proc.stdin.close()
                        continue
                    chunk = os.read(key.fileobj.fileno(), 1 << 20)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        reading -= 1
                    elif key.fileobj is proc.stdout:
                        out += chunk
                        if len(out) > MAX_REMOTE_BYTES:
                            raise SourceError(f"{spec}: the host sent more than {MAX_REMOTE_BYTES >> 20} MiB: "
                                              "not a capture")
                    else:
                        err = (err + chunk)[-_STDERR_KEPT:]
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SourceError(f"{spec}: ssh did not exit {timeout:g} s after its output ended") from None
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if not stream.closed:
                stream.close()
    return code, out, bytes(err)


class RemoteSource(ArchiveSource):
    def __init__(self, spec, per_mapping=True):
        argv = ssh_command(spec)
        code, out, err = _run(argv, capture_script(), spec)
        if code != 0:
            lines = err.decode("utf-8", "replace").strip().splitlines()
            why = lines[-1] if lines else f"exit status {code}"
            why = "".join(c if c.isprintable() else "?" for c in why)[:300]
            raise SourceError(f"{spec}: ssh failed: {why}")
        if not out:
            raise SourceError(f"{spec}: the host sent no capture")
        super().__init__(out, spec, per_mapping)
        self.description = f"host {urlsplit(spec).hostname}"
