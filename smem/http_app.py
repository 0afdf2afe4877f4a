"""smem serve's HTTP front: which paths answer what (/metrics, the page), which Host headers the
page answers (DNS rebinding), and the threading WSGI server.  HEAD is answered as GET without
the body (RFC 9110, 9.3.2), which prometheus_client's app refuses with 405.

Each connection holds a thread, so what a client can hold is bounded: MAX_CONNECTIONS at once
(one more is answered 503 at once and closed), IDLE_TIMEOUT of silence, REQUEST_TIMEOUT for the
whole request (a client trickling a header a byte at a time), SEND_TIMEOUT for the answer."""

import socket
import socketserver
import sys
import threading

from .errors import SmemError

__all__ = ["allowed_hosts", "routes", "make_server", "address_text"]


def allowed_hosts(host, port):
    """The Host headers the page answers: the address served, by the name a browser gives it
    (localhost for loopback); on a wildcard address any IP literal.  A page from elsewhere that
    points a name of its own at 127.0.0.1 (DNS rebinding) sends that name, and is refused."""
    import ipaddress
    listened = ipaddress.ip_address(host) if _is_ip(host) else None
    names = {address_text(host, port)}
    if listened is not None and listened.is_loopback:
        names.add(f"localhost:{port}")
    wildcard = listened is not None and listened.is_unspecified

    def allowed(header):
        if header in names:
            return True
        if not wildcard:
            return False
        name, colon, given = header.rpartition(":")
        return colon == ":" and given == str(port) and _is_ip(name.strip("[]"))
    return allowed


