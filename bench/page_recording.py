#!/usr/bin/env python3
"""smem html of a recording at scale: the page's size, the time to write it, its slider's stops
and the time to interactive, for one smem tree or two side by side.

    python3 bench/page_recording.py                          # 1,500 processes, 24 frames, 3 runs
    python3 bench/page_recording.py --repo /work/main --repo .   # main against this checkout

A capture of N copies of one workload process (bench/synth.py, as bench/page.py makes it) is
pushed F times to ``smem record --listen`` (``--smaps-every``: key frames keep every smaps, the
others smaps_rollup), so every frame is the same machine; each tree's ``smem html -S REC`` is then
timed (median wall time of the runs, interleaved) and its page opened in headless Chromium, each
run in a new browser (bench/page.py's browser_ready).  Not a test: nothing here runs under pytest.
"""

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

import synth  # noqa: E402
import workload  # noqa: E402
from page import browser_ready, timed  # noqa: E402


def record(rec, capture, frames, smaps_every):
    """The recording ``rec`` of ``capture`` pushed ``frames`` times to this checkout's smem record."""
    recorder = subprocess.Popen([sys.executable, "-m", "smem", "record", "-o", rec, "--listen", "127.0.0.1:0",
                                 "--count", str(frames), "--smaps-every", str(smaps_every)],
                                cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        line = recorder.stderr.readline().decode()
        port = int(re.search(r"listening on 127\.0\.0\.1:(\d+)", line).group(1))
        data = Path(capture).read_bytes()
        index = Path(rec) / "index.jsonl"
        for frame in range(1, frames + 1):
            with socket.create_connection(("127.0.0.1", port), timeout=600) as s:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
                s.recv(1)
            while not (index.exists() and len(index.read_text().splitlines()) > frame):
                if recorder.poll() is not None:
                    raise RuntimeError(recorder.stderr.read().decode())
                time.sleep(0.05)
        if recorder.wait(timeout=600) != 0:
            raise RuntimeError(recorder.stderr.read().decode())
    finally:
        if recorder.poll() is None:
            recorder.kill()
            recorder.wait()


def stops(page):
    """(the slider's stops, of them frames without smaps) of a page file."""
    text = Path(page).read_text()
    found = re.search(r'<script type="application/json" id="smem-timeline">(.*?)</script>', text, re.S)
    timeline = json.loads(found.group(1))
    frames = timeline["summary"]["frames"]
    kept = [int(i) for i in timeline["instants"]]
    return len(kept), sum(1 for i in kept if frames[i].get("smaps") is False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=1500)
    parser.add_argument("--frames", type=int, default=24)
    parser.add_argument("--smaps-every", type=int, default=12)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repo", action="append", help="a smem tree to time (again: another, to compare)")
    args = parser.parse_args()
    repos = args.repo or [str(REPO)]
    with tempfile.TemporaryDirectory(prefix="smem-page-recording-bench-") as tmp:
        with workload.running(1, 2) as wl:
            template = synth.read_process(wl.pids[-1])
        capture = os.path.join(tmp, "capture.tgz")
        synth.many_processes(capture, template, args.processes)
        rec = os.path.join(tmp, "rec")
        record(rec, capture, args.frames, args.smaps_every)
        pages = {repo: os.path.join(tmp, f"page{i}.html") for i, repo in enumerate(repos)}
        argv = {repo: [sys.executable, "-m", "smem", "html", "-S", rec, "-o", pages[repo], "--force"] for repo in repos}
        for repo in repos:
            timed(argv[repo], repo)  # warm: page cache, byte-compiled modules
        times = {repo: [] for repo in repos}
        for _ in range(args.runs):
            for repo in repos:
                times[repo].append(timed(argv[repo], repo)[0])
        print(f"recording: {args.frames} frames of {args.processes} processes, every smaps kept in the first "
              f"and every {args.smaps_every} frames after it")
        for repo in repos:
            ready, _ = browser_ready(pages[repo], args.runs)
            count, rollups = stops(pages[repo])
            print(f"{repo}: page {os.path.getsize(pages[repo]) / 2**20:.2f} MiB, {count} stops ({rollups} without smaps), "
                  f"written in {statistics.median(times[repo]):.2f} s (median of {args.runs}), interactive in "
                  f"{statistics.median(t[1] for t in ready) / 1000:.2f} s (first load in a new browser)")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
