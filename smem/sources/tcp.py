"""Captures pushed over TCP by the target: ``sh smemcap.sh | nc HOST PORT``.

A target with busybox and no Python (nor ssh server) cannot be pulled from; it can
push.  :class:`Listener` listens on the address the user names (a host is required:
nothing listens on every interface unasked) and takes one connection at a time; each
connection is one capture, ended by the sender closing its side.  What a peer sends is
spooled to an unlinked temporary file, never held in memory (a temporary directory that fills
up refuses that capture, in one line), and bounded: at most
``MAX_RECEIVED_BYTES``, no silence longer than the timeout once the first byte came, and the
whole capture within ``WHOLE_TIMEOUTS`` timeouts (a sender trickling a byte a second is given up
as surely as a silent one).  The first byte may take all of that: smemcap.sh sends nothing until
it has copied every process (tar starts only then), which on a slow board with hundreds of
processes is minutes (docs/benchmarks.md).  The capture is then read like any capture file (smem.sources.archive), with
its limits on decompression, so a bomb or garbage is refused there.

The stream is neither authenticated nor encrypted: anyone who can reach the port can send
a capture, and anyone on the path can read one (README.md says when to use ssh instead).
"""

import os
import socket
import tempfile
import time

from ..errors import CaptureError, SourceError, UsageError

__all__ = ["Listener", "receive_source", "parse_address", "DEFAULT_TIMEOUT", "MAX_RECEIVED_BYTES", "WHOLE_TIMEOUTS"]

#: Seconds a connected sender may be silent once it has sent its first byte.
DEFAULT_TIMEOUT = 60.0
#: A capture must arrive whole within this many timeouts of the connection; its first byte may
#: take all of them (smemcap.sh collects every process before tar sends anything).
WHOLE_TIMEOUTS = 10
#: The most a peer may send: a compressed capture (a 10,000-process server's is some hundreds of MiB).
MAX_RECEIVED_BYTES = 1 << 30


def parse_address(text, option="--listen", port_example=5555):
    """HOST:PORT or [IPV6]:PORT as (host, port); the host is required (no listening everywhere
    by default)."""
    usage = UsageError(f"{option} takes HOST:PORT or [IPV6]:PORT, e.g. 127.0.0.1:{port_example} or "
                       f"[::1]:{port_example} (not {text[:60]!r}); the host is required: say 0.0.0.0 to "
                       f"listen on every interface")
    if text.startswith("["):
        host, bracket, port = text[1:].partition("]:")
        if not bracket or ":" not in host:
            raise usage
    else:
        host, colon, port = text.rpartition(":")
        if not colon or ":" in host:
            raise usage
    if not host or not (port.isascii() and port.isdigit() and len(port) <= 5 and int(port) <= 65535):
        raise usage
    return host, int(port)


