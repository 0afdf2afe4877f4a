"""Captures pushed over TCP by the target: ``sh smemcap.sh | nc HOST PORT``.

A target with busybox and no Python (nor ssh server) cannot be pulled from; it can
push.  :class:`Listener` listens on the address the user names (a host is required:
nothing listens on every interface unasked); each connection is one capture, ended by the
sender closing its side.  What a peer sends is spooled to an unlinked temporary file of its
own, never held in memory (a temporary directory that fills up refuses that capture, in one
line), and bounded: at most ``MAX_RECEIVED_BYTES``, no silence longer than the timeout once the
first byte came, and the whole capture within ``WHOLE_TIMEOUTS`` timeouts (a sender trickling a
byte a second is given up as surely as a silent one).  The first byte may take all of that:
smemcap.sh sends nothing until it has copied every process (tar starts only then), which on a
slow board with hundreds of processes is minutes (docs/benchmarks.md).  The capture is then read
like any capture file (smem.sources.archive), with its limits on decompression, so a bomb or
garbage is refused there.

Those bounds give a peer minutes, so connections are served side by side (``selectors``, in the
one process) and captures handed out in the order they complete: a peer that connects and says
nothing, or trickles, delays no other (taken one at a time, anyone who reached the port held it
for ten timeouts).  At most ``MAX_CONNECTIONS`` are held at once, their spools together at most
``MAX_HELD_BYTES``, so a flood exhausts neither descriptors nor disk.  A connection past the
bound displaces the one silent the longest: refusing newcomers instead would let that many
silent peers hold the port as surely as one did, while a sender that is sending is the last to go.

The stream is neither authenticated nor encrypted: anyone who can reach the port can send
a capture, and anyone on the path can read one (README.md says when to use ssh instead).
"""

import collections
import os
import selectors
import socket
import tempfile
import time

from ..errors import CaptureError, SourceError, UsageError
from ..sigint_ignored import sigint_ignored_line

__all__ = ["Listener", "receive_source", "parse_address", "DEFAULT_TIMEOUT", "MAX_RECEIVED_BYTES", "WHOLE_TIMEOUTS",
           "MAX_CONNECTIONS", "MAX_HELD_BYTES"]

#: Seconds a connected sender may be silent once it has sent its first byte.
DEFAULT_TIMEOUT = 60.0
#: A capture must arrive whole within this many timeouts of the connection; its first byte may
#: take all of them (smemcap.sh collects every process before tar sends anything).
WHOLE_TIMEOUTS = 10
#: The most a peer may send: a compressed capture (a 10,000-process server's is some hundreds of MiB).
MAX_RECEIVED_BYTES = 1 << 30
#: Connections served at once: a target sends one capture at a time, this is room for strays.
MAX_CONNECTIONS = 16
#: The most the spools of the captures under way (and those complete, not yet handed out) hold
#: together: two whole captures, not sixteen.
MAX_HELD_BYTES = 2 * MAX_RECEIVED_BYTES


def parse_address(text, option="--listen", port_example=5555):
    """HOST:PORT or [IPV6]:PORT as (host, port); the host is required (no listening everywhere
    by default).  The error names the part that is wrong: a port out of range beside a host was
    told the host is required."""
    def usage(why):
        return UsageError(f"{option} takes HOST:PORT or [IPV6]:PORT, e.g. 127.0.0.1:{port_example} or "
                          f"[::1]:{port_example} (not {text[:60]!r}); {why}")
    no_host = usage("the host is required: say 0.0.0.0 to listen on every interface")
    if text.startswith("["):
        host, bracket, port = text[1:].partition("]:")
        if not bracket or ":" not in host:
            raise usage("an IPv6 address is written in brackets, [::1]:PORT")
    else:
        host, colon, port = text.rpartition(":")
        if not colon:
            raise no_host if text.isascii() and text.isdigit() else usage("the port is required")
        if ":" in host:
            raise usage("an IPv6 address is written in brackets, [::1]:PORT")
    if not host:
        raise no_host
    if not (port.isascii() and port.isdigit() and len(port) <= 5 and int(port) <= 65535):
        raise usage("the port is a number from 0 to 65535")
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


