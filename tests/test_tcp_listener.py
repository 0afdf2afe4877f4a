"""Connections served side by side (smem/sources/tcp.py): a peer that connects and stays silent,
or trickles, delays no other, and a flood of them is bounded, not a siege.

Taken one at a time, a silent peer connected first held ``smem capture --listen``, ``smem record
--listen`` and ``-S tcp://`` for its whole bound (10 x --timeout): here --timeout 600, so the
good capture on the next connection, which must come back within two minutes, would have waited
100.  The good capture is a real one (tests/fixtures/captures/faithful.tar.gz) sent on real
sockets on 127.0.0.1, as a target's ``nc`` sends it.
"""

import os
import socket
import stat
import threading

import pytest

from conftest import TESTS, run_smem
from test_recording import index_lines
from test_tcp_capture import free_port, listening_port, smem_process

from smem.sources.tcp import MAX_CONNECTIONS

CAPTURE = (TESTS / "fixtures" / "captures" / "faithful.tar.gz").read_bytes()
#: a hang guard, far inside the 6000 s a silent peer is given at --timeout 600
WITHIN = 120


def _start(kind, tmp_path):
    """smem listening as ``kind`` does (--timeout 600): its Popen, its port and what it writes."""
    out = tmp_path / ("rec" if kind == "record" else "kept.tgz")
    if kind == "capture":
        proc = smem_process("capture", "--listen", "127.0.0.1:0", "-o", out, "--timeout", "600")
    elif kind == "record":
        proc = smem_process("record", "--listen", "127.0.0.1:0", "-o", out, "--count", "1", "--timeout", "600")
    else:
        proc = smem_process("-S", f"tcp://127.0.0.1:{free_port()}", "-u", "--timeout", "600")
    return proc, listening_port(proc), out


def _send(port, data=CAPTURE):
    """A target's push: the capture, then its side closed.  The port it sent from."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(data)
        return s.getsockname()[1]


def _finished(proc):
    try:
        out, err = proc.communicate(timeout=WITHIN)
    finally:
        proc.kill()
        proc.wait()
    return out, err.decode().splitlines()


def _took_the_good_one(kind, proc, out_path, good_port):
    """smem ended with the capture sent from ``good_port`` as its result, and said nothing of the others."""
    out, lines = _finished(proc)
    assert proc.returncode == 0, lines
    if kind == "capture":
        assert out_path.read_bytes() == CAPTURE
        assert lines == [f"smem: wrote {out_path}: a capture of {len(CAPTURE) / 1024:.1f} KiB from "
                         f"127.0.0.1:{good_port}"], lines
    elif kind == "record":
        assert [f["frame"] for f in index_lines(out_path)[1]] == [1]
        assert lines[-1].startswith(f"smem: recorded frame 1 from 127.0.0.1:{good_port};"), lines
    else:
        assert out.split()[:2] == [b"User", b"Count"] and b"root" in out
    return lines


def _closed_by_smem(s):
    """Whether smem closed this connection (it reads an end, or a reset: it had unread bytes)."""
    s.settimeout(WITHIN)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


@pytest.mark.uses("network")
@pytest.mark.parametrize("kind", ["capture", "record", "report"])
def test_a_silent_peer_connected_first_does_not_delay_a_good_capture(tmp_path, kind):
    proc, port, out = _start(kind, tmp_path)
    with socket.create_connection(("127.0.0.1", port)) as silent:
        good = _send(port)
        lines = _took_the_good_one(kind, proc, out, good)
        assert not [line for line in lines if "warning" in line], lines
        assert _closed_by_smem(silent)  # (dropped as smem exits, not left open)


class _Trickle(threading.Thread):
    """A peer sending the start of a capture a byte every 0.2 s: never silent for --timeout, and
    done only after hours; it stops when told, or when smem closes its connection."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.socket = socket.create_connection(("127.0.0.1", port))
        self.stop = threading.Event()
        self.sent = 0

    def run(self):
        with self.socket:
            while not self.stop.wait(0.2):
                try:
                    self.socket.sendall(CAPTURE[self.sent:self.sent + 1])
                except OSError:
                    return
                self.sent += 1


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("kind", ["capture", "record"])
def test_a_trickling_peer_beside_a_good_one_does_not_delay_it(tmp_path, kind):
    proc, port, out = _start(kind, tmp_path)
    trickle = _Trickle(port)
    trickle.start()
    try:
        while trickle.sent < 3:  # (under way: smem has its first bytes)
            assert proc.poll() is None and trickle.is_alive()
            trickle.stop.wait(0.05)
        good = _send(port)
        lines = _took_the_good_one(kind, proc, out, good)
        assert not [line for line in lines if "warning" in line], lines
    finally:
        trickle.stop.set()
        trickle.join(WITHIN)