def _is_ip(text):
    import ipaddress
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def routes(metrics_app, page_app=None, host_allowed=lambda header: False):
    """/metrics is prometheus_client's app; / and its data the page's (given ``page_app``, and
    only to a Host header ``host_allowed`` takes; GET and HEAD only); anything else is not found."""
    def app(environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            environ = _served_accept(environ)
            method = environ.get("REQUEST_METHOD")
            if method == "HEAD":  # prometheus_client's app answers it 405
                return _head(metrics_app, environ, start_response)
            if method != "GET":  # (prometheus_client's Allow leaves out the HEAD answered here)
                return _metrics_methods(method, start_response)
            return metrics_app(environ, start_response)
        if page_app is not None and path in page_app.paths:
            if not host_allowed(environ.get("HTTP_HOST", "")):
                start_response("403 Forbidden", [("Content-Type", "text/plain; charset=utf-8")])
                return [b"smem: this page answers only requests to the address smem serve listens on\n"]
            if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
                start_response("405 Method Not Allowed", [("Content-Type", "text/plain; charset=utf-8"),
                                                          ("Allow", "GET, HEAD")])
                return [b"smem: nothing here changes state: GET only\n"]
            return page_app(environ, start_response)
        if path == "/":
            start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
            return [b'<html><head><title>smem</title></head><body><h1>smem</h1>'
                    b'<p><a href="/metrics">Metrics</a></p></body></html>\n']
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [not_found]
    # every path served named, so that a mistyped one says where to go
    pages = getattr(page_app, "paths", ())
    served = ["/metrics"] + [path + " (the page)" if path == "/" else path for path in pages]
    listed = served[0] if len(served) == 1 else ", ".join(served[:-1]) + " and " + served[-1]
    not_found = f"not found: smem serves {listed}\n".encode()
    return app


#: what /metrics answers, in its Allow header
METRICS_METHODS = "GET, HEAD, OPTIONS"


def _metrics_methods(method, start_response):
    """OPTIONS and any other method on /metrics: the methods it answers (RFC 9110, 15.5.6: a 405
    names them all), as the page's 405 names its own."""
    if method == "OPTIONS":
        start_response("200 OK", [("Allow", METRICS_METHODS), ("Content-Length", "0")])
        return []
    start_response("405 Method Not Allowed", [("Content-Type", "text/plain; charset=utf-8"),
                                              ("Allow", METRICS_METHODS)])
    return [b"smem: /metrics is read with GET (or HEAD): nothing here changes state\n"]


def _served_accept(environ):
    """``environ`` without an Accept header prometheus_client cannot read: it compares a format's
    version as numbers and raises on one that is not (``version=abc``), a 500 and a line on our
    stderr for each such request from anyone who can reach the port.  The default format answers."""
    accept = environ.get("HTTP_ACCEPT")
    if not accept:
        return environ
    try:
        from prometheus_client.exposition import choose_encoder
        choose_encoder(accept)
    except ImportError:
        return environ
    except (ValueError, TypeError):
        return {k: v for k, v in environ.items() if k != "HTTP_ACCEPT"}
    return environ


def _head(app, environ, start_response):
    """HEAD: ``app``'s answer to GET, its headers (the length of the body) without the body."""
    answer = []
    body = b"".join(app(dict(environ, REQUEST_METHOD="GET"), lambda status, headers, exc_info=None:
                        answer.extend((status, headers))))
    status, headers = answer
    if not any(name.lower() == "content-length" for name, _ in headers):
        headers = [*headers, ("Content-Length", str(len(body)))]
    start_response(status, headers)
    return []


#: seconds a connection may send nothing before it is closed
IDLE_TIMEOUT = 30.0
#: seconds a connection has to send its whole request (IDLE_TIMEOUT bounds one silence only)
REQUEST_TIMEOUT = 60.0
#: connections answered at once, each in a thread of its own; one more is a 503 (Prometheus
#: scrapes one at a time, a browser opens a few)
MAX_CONNECTIONS = 64
#: seconds the whole answer may take to be read: a socket's timeout bounds all of one sendall
#: (socket(2) in Python 3.5+), and the page is megabytes, which a slow link takes minutes over
SEND_TIMEOUT = 600.0


def make_server(host, port, app):
    """A threading WSGI server bound to (host, port); a port in use is one line."""
    from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer

    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as e:  # (a runtime failure, as a port in use: the value was HOST:PORT)
        raise SmemError(f"cannot listen on {address_text(host, port)}: {e.strerror}") from None

    class Server(socketserver.ThreadingMixIn, WSGIServer):
        address_family = family
        daemon_threads = True

        def server_activate(self):
            super().server_activate()
            self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

        def process_request(self, request, client_address):
            """A thread for the connection, or with MAX_CONNECTIONS served already a 503, closed."""
            if not self._slots.acquire(blocking=False):
                _busy(request)
                self.shutdown_request(request)
                return
            try:
                super().process_request(request, client_address)
            except BaseException:
                self._slots.release()
                raise

        def process_request_thread(self, request, client_address):
            try:
                super().process_request_thread(request, client_address)
            finally:
                self._slots.release()

        def handle_error(self, request, client_address):
            """A client that went silent or away is not smem's error: no traceback on stderr."""
            if not isinstance(sys.exc_info()[1], (TimeoutError, ConnectionError)):
                super().handle_error(request, client_address)

    class Answer(ServerHandler):
        def log_exception(self, exc_info):
            """A reader that stalled past SEND_TIMEOUT or went away is not smem's error: nothing on
            stderr.  Anything else is one line (wsgiref prints a traceback; the client gets a 500)."""
            error = exc_info[1]
            if not isinstance(error, (TimeoutError, ConnectionError)):
                path = self.environ.get("PATH_INFO", "") if self.environ else ""
                try:
                    print(f"smem: serve: answering {path!r}: {type(error).__name__}: {str(error)!r}",
                          file=sys.stderr, flush=True)
                except OSError:
                    pass  # (stderr gone: the client gets its 500 still)

    class QuietHandler(WSGIRequestHandler):
        timeout = IDLE_TIMEOUT  # (each connection holds a thread: one that never sends is let go)

        def setup(self):
            super().setup()
            # (a request not read whole by then is cut: its blocked read returns, the thread ends)
            self._cut = threading.Timer(REQUEST_TIMEOUT, self._give_up)
            self._cut.daemon = True
            self._cut.start()

        def _give_up(self):
            self.cut_off = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        def finish(self):
            self._cut.cancel()
            super().finish()

        def handle(self):
            """One request, as wsgiref's handler takes it, answered by :class:`Answer`."""
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                self.requestline = self.request_version = self.command = ""
                self.send_error(414)
                return
            if not self.parse_request():  # (an error answer is sent)
                return
            answer = Answer(self.rfile, self.wfile, self.get_stderr(), self.get_environ(), multithread=False)
            answer.request_handler = self  # (wsgiref's back-pointer: it logs the request through it)
            answer.run(self.server.get_app())

        def parse_request(self):
            """The request read (within IDLE_TIMEOUT); its answer may take SEND_TIMEOUT to be read."""
            parsed = super().parse_request()
            self._cut.cancel()
            if getattr(self, "cut_off", False):  # (what was read by then is no request: no answer)
                self.close_connection = True
                return False
            if parsed:
                self.connection.settimeout(SEND_TIMEOUT)
            return parsed

        def log_message(self, format, *args):
            """No line per scrape on stderr."""

    try:
        server = Server((host, port), QuietHandler)
    except OSError as e:
        raise SmemError(f"cannot listen on {address_text(host, port)}: {e.strerror or e}") from None
    server.set_app(app)
    return server


def _busy(connection):
    """A 503 sent on a connection over MAX_CONNECTIONS, before its request is read (what it has
    sent already is read first: closing on unread bytes resets the connection, 503 and all)."""
    body = b"smem serve: too many connections at once; try again\n"
    try:
        connection.recv(65536, socket.MSG_DONTWAIT)
    except OSError:
        pass
    try:
        connection.settimeout(1.0)
        connection.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                           b"Retry-After: 5\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
                           % (len(body), body))
    except OSError:
        pass


def address_text(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
