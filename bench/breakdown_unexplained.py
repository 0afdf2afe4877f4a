"""How much of MemTotal `smem -w --breakdown` leaves unexplained, on this machine under a workload.

Root only; starts PostgreSQL (shared_buffers 256 MB, a table filled), Redis (500,000 keys),
nginx (4 workers), a forked fleet sharing memory (tests/workload.py), a 128 MiB /dev/shm
file no one maps and, where zram can be set up, a process with 64 MiB paged out to a zram
swap device; then runs the breakdown a few times and prints the unexplained row, and stops
everything.  A measurement, not a test: the figures move with whatever else runs.

    python bench/breakdown_unexplained.py [--runs N]
"""

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from workload import forked_workers, swapped_process  # noqa: E402

PG = "/usr/lib/postgresql/15/bin"


def run(*argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw)


@contextlib.contextmanager
def postgres(tmp):
    if not os.path.exists(f"{PG}/postgres"):
        yield "absent"
        return
    data = os.path.join(tmp, "pg")
    os.makedirs(data)
    shutil.chown(tmp, "postgres")
    shutil.chown(data, "postgres")
    as_pg = ["runuser", "-u", "postgres", "--"]
    run(*as_pg, f"{PG}/initdb", "-D", data)
    run(*as_pg, f"{PG}/pg_ctl", "-D", data, "-l", os.path.join(tmp, "pg.log"), "-w", "-o",
        f"-p 5499 -k {tmp} -c shared_buffers=256MB -c listen_addresses=''", "start")
    try:
        run(*as_pg, f"{PG}/psql", "-h", tmp, "-p", "5499", "-d", "postgres", "-c",
            "create table t as select g, md5(g::text) as h from generate_series(1, 1000000) g; "
            "select count(*) from t;")
        yield "running"
    finally:
        subprocess.run([*as_pg, f"{PG}/pg_ctl", "-D", data, "-m", "fast", "stop"], capture_output=True)


@contextlib.contextmanager
def redis(tmp):
    if not shutil.which("redis-server"):
        yield "absent"
        return
    proc = subprocess.Popen(["redis-server", "--port", "6399", "--save", "", "--dir", tmp],
                            stdout=subprocess.DEVNULL)
    try:
        for _ in range(50):
            if subprocess.run(["redis-cli", "-p", "6399", "ping"], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        run("redis-cli", "-p", "6399", "debug", "populate", "500000", "key", "100")
        yield "running"
    finally:
        proc.terminate()
        proc.wait()


@contextlib.contextmanager
def nginx(tmp):
    if not shutil.which("nginx"):
        yield "absent"
        return
    conf = os.path.join(tmp, "nginx.conf")
    with open(os.path.join(tmp, "index.html"), "w") as f:
        f.write("x" * 100000)
    with open(conf, "w") as f:
        f.write(f"worker_processes 4; pid {tmp}/nginx.pid; error_log {tmp}/error.log;\n"
                "events { worker_connections 64; }\n"
                f"http {{ access_log off; server {{ listen 127.0.0.1:8099; root {tmp}; }} }}\n")
    run("nginx", "-c", conf)
    try:
        for _ in range(20):
            subprocess.run(["curl", "-s", "-o", "/dev/null", "http://127.0.0.1:8099/index.html"])
        yield "running"
    finally:
        subprocess.run(["nginx", "-c", conf, "-s", "stop"], capture_output=True)


@contextlib.contextmanager
def zram_swap():
    control = "/sys/class/zram-control/hot_add"
    if not os.path.exists(control):
        subprocess.run(["modprobe", "zram", "num_devices=0"], capture_output=True)
    if not os.path.exists(control):
        yield None
        return
    with open(control) as f:
        number = f.read().strip()
    device = f"/dev/zram{number}"
    try:
        with open(f"/sys/block/zram{number}/disksize", "w") as f:
            f.write(str(256 << 20))
        run("mkswap", device)
        run("swapon", "-p", "32767", device)
        yield device
    finally:
        subprocess.run(["swapoff", device], capture_output=True)
        with contextlib.suppress(OSError):
            with open(f"/sys/block/zram{number}/reset", "w") as f:
                f.write("1")
        with contextlib.suppress(OSError):
            with open("/sys/class/zram-control/hot_remove", "w") as f:
                f.write(number)


def breakdown():
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-m", "smem", "-w", "--breakdown", "-F", "json"], env=env,
                         capture_output=True, text=True, check=True).stdout
    return {r["area"]: r for r in json.loads(out)["rows"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("root only: it starts servers and sets up zram swap")
    tmp = tempfile.mkdtemp(prefix="smem-breakdown-")
    os.chmod(tmp, 0o755)
    shm = f"/dev/shm/smem-breakdown-{os.getpid()}"
    try:
        with contextlib.ExitStack() as stack:
            started = {name: stack.enter_context(cm(tmp)) for name, cm in
                       (("postgres", postgres), ("redis", redis), ("nginx", nginx))}
            stack.enter_context(forked_workers(shared_kib=64 << 10, private_kib=16 << 10, nworkers=16))
            with open(shm, "wb") as f:
                f.write(b"\1" * (128 << 20))
            device = stack.enter_context(zram_swap())
            swapped = stack.enter_context(swapped_process(64 << 10)) if device else None
            print("workload:", started, "fleet: 17 processes; /dev/shm 128 MiB;",
                  f"swapped to {device}: {swapped.info['swapped']}" if swapped else "no zram swap")
            for _ in range(args.runs):
                rows = breakdown()
                total = sum(r["used"] for r in rows.values() if r["used"] is not None)
                lost = rows["unexplained"]["used"]
                shown = ", ".join(f"{a} {rows[a]['used']}" for a in
                                  ("process anon (PSS)", "process shmem (PSS)", "shmem not mapped (tmpfs/SysV/memfd)",
                                   "zram pool", "free in per-CPU lists") if a in rows)
                print(f"unexplained {lost} KiB = {100.0 * lost / total:.3f}% of MemTotal {total} KiB; {shown}")
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(shm)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
