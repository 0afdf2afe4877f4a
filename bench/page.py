#!/usr/bin/env python3
"""smem html at scale: size, time to write and time to interactive, as ratios to their targets.

    python3 bench/page.py                    # 1,500 processes of ~90 mappings, 5 runs
    python3 bench/page.py --processes 300 --runs 3

A capture of N copies of one workload process (bench/synth.py, as the scaling section makes
them) is read by ``smem -F json`` and ``smem html`` in interleaved runs (medians of wall time);
(``smem -m -F json``, which reads every mapping as the page does, is timed beside them); the page is then opened from its file in headless Chromium (selenium, Debian's chromium and
chromium-driver), each run in a new browser, once as a user first opens it and once more (V8
keeps what it compiled of the same file), and the browser's own clock says when it was
interactive (the page's script records performance.now() once the picture and the tables are
drawn); the target is on the first load.  Targets (issue 22): the
file at most 8 MiB, written in at most 2x the time of ``smem -F json``, interactive within 2 s.
Not a test: nothing here runs under pytest.
"""

import argparse
import os
import shutil
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

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1200")


def timed(argv, cwd=REPO):
    """(wall seconds, CPU seconds: user + system of the command and its workers)."""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # byte-compiled modules, as an installed smem has them (the warm runs write them)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.monotonic()
    subprocess.run(argv, check=True, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def _ready_at(driver, page):
    """(ms when the page and plotly.js were loaded, ms when it was interactive), by the browser's
    clock from navigation."""
    driver.get("about:blank")
    driver.get(f"file://{page}")
    for _ in range(600):
        ready = driver.execute_script("return window.smemPage && [window.smemPage.startedAt, window.smemPage.readyAt]")
        if ready:
            return ready
        time.sleep(0.05)
    raise RuntimeError(f"{page} was not interactive in 30 s")


def browser_ready(page, runs):
    """([first load], [load again]) per run: each run a new browser with a new profile opens the
    page (what a user who opens it sees: plotly.js compiled from its source), then opens it again
    (V8 reuses the compiled script of the same file, at the same line)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    first, again = [], []
    for _ in range(runs):
        options = webdriver.ChromeOptions()
        profile = tempfile.mkdtemp(prefix="smem-bench-chromium-")
        for flag in FLAGS + (f"--user-data-dir={profile}",):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
        try:
            first.append(_ready_at(driver, page))
            again.append(_ready_at(driver, page))
        finally:
            driver.quit()
            shutil.rmtree(profile, ignore_errors=True)
    return first, again


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=1500)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--repo", default=str(REPO), help="the smem tree to time (another checkout, to compare)")
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="smem-page-bench-") as tmp:
        with workload.running(1, 2) as wl:
            template = synth.read_process(wl.pids[-1])
            maps = wl.mapping_counts()[-1]
        capture = os.path.join(tmp, "capture.tgz")
        synth.many_processes(capture, template, args.processes)
        page = os.path.join(tmp, "page.html")
        commands = {"smem -F json": [python, "-m", "smem", "-S", capture, "-F", "json"],
                    "smem html": [python, "-m", "smem", "html", "-S", capture, "-o", page, "--force"],
                    "smem -m -F json": [python, "-m", "smem", "-S", capture, "-m", "-F", "json"],
                    "smem html -j 1": [python, "-m", "smem", "html", "-j", "1", "-S", capture, "-o", page, "--force"],
                    "smem -j 1 -F json": [python, "-m", "smem", "-j", "1", "-S", capture, "-F", "json"]}
        for argv in commands.values():
            timed(argv, args.repo)  # warm: page cache, byte-compiled modules
        times = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                times[name].append(timed(argv, args.repo))
        json_s, html_s, mapping_s, serial_s, serial_json_s = (statistics.median(t[0] for t in times[n]) for n in commands)
        json_cpu, html_cpu, mapping_cpu, serial_cpu, serial_json_cpu = (statistics.median(t[1] for t in times[n])
                                                                         for n in commands)
        size = os.path.getsize(page)
        ready, again = browser_ready(page, args.runs) if shutil.which("chromedriver") else ([], [])
    print(f"capture: {args.processes} processes of {maps} mappings (copies of one workload process)")
    print(f"{'measure':<34} {'value':>10} {'target':>10} {'ratio':>7}  met")
    rows = [("page size (MiB)", size / 2**20, 8.0),
            ("smem html / smem -F json (time)", html_s / json_s, 2.0),
            ("smem html / smem -F json (CPU)", html_cpu / json_cpu, 2.0)]
    if ready:
        rows.append(("interactive in Chromium (s)", statistics.median(t[1] for t in ready) / 1000, 2.0))
        rows.append(("opened again in it (s)", statistics.median(t[1] for t in again) / 1000, None))
    rows.append(("smem html / smem -m -F json (time)", html_s / mapping_s, None))
    rows.append(("serial (-j 1): html / json (time)", serial_s / serial_json_s, None))
    rows.append(("serial (-j 1): html / json (CPU)", serial_cpu / serial_json_cpu, None))
    for name, value, target in rows:
        if target is None:
            print(f"{name:<34} {value:>10.2f} {'(info)':>10} {'':>7}  -")
            continue
        print(f"{name:<34} {value:>10.2f} {target:>10.2f} {value / target:>7.2f}  {'yes' if value <= target else 'NO'}")
    print(f"medians of {args.runs} runs: smem -F json {json_s:.2f} s, smem html {html_s:.2f} s, "
          f"smem -m -F json {mapping_s:.2f} s, -j 1: html {serial_s:.2f} s, json {serial_json_s:.2f} s; "
          f"CPU (user + system, workers too) {json_cpu:.2f}, {html_cpu:.2f}, {mapping_cpu:.2f}, -j 1: {serial_cpu:.2f}, "
          f"{serial_json_cpu:.2f} s"
          + (f"; interactive, first load in a new browser {', '.join(f'{t[1] / 1000:.2f}' for t in ready)} s (of which "
             f"loading the page and plotly.js, median {statistics.median(t[0] for t in ready) / 1000:.2f} s), opened "
             f"again {', '.join(f'{t[1] / 1000:.2f}' for t in again)} s" if ready else "; no chromedriver"))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times grow with it)")


if __name__ == "__main__":
    main()
