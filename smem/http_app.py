"""smem serve's HTTP front: which paths answer what (/metrics, the page), which Host headers the
page answers (DNS rebinding), and the threading WSGI server.  HEAD is answered as GET without
the body (RFC 9110, 9.3.2), which prometheus_client's app refuses with 405."""

import socket
import socketserver
import sys

from .errors import SmemError, UsageError

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
            if environ.get("REQUEST_METHOD") == "HEAD":  # prometheus_client's app answers it 405
                return _head(metrics_app, environ, start_response)
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
#: seconds the whole answer may take to be read: a socket's timeout bounds all of one sendall
#: (socket(2) in Python 3.5+), and the page is megabytes, which a slow link takes minutes over
SEND_TIMEOUT = 600.0


def make_server(host, port, app):
    """A threading WSGI server bound to (host, port); a port in use is one line."""
    from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer

    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as e:
        raise UsageError(f"--listen {host}: {e.strerror}") from None

    class Server(socketserver.ThreadingMixIn, WSGIServer):
        address_family = family
        daemon_threads = True

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
                print(f"smem: serve: answering {path!r}: {type(error).__name__}: {str(error)!r}", file=sys.stderr,
                      flush=True)

    class QuietHandler(WSGIRequestHandler):
        timeout = IDLE_TIMEOUT  # (each connection holds a thread: one that never sends is let go)

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


def address_text(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
