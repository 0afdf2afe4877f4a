"""smem serve's HTTP server (smem.http_app), on a free port of 127.0.0.1: what it does with
connections that misbehave and with an answer that fails.  Each connection holds a thread, and
whatever a client does is the client's: none may hold a thread for good or print a traceback."""

import socket
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager

from smem import http_app


@contextmanager
def _serving(app):
    """make_server's server answering with ``app``, in a thread; its address."""
    server = http_app.make_server("127.0.0.1", 0, app)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[:2]
    finally:
        server.shutdown()
        server.server_close()


def _big(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/octet-stream")])
    return [b"x" * (16 << 20)]  # (far more than the sockets' buffers hold)


def test_a_connection_that_sends_nothing_is_let_go(monkeypatch, capsys):
    """One that never sends a request (a client gone without closing, thousands of them from
    anyone on the host) is closed, not kept."""
    monkeypatch.setattr(http_app, "IDLE_TIMEOUT", 0.2)
    with _serving(lambda environ, start: []) as address, socket.create_connection(address) as idle:
        idle.settimeout(30)
        assert idle.recv(1) == b""  # (closed by the server; without the timeout recv times out)
    assert capsys.readouterr().err == ""  # (socketserver's traceback of the timeout is not printed)


def test_a_reader_that_stops_reading_is_let_go_without_a_traceback(monkeypatch, capfd):
    """A client that asks and then reads nothing (or too slowly for SEND_TIMEOUT) has its
    answer cut and its connection closed, with nothing on stderr; the server answers the next."""
    monkeypatch.setattr(http_app, "SEND_TIMEOUT", 0.5)
    with _serving(_big) as address:
        with socket.create_connection(address) as stalled:
            stalled.sendall(b"GET /big HTTP/1.0\r\nHost: x\r\n\r\n")
            time.sleep(2)  # (reading nothing: the server's send times out meanwhile)
            stalled.settimeout(30)
            received = 0
            while chunk := stalled.recv(1 << 20):  # (what the buffers held, then the server's close)
                received += len(chunk)
        assert received < 16 << 20
        with urllib.request.urlopen(f"http://{address[0]}:{address[1]}/big", timeout=60) as answer:
            assert len(answer.read()) == 16 << 20
    assert capfd.readouterr().err == ""


def test_an_answer_that_fails_is_a_500_and_one_line(capfd):
    """An error of smem's own while answering: the client gets a 500, stderr one line naming
    the path (wsgiref's own handler prints a traceback)."""
    def broken(environ, start_response):
        raise RuntimeError("no figures")
    status = None
    with _serving(broken) as address:
        try:
            urllib.request.urlopen(f"http://{address[0]}:{address[1]}/metrics", timeout=60)
        except urllib.error.HTTPError as e:
            status = e.code
    assert status == 500
    assert capfd.readouterr().err.splitlines() == ["smem: serve: answering '/metrics': RuntimeError: 'no figures'"]