class _Connection:
    """One peer's capture under way: its socket, its spool (made at its first byte: a silent
    flood costs no temporary file) and its clocks."""

    __slots__ = ("socket", "peer", "name", "spool", "received", "started", "heard")

    def __init__(self, connection, peer):
        self.socket, self.peer, self.name = connection, peer, f"capture from {peer}"
        self.spool, self.received = None, 0
        self.started = self.heard = time.monotonic()  # (heard: its last byte, or its connection)

    def due(self, timeout):
        """When it is given up: the whole bound, and once it has sent, a silence of ``timeout``
        (before the first byte the target is still copying /proc: only the whole bound holds)."""
        whole = self.started + timeout * WHOLE_TIMEOUTS
        return min(whole, self.heard + timeout) if self.received else whole

    def close(self):
        self.socket.close()
        if self.spool is not None:
            self.spool.close()


class Listener:
    """A listening socket taking captures from several connections at once (a context manager).

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
            self._socket = socket.create_server((host, port), family=family, backlog=MAX_CONNECTIONS)
        except socket.gaierror as e:
            raise SourceError(f"cannot listen on {_endpoint((host, port))}: {e.strerror}") from None
        except OSError as e:  # (create_server's strerror ends "(while attempting to bind on address (...))")
            reason = (e.strerror or str(e)).split(" (while attempting to bind")[0]
            raise SourceError(f"cannot listen on {_endpoint((host, port))}: {reason}") from None
        self._socket.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._socket, selectors.EVENT_READ)
        self._open = {}  # socket: its _Connection
        self._done = collections.deque()  # what connections came to, in that order: CaptureError or (spool, conn)
        self._held = 0  # bytes in the spools of self._open and self._done
        bound = self._socket.getsockname()
        self.address = _endpoint(bound)
        #: the peer of the last capture handed out, HOST:PORT (None before one)
        self.peer = None
        #: what a target runs to push here: the nc command line, and what ADDRESS is if it is named
        self._nc, self._nc_note = ((f"nc ADDRESS {bound[1]}", ", ADDRESS one of this machine's that it reaches")
                                   if _wildcard(bound[0]) else (f"nc {bound[0]} {bound[1]}", ""))
        if said is not None:
            said(f"listening on {self.address} for a capture (on the target: sh smemcap.sh | "
                 f"{self._nc}{self._nc_note})")
            ignored = sigint_ignored_line("this wait for a capture")
            if ignored is not None:
                said(ignored)

    def target_loop(self, pause=10):
        """The README's loop a target runs to push a capture every ``pause`` seconds."""
        return f"while :; do sh smemcap.sh | {self._nc}; sleep {pause}; done{self._nc_note}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        for connection in self._open.values():
            connection.close()
        for outcome in self._done:
            if not isinstance(outcome, CaptureError):
                outcome[0].close()
        self._open.clear()
        self._done.clear()
        self._selector.close()
        self._socket.close()

    def receive(self, wait=None):
        """The next capture to arrive whole (an unlinked temporary file, at its start, and the
        peer's name), in the order they complete: a CaptureError for a peer that sends nothing,
        stalls, trickles or sends too much, in that order too.  Waits ``wait`` seconds (None: as
        long as it takes), then returns None; the connections under way go on at the next call."""
        until = None if wait is None else time.monotonic() + wait
        while not self._done:
            dues = [connection.due(self.timeout) for connection in self._open.values()]
            due = min(dues + ([until] if until is not None else []), default=None)
            for key, _ in self._selector.select(None if due is None else max(due - time.monotonic(), 0)):
                if key.data is None:
                    self._accept()
                elif key.data.socket in self._open:  # (not displaced by an accept of this round)
                    self._read(key.data)
            self._expire()
            if not self._done and until is not None and time.monotonic() >= until:
                return None
        outcome = self._done.popleft()
        if isinstance(outcome, CaptureError):
            raise outcome
        spool, connection = outcome
        self._held -= connection.received
        self.peer = connection.peer
        spool.seek(0)
        return spool, connection.name

    def first(self, capture=False):
        """The first capture to arrive whole (and, if ``capture``, read whole: see capture()).  A
        peer given up is the answer only when no other connection is under way: one that fails
        (or is displaced) does not end the wait for one that is sending; alone, its line is the
        answer, as it was when one connection was taken at a time; with none left, the first given up is."""
        failed = None
        while True:
            try:
                return self.capture() if capture else self.receive()
            except CaptureError as e:
                failed = failed or e
                if not self._open and not self._done:
                    raise failed from None

    def _accept(self):
        try:
            connection, peer = self._socket.accept()
        except (BlockingIOError, ConnectionAbortedError):
            return
        except OSError as e:  # (out of descriptors: not the peers', MAX_CONNECTIONS bounds theirs)
            raise SourceError(f"cannot take a connection on {self.address}: {e.strerror or e}") from None
        connection.setblocking(False)
        if len(self._open) >= MAX_CONNECTIONS:
            stalest = min(self._open.values(), key=lambda c: c.heard)
            self._fail(stalest, f"dropped after {stalest.received} bytes and {time.monotonic() - stalest.heard:.0f} s "
                                f"of silence: {MAX_CONNECTIONS} connections were open, and it was the one silent "
                                "the longest")
        self._open[connection] = _Connection(connection, _endpoint(peer))
        self._selector.register(connection, selectors.EVENT_READ, self._open[connection])

    def _read(self, connection):
        received = connection.received
        try:
            chunk = connection.socket.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            return self._fail(connection, f"connection failed after {received} bytes ({e.strerror or e})")
        if not chunk:
            return self._complete(connection)
        if received + len(chunk) > MAX_RECEIVED_BYTES:
            return self._fail(connection, f"sent more than {MAX_RECEIVED_BYTES >> 20} MiB: not a capture")
        if self._held + len(chunk) > MAX_HELD_BYTES:
            return self._fail(connection, f"sent {received} bytes while the other captures held "
                                          f"{self._held - received}: more than {MAX_HELD_BYTES >> 20} MiB at once, "
                                          "given up")
        try:  # (unlinked at once, O_TMPFILE: nothing is left behind, whatever ends smem)
            if connection.spool is None:
                connection.spool = tempfile.TemporaryFile(prefix="smem-received-")
            connection.spool.write(chunk)
        except OSError as e:
            return self._fail(connection, _unspooled(received, e))
        connection.received += len(chunk)
        self._held += len(chunk)
        connection.heard = time.monotonic()

    def _complete(self, connection):
        """The peer closed its side: its capture is whole (what it is, capture() reads)."""
        if not connection.received:
            return self._fail(connection, "closed the connection without sending a capture")
        try:
            connection.spool.flush()
        except OSError as e:
            return self._fail(connection, _unspooled(connection.received, e))
        self._forget(connection)
        connection.socket.close()
        self._done.append((connection.spool, connection))

    def _expire(self):
        now = time.monotonic()
        whole = self.timeout * WHOLE_TIMEOUTS
        for connection in [c for c in self._open.values() if now >= c.due(self.timeout)]:
            received = connection.received
            if now < connection.started + whole:
                why = f"sent {received} bytes, then nothing for {self.timeout:g} s: given up (--timeout)"
            elif received:
                why = f"still sending after {whole:g} s ({received} bytes; {WHOLE_TIMEOUTS} x --timeout): given up"
            else:
                why = (f"sent nothing for {whole:g} s ({WHOLE_TIMEOUTS} x --timeout; smemcap.sh sends once it has "
                       "copied every process): given up")
            self._fail(connection, why)

    def _fail(self, connection, why):
        self._forget(connection)
        self._held -= connection.received
        connection.close()
        self._done.append(CaptureError(f"{connection.name}: {why}"))

    def _forget(self, connection):
        self._selector.unregister(connection.socket)
        del self._open[connection.socket]

    def capture(self, wait=None):
        """The next capture received and read whole (validated: an ArchiveSource of it, held),
        with the file it came in (at its start); None if none came whole in ``wait`` seconds."""
        from .archive import ArchiveSource
        from .capture_file import CaptureFile
        received = self.receive(wait)
        if received is None:
            return None
        spool, name = received
        try:
            source = ArchiveSource(CaptureFile(_reopened(spool), name), name, description=name)
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
        spool, name = listener.first()
    return (ArchiveStream if streamed else ArchiveSource)(CaptureFile(spool, name), name, per_mapping, description=name)
