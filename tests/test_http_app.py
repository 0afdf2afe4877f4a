"""smem serve's HTTP server (smem.http_app), on a free port of 127.0.0.1: what it does with
connections that misbehave and with an answer that fails.  Each connection holds a thread, and
whatever a client does is the client's: none may hold a thread for good or print a traceback."""

import socket
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager

import pytest

from smem import http_app

pytestmark = pytest.mark.uses("network")


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


def test_connections_over_the_most_at_once_are_a_503_and_the_rest_still_answer(monkeypatch, capfd):
    """Each connection holds a thread: thousands of idle ones (from anyone who can reach a
    --listen of 0.0.0.0) were thousands of threads.  Past MAX_CONNECTIONS one is answered 503 at
    once; a slot let go serves the next."""
    monkeypatch.setattr(http_app, "MAX_CONNECTIONS", 3)
    def ok(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]
    with _serving(ok) as address:
        url = f"http://{address[0]}:{address[1]}/metrics"
        held = [socket.create_connection(address) for _ in range(3)]
        try:
            time.sleep(0.2)  # (each taken by its thread)
            try:
                urllib.request.urlopen(url, timeout=30)
                status = 200
            except urllib.error.HTTPError as e:
                status, body = e.code, e.read()
            assert status == 503 and b"too many connections" in body
        finally:
            for connection in held:
                connection.close()
        deadline = time.monotonic() + 30
        while True:  # (the held ones' threads end as their close is read)
            try:
                with urllib.request.urlopen(url, timeout=30) as answer:
                    assert answer.read() == b"ok"
                break
            except urllib.error.HTTPError as e:
                assert e.code == 503 and time.monotonic() < deadline
                time.sleep(0.05)
    assert capfd.readouterr().err == ""


def test_a_request_trickled_a_byte_at_a_time_is_cut_off(monkeypatch, capfd):
    """IDLE_TIMEOUT bounds one silence: a header sent a byte every few seconds held a thread for
    good.  The whole request has REQUEST_TIMEOUT."""
    monkeypatch.setattr(http_app, "REQUEST_TIMEOUT", 0.5)
    with _serving(lambda environ, start: []) as address, socket.create_connection(address) as slow:
        slow.sendall(b"GET /metrics HTTP/1.1\r\n")
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < 10 and not closed:
            try:
                slow.sendall(b"X")
            except OSError:  # (reset by the server's close)
                closed = True
                break
            slow.settimeout(0.2)
            try:
                closed = slow.recv(4096) == b""
            except socket.timeout:
                pass
            except OSError:
                closed = True
        assert closed and time.monotonic() - started < 5
    assert capfd.readouterr().err == ""


def test_metrics_names_every_method_it_answers():
    """/metrics answers GET, HEAD (smem's, not prometheus_client's) and OPTIONS; its 405 and its
    OPTIONS named OPTIONS and GET only (prometheus_client's Allow), leaving out the HEAD it answers."""
    prometheus = pytest.importorskip("prometheus_client", reason="smem[metrics]: prometheus_client not installed")
    app = http_app.routes(prometheus.make_wsgi_app(prometheus.CollectorRegistry()))
    with _serving(app) as (host, port):
        url = f"http://{host}:{port}/metrics"
        for method in ("GET", "HEAD"):
            with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=60) as answer:
                assert answer.status == 200
        with urllib.request.urlopen(urllib.request.Request(url, method="OPTIONS"), timeout=60) as answer:
            assert (answer.status, answer.headers["Allow"], answer.read()) == (200, "GET, HEAD, OPTIONS", b"")
        for method in ("POST", "PUT", "DELETE"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(urllib.request.Request(url, data=b"", method=method), timeout=60)
            assert refused.value.code == 405
            assert refused.value.headers["Allow"] == "GET, HEAD, OPTIONS"
            assert refused.value.read() == b"smem: /metrics is read with GET (or HEAD): nothing here changes state\n"