def _socket_count(pid):
    fds = f"/proc/{pid}/fd"
    return sum(stat.S_ISSOCK(os.stat(f"{fds}/{fd}").st_mode) for fd in os.listdir(fds))


@pytest.mark.uses("network")
@pytest.mark.parametrize("kind", ["capture", "record"])
def test_a_flood_of_silent_peers_is_bounded_and_a_good_capture_still_gets_in(tmp_path, kind):
    """Past MAX_CONNECTIONS, each newcomer displaces the peer silent the longest: the flood's
    first connections are closed, in the order they came, smem holds no more than the bound, and
    the good capture sent after them all is taken.  capture --listen says nothing of the flood (a
    peer given up while others are under way is not its answer); record --listen warns of each."""
    proc, port, out = _start(kind, tmp_path)
    flood = [socket.create_connection(("127.0.0.1", port)) for _ in range(3 * MAX_CONNECTIONS)]
    ports = [s.getsockname()[1] for s in flood]
    try:
        dropped = len(flood) - MAX_CONNECTIONS
        assert all(_closed_by_smem(s) for s in flood[:dropped])
        assert _socket_count(proc.pid) <= MAX_CONNECTIONS + 1  # (and the listening one)
        good = _send(port)
        lines = _took_the_good_one(kind, proc, out, good)
        assert all(_closed_by_smem(s) for s in flood[dropped:])
    finally:
        for s in flood:
            s.close()
    warnings = [line for line in lines if "warning" in line]
    if kind == "capture":
        return
    # each the one silent the longest when it went (the last displaced by the good capture), by its port
    assert [int(w.split("capture from 127.0.0.1:")[1].split(":")[0]) for w in warnings] == ports[:dropped + 1]
    for warning in warnings:
        assert " dropped after 0 bytes and " in warning and warning.endswith(
            f"of silence: {MAX_CONNECTIONS} connections were open, and it was the one silent the longest; "
            "waiting for the next capture"), warning


def test_a_bad_peer_does_not_end_the_wait_for_one_under_way(tmp_path):
    """capture --listen takes one capture: garbage that ends while a good capture is half sent is
    not the answer (alone, it still is: test_tcp_capture's hostile peers)."""
    proc, port, out = _start("capture", tmp_path)
    with socket.create_connection(("127.0.0.1", port)) as good:
        good.sendall(CAPTURE[:len(CAPTURE) // 2])
        with socket.create_connection(("127.0.0.1", port)) as bad:
            bad.sendall(b"not a capture at all" * 50)
            bad.shutdown(socket.SHUT_WR)
            assert _closed_by_smem(bad)
        assert proc.poll() is None
        good.sendall(CAPTURE[len(CAPTURE) // 2:])
        good_port = good.getsockname()[1]
    _took_the_good_one("capture", proc, out, good_port)
    assert run_smem("-S", out, "-u", check=True).returncode == 0


def _in_thread(send, *args):
    """``send(*args)`` beside the listener, which takes what it sends (a socket's buffer may not hold
    it all); a send cut short by the listener giving up is no error of the test's."""
    def quietly():
        try:
            send(*args)
        except OSError:
            pass
    thread = threading.Thread(target=quietly, daemon=True)
    thread.start()
    return thread


@pytest.mark.uses("network")
def test_the_captures_under_way_are_bounded_together(monkeypatch):
    """Sixteen peers may each send up to 1 GiB: together they may not (MAX_HELD_BYTES, here made
    small).  The one whose bytes would pass the bound is given up, the one under way goes on."""
    from smem.errors import CaptureError
    from smem.sources import tcp
    monkeypatch.setattr(tcp, "MAX_HELD_BYTES", 120_000)
    with tcp.Listener(("127.0.0.1", 0), timeout=600) as listener:
        port = int(listener.address.rsplit(":", 1)[1])
        first = socket.create_connection(("127.0.0.1", port))
        first.sendall(CAPTURE[:40_000])
        first_port = first.getsockname()[1]
        assert listener.receive(wait=2) is None  # (its bytes taken in: under way)
        second = _in_thread(_send, port, CAPTURE[:90_000])
        with pytest.raises(CaptureError, match=r"^capture from 127\.0\.0\.1:\d+: sent \d+ bytes while the other "
                                               r"captures held 40000: more than \d+ MiB at once, given up$"):
            listener.receive()
        second.join(WITHIN)

        def the_rest():
            with first:
                first.sendall(CAPTURE[40_000:])
        rest = _in_thread(the_rest)
        spool, name = listener.receive()
        rest.join(WITHIN)
        with spool:
            assert spool.read() == CAPTURE and name == f"capture from 127.0.0.1:{first_port}"
