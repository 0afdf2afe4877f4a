"""A source prints nothing: ``tcp://``'s listening line goes to the caller's ``said`` (the command
line shows it, as tests/test_tcp_capture.py checks word for word), and a library that opens the
source without one gets no line on its stderr."""

import socket
import threading

from hostile_inputs import capture_tar, compress
from test_tcp_capture import free_port, wait_listening

from smem.sources import open_source


class _Waiting:
    """Stands in for the process wait_listening watches: the thread that opens the source."""

    def __init__(self, thread):
        self.thread = thread

    def poll(self):
        return None if self.thread.is_alive() else 0

    def communicate(self):
        return "the source returned before anything listened", ""


def _opened(port, said=None):
    """open_source of tcp://127.0.0.1:PORT, a capture pushed to it from here; the pids it holds."""
    got = {}

    def wait():
        got["source"] = open_source(f"tcp://127.0.0.1:{port}", timeout=60, **({} if said is None else {"said": said}))

    thread = threading.Thread(target=wait)
    thread.start()
    try:
        wait_listening(port, _Waiting(thread))
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(compress("gzip", capture_tar()))
    finally:
        thread.join(120)
    source = got["source"]
    try:
        return list(source.pids())
    finally:
        source.close()


def test_the_listening_line_goes_to_said_not_to_stderr(capfd):
    port = free_port()
    lines = []
    assert _opened(port, said=lines.append)  # (the capture was read)
    assert lines == [f"listening on 127.0.0.1:{port} for a capture (on the target: sh smemcap.sh | "
                     f"nc 127.0.0.1 {port})"]
    assert capfd.readouterr() == ("", "")


def test_without_said_nothing_is_printed(capfd):
    assert _opened(free_port())
    assert capfd.readouterr() == ("", "")