def _endpoint(address):
    host, port = address[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _wildcard(host):
    """Whether ``host`` is 0.0.0.0 or ::, which a target cannot connect to by that name."""
    import ipaddress
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


class Listener:
    """A listening socket taking captures one connection at a time (a context manager).

    ``timeout``: seconds a connected peer may be silent (and WHOLE_TIMEOUTS of them for the
    whole capture).  ``said``: called with a line once listening (the port chosen for port 0).
    """

    def __init__(self, address, timeout=DEFAULT_TIMEOUT, said=None):
        host, port = parse_address(address) if isinstance(address, str) else address
        if not timeout > 0 or timeout == float("inf"):
            raise UsageError(f"--timeout takes a number of seconds above 0 (not {timeout:g})")
        self.timeout = timeout
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            self._socket = socket.create_server((host, port), family=family, backlog=8)
        except socket.gaierror as e:
            raise SourceError(f"cannot listen on {_endpoint((host, port))}: {e.strerror}") from None
        except OSError as e:  # (create_server's strerror ends "(while attempting to bind on address (...))")
            reason = (e.strerror or str(e)).split(" (while attempting to bind")[0]
            raise SourceError(f"cannot listen on {_endpoint((host, port))}: {reason}") from None
        bound = self._socket.getsockname()
        self.address = _endpoint(bound)
        #: the last connection's peer, HOST:PORT (None before one)
        self.peer = None
        #: what a target runs to push here: the nc command line, and what ADDRESS is if it is named
        self._nc, self._nc_note = ((f"nc ADDRESS {bound[1]}", ", ADDRESS one of this machine's that it reaches")
                                   if _wildcard(bound[0]) else (f"nc {bound[0]} {bound[1]}", ""))
        if said is not None:
            said(f"listening on {self.address} for a capture (on the target: sh smemcap.sh | "
                 f"{self._nc}{self._nc_note})")

    def target_loop(self, pause=10):
        """The README's loop a target runs to push a capture every ``pause`` seconds."""
        return f"while :; do sh smemcap.sh | {self._nc}; sleep {pause}; done{self._nc_note}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._socket.close()

    def receive(self, wait=None):
        """The next capture sent (an unlinked temporary file, at its start, and the peer's
        name): a CaptureError for a peer that sends nothing, stalls, trickles or sends too much.
        Waits for a connection ``wait`` seconds (None: as long as it takes), then returns None."""
        self._socket.settimeout(wait)
        try:
            connection, peer = self._socket.accept()
        except socket.timeout:
            return None
        self.peer = _endpoint(peer)
        name = f"capture from {self.peer}"
        with connection:
            try:  # (unlinked at once, O_TMPFILE: nothing is left behind, whatever ends smem)
                spool = tempfile.TemporaryFile(prefix="smem-received-")
            except OSError as e:
                raise CaptureError(f"{name}: {_unspooled(0, e)}") from None
            try:
                self._spool(connection, spool, name)
            except BaseException:
                spool.close()
                raise
        spool.seek(0)
        return spool, name

    def _spool(self, connection, spool, name):
        started = time.monotonic()
        whole = self.timeout * WHOLE_TIMEOUTS
        received = 0
        while True:
            left = started + whole - time.monotonic()
            if left <= 0:
                if not received:
                    raise CaptureError(f"{name}: sent nothing for {whole:g} s ({WHOLE_TIMEOUTS} x --timeout; "
                                       "smemcap.sh sends once it has copied every process): given up")
                raise CaptureError(f"{name}: still sending after {whole:g} s ({received} bytes; "
                                   f"{WHOLE_TIMEOUTS} x --timeout): given up")
            # (before the first byte the target is still copying /proc: only the whole limit holds)
            connection.settimeout(min(self.timeout, left) if received else left)
            try:
                chunk = connection.recv(1 << 20)
            except socket.timeout:
                if not received or time.monotonic() - started >= whole:
                    continue
                raise CaptureError(f"{name}: sent {received} bytes, then nothing for {self.timeout:g} s: "
                                   "given up (--timeout)") from None
            except OSError as e:
                raise CaptureError(f"{name}: connection failed after {received} bytes "
                                   f"({e.strerror or e})") from None
            if not chunk:
                break
            if received + len(chunk) > MAX_RECEIVED_BYTES:
                raise CaptureError(f"{name}: sent more than {MAX_RECEIVED_BYTES >> 20} MiB: not a capture")
            try:
                spool.write(chunk)
            except OSError as e:
                raise CaptureError(f"{name}: {_unspooled(received, e)}") from None
            received += len(chunk)
        if not received:
            raise CaptureError(f"{name}: closed the connection without sending a capture")
        try:
            spool.flush()
        except OSError as e:
            raise CaptureError(f"{name}: {_unspooled(received, e)}") from None

    def capture(self, wait=None):
        """The next capture received and read whole (validated: an ArchiveSource of it, held),
        with the file it came in (at its start); None if no connection came in ``wait`` seconds."""
        from .archive import ArchiveSource
        from .capture_file import CaptureFile
        received = self.receive(wait)
        if received is None:
            return None
        spool, name = received
        try:
            source = ArchiveSource(CaptureFile(_reopened(spool), name), name)
        except BaseException:
            spool.close()
            raise
        spool.seek(0)
        return source, spool


def _unspooled(received, error):
    """Why what a peer sent could not be kept: the temporary directory full (or unusable)."""
    where = tempfile.gettempdir()
    return (f"cannot keep what it sent in a temporary file in {where} after {received} bytes: "
            f"{error.strerror or error} (set TMPDIR to a directory with room)")


def _reopened(spool):
    """Another file object on the spool: the archive closes its own once read."""
    return os.fdopen(os.dup(spool.fileno()), "rb")


def receive_source(spec, timeout=DEFAULT_TIMEOUT, per_mapping=True, streamed=False, said=None):
    """``tcp://HOST:PORT``: wait for one capture pushed there and read it as a capture file.
    ``said``: called with the listening line (the command line shows it: a wait said, not a silent
    hang)."""
    from .archive import ArchiveSource
    from .archive_stream import ArchiveStream
    from .capture_file import CaptureFile
    address = parse_address(spec[len("tcp://"):].rstrip("/"), "-S tcp://")
    if address[1] == 0:  # (any free port, which a report names nowhere: no target could find it)
        raise UsageError("-S tcp:// needs the port the target sends to (0 is any free port, named nowhere); "
                         "smem capture --listen HOST:0 says the one it takes")
    with Listener(address, timeout, said=said) as listener:
        spool, name = listener.receive()
    return (ArchiveStream if streamed else ArchiveSource)(CaptureFile(spool, name), name, per_mapping)
