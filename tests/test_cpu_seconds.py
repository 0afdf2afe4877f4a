"""smem serve's CPU counters (smem/cpu_seconds.py): ``smem_<view>_cpu_seconds_total``, read by
real processes that spend a known CPU time, one of which exits between two collections."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import TESTS
from smem.parsers.stat import parse_stat

pytest.importorskip("prometheus_client", reason="smem serve needs smem[metrics] (prometheus_client)")

#: names itself (its stat's comm: smem's program name), runs until it has used 0.15 s of CPU,
#: then sleeps
SPEND = ("import sys, time\nopen('/proc/self/comm', 'w').write(sys.argv[1])\n"
         "while time.process_time() < 0.15: pass\nsys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(600)\n")


def _samples(text, family):
    """{labels text: value} of ``family``'s samples in exposition ``text``."""
    samples = {}
    for line in text.splitlines():
        if line.startswith(family + "{"):
            labels, value = line[len(family):].rsplit(" ", 1)
            samples[labels] = float(value)
    return samples


def _writes_killing_one_after_the_first(serve, path, victim):
    """The text of each write of ``path`` until ``serve`` exits; ``victim`` killed (and reaped)
    as soon as the first is there."""
    written, deadline = [], time.monotonic() + 120
    while True:
        if time.monotonic() > deadline:
            serve.kill()
        running = serve.poll() is None
        text = path.read_text() if path.exists() else None
        if text is not None and (not written or text != written[-1]):
            written.append(text)
            if len(written) == 1:
                victim.kill()
                victim.wait()
        if not running:
            return written
        time.sleep(0.01)


@pytest.mark.uses("cpu")
def test_a_programs_cpu_seconds_keep_what_a_process_that_exited_ran(tmp_path):
    """Two processes of one program each spend 0.15 s of CPU; one is killed after the first
    collection.  The program's counter still counts its time at the third (the sum of the live
    processes' would have fallen, a counter reset to Prometheus), and each process's own counter
    is its utime + stime."""
    name = f"smemspent{os.getpid() % 100000}"
    spenders = [subprocess.Popen([sys.executable, "-c", SPEND, name], stdout=subprocess.PIPE) for _ in range(2)]
    serve = None
    try:
        for proc in spenders:
            assert proc.stdout.readline() == b"ready\n"
        hz = os.sysconf("SC_CLK_TCK")
        ticks = {p.pid: parse_stat(Path(f"/proc/{p.pid}/stat").read_bytes()).cpu_ticks for p in spenders}
        pids = ",".join(map(str, ticks))
        serve = subprocess.Popen([sys.executable, "-m", "smem", "serve", "--textfile", str(tmp_path), "--interval", "0.5",
                                  "--count", "3", "--pid", pids, "--top", "5"],
                                 stderr=subprocess.PIPE, cwd=TESTS.parent)
        written = _writes_killing_one_after_the_first(serve, tmp_path / "smem.prom", spenders[0])
        assert serve.wait(timeout=60) == 0, serve.stderr.read()
    finally:
        for proc in spenders + ([serve] if serve else []):
            proc.kill()
            proc.wait()
    assert len(written) == 3
    assert "# TYPE smem_program_cpu_seconds_total counter" in written[0]
    # what the first write counts (below: all the spenders ran before smem serve started) is what
    # its HELP says; it said "since smem serve first saw each"
    assert ("# HELP smem_program_cpu_seconds_total CPU time its processes ran since each started, "
            "one that exited as last seen") in written[0]
    both = sum(ticks.values()) / hz
    program = [_samples(text, "smem_program_cpu_seconds_total")[f'{{name="{name}"}}'] for text in written]
    # (a tick or two more where a spender woke; never less than it had ran when first read)
    assert both <= program[0] <= both + 0.05, (program, ticks)
    assert program[0] <= program[1] <= program[2] <= both + 0.05, program
    first, last = (_samples(text, "smem_process_cpu_seconds_total") for text in (written[0], written[-1]))
    for pid, spent in ticks.items():
        value = next(v for labels, v in first.items() if f'pid="{pid}"' in labels)
        assert spent / hz <= value <= spent / hz + 0.05
    killed = spenders[0].pid
    assert not any(f'pid="{killed}"' in labels for labels in last)
    assert any(f'pid="{spenders[1].pid}"' in labels for labels in last)


#: spends 0.15 s of CPU as FLAP_NAME, then on each SIGUSR1 takes the other of its two names
#: (its stat's comm, which -P matches) and says so
FLAP = ("import signal, sys, time\nnames = sys.argv[1:3]\n"
        "def rename(*_):\n    names.reverse(); open('/proc/self/comm', 'w').write(names[0])\n"
        "    sys.stdout.write('renamed\\n'); sys.stdout.flush()\n"
        "signal.signal(signal.SIGUSR1, rename)\nopen('/proc/self/comm', 'w').write(names[0])\n"
        "while time.process_time() < 0.15: pass\nsys.stdout.write('ready\\n'); sys.stdout.flush()\n"
        "while True: time.sleep(600)\n")


@pytest.mark.uses("cpu")
def test_a_process_out_of_the_selection_for_a_collection_is_not_counted_again_when_back(tmp_path):
    """A process -P leaves out of one collection (its name changed: a server retitling itself, or
    one over --max-rss a moment) is the same process when it is back: its group's counter adds
    what it ran since, not all it ran once more (a rise rate() reads as CPU time never spent)."""
    import signal
    from smem.options import Query, ServeOptions
    from smem.serve import SharedCollector
    name = f"smemflap{os.getpid() % 100000}"
    flapper = subprocess.Popen([sys.executable, "-c", FLAP, name, "smemaway"], stdout=subprocess.PIPE)
    stayer = subprocess.Popen([sys.executable, "-c", SPEND, name], stdout=subprocess.PIPE)
    try:
        for proc in (flapper, stayer):
            assert proc.stdout.readline() == b"ready\n"
        collector = SharedCollector(Query(process_filter=f"^{name}$"),
                                    ServeOptions(min_interval=0, max_staleness=0), warn=lambda _: None)

        def program_seconds(without=None):
            families = {f.name: f for f in collector.latest(say=False).families}
            pids = [dict(zip(f.label_names, labels))["pid"] for f in [families["smem_process_cpu_seconds"]]
                    for labels, _ in f.samples]
            assert (str(without) not in pids) if without else str(flapper.pid) in pids, pids
            return dict(families["smem_program_cpu_seconds"].samples)[(name,)]

        def renamed():
            flapper.send_signal(signal.SIGUSR1)
            assert flapper.stdout.readline() == b"renamed\n"

        hz = os.sysconf("SC_CLK_TCK")
        ticks = {p.pid: parse_stat(Path(f"/proc/{p.pid}/stat").read_bytes()).cpu_ticks for p in (flapper, stayer)}
        both = sum(ticks.values()) / hz
        first = program_seconds()
        renamed()  # away: -P leaves it out
        program_seconds(without=flapper.pid)
        renamed()  # back
        third = program_seconds()
    finally:
        for proc in (flapper, stayer):
            proc.kill()
            proc.wait()
    assert both <= first <= both + 0.05, (first, ticks)
    # (a tick or two more where one woke; the flapper's 0.15 s counted twice is far more)
    assert first <= third <= both + 0.05, (first, third, ticks)
