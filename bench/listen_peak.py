#!/usr/bin/env python3
"""The peak memory of ``smem capture --listen`` and ``smem record --listen`` receiving a push.

    python3 bench/listen_peak.py                 # this checkout's smem
    python3 bench/listen_peak.py --tree /other/checkout

Pushes, from a socket on 127.0.0.1, each of: a 1,000-process capture (bench/synth.py, about
5 MB), 1.2 GB of zeros (refused past 1 GiB), and a gzip of under 1 MB holding a small real
capture and 800 MiB of zero-filled members; and prints each listener's maximum resident set size
as ``/usr/bin/time -v`` reports it.  Not a test: nothing here runs under pytest.
"""

import argparse
import gzip
import io
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import synth  # noqa: E402


class _Zeros(io.RawIOBase):
    def __init__(self, size):
        self.left = size

    def readable(self):
        return True

    def readinto(self, buffer):
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def _puffed(path, small):
    """A capture (``small``) and four 200 MiB members of zeros, gzip'd: well under 1 MB."""
    with tarfile.open(small) as src, gzip.open(path, "wb", 6) as out, tarfile.open(fileobj=out, mode="w|") as tar:
        for member in src:
            tar.addfile(member, src.extractfile(member) if member.isreg() else None)
        for i in range(4):
            info = tarfile.TarInfo(f"junk{i}")
            info.size = 200 << 20
            tar.addfile(info, _Zeros(info.size))


def _push(port, what):
    """Send ``what`` (a path, or a number of zero bytes) once something listens on ``port``."""
    for _ in range(400):
        try:
            s = socket.create_connection(("127.0.0.1", port))
            break
        except OSError:
            time.sleep(0.05)
    else:
        return
    try:
        with s:
            if isinstance(what, int):
                chunk = bytes(1 << 20)
                for offset in range(0, what, len(chunk)):
                    s.sendall(chunk[:what - offset])
            else:
                s.sendall(Path(what).read_bytes())
            s.shutdown(socket.SHUT_WR)
            s.settimeout(120)
            while s.recv(4096):
                pass
    except OSError:
        pass  # (refused past the limit: the listener closed first)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(tree, what, args, scratch):
    """(peak RSS in kB, exit status) of ``smem ARGS --listen`` in ``tree`` receiving ``what``."""
    port = _free_port()
    pusher = threading.Thread(target=_push, args=(port, what))
    pusher.start()
    proc = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "smem", *args, "--listen",
                           f"127.0.0.1:{port}", "--timeout", "60"], cwd=tree, env=dict(os.environ, PYTHONPATH=tree),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
    pusher.join()
    for target in ("out", "rec"):
        subprocess.run(["rm", "-rf", os.path.join(scratch, target)], check=True)
    peak = next(int(line.split()[-1]) for line in proc.stderr.splitlines() if "Maximum resident" in line)
    return peak, proc.returncode


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", default=str(HERE.parent), help="the checkout whose smem runs")
    parser.add_argument("--runs", type=int, default=2)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        capture = os.path.join(scratch, "c5.tgz")
        synth.many_processes(capture, synth.read_process(os.getpid()), 1000)
        small = os.path.join(scratch, "small.tgz")
        subprocess.run([sys.executable, "-m", "smem", "capture", "-o", small], cwd=options.tree,
                       env=dict(os.environ, PYTHONPATH=options.tree), check=True, stderr=subprocess.DEVNULL)
        puffed = os.path.join(scratch, "puffed.tgz")
        _puffed(puffed, small)
        out, rec = os.path.join(scratch, "out"), os.path.join(scratch, "rec")
        for label, what in ((f"{os.path.getsize(capture) / 1e6:.1f} MB capture", capture),
                            ("1.2 GB of zeros", 1_200_000_000),
                            (f"{os.path.getsize(puffed) / 1e6:.1f} MB gzip of 800 MiB members", puffed)):
            for command, args in (("capture --listen", ["capture", "-o", out]),
                                  ("record --listen", ["record", "-o", rec] + (["--duration", "12"]
                                                                               if isinstance(what, int)
                                                                               else ["--count", "1"]))):
                runs = [measure(options.tree, what, args, scratch) for _ in range(options.runs)]
                peaks = ", ".join(f"{peak / 1024:.0f}" for peak, _ in runs)
                print(f"{label:36} {command:17} exit {runs[0][1]}  peak MiB: {peaks}", flush=True)


if __name__ == "__main__":
    main()
