"""Section serve: the wall time of `smem serve`'s GET /metrics on the live workload, serial and in
worker processes, and eight scrapes at once."""

import re
import statistics
import subprocess
import time

from measuring import wait_for_quiet
from ours import ours_argv, ours_env
from tables import Table, fmt_s


def _scrape(url):
    """(wall seconds of one GET, {sample name: value} of smem's unlabelled self metrics)."""
    import urllib.request
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = response.read().decode()
    wall = time.perf_counter() - t0
    own = dict(re.findall(r'^(smem_collection\w*) (\S+)$', body, re.M))
    return wall, {k: float(v) for k, v in own.items()}, len(body)


def section_serve(runs, tmp, log):
    """smem serve against the live workload: the wall time of a GET /metrics that makes a fresh
    collection (--min-interval 0), serial and in worker processes; and eight scrapes at once."""
    from concurrent.futures import ThreadPoolExecutor
    t = Table('smem serve: GET /metrics with a fresh collection (--min-interval 0), live workload',
              ['server', 'scrapes', 'median s', 'min s', 'max s', 'collection s (its own metric)',
               'processes read', 'response KiB', 'target', 'met?'],
              note='Wall time from the request to the last byte of the answer (urllib, same machine); the '
                   'collection time is smem_collection_duration_seconds of the same answers. "8 at once": '
                   'eight concurrent GETs on a server with --min-interval 5, timed until the last answer, '
                   'and how many collections served them.')
    for label, extra in (('serial (-j 1)', ['-j', '1', '--min-interval', '0']),
                         ('2 processes (-j 2)', ['-j', '2', '--min-interval', '0']),
                         ('8 at once, -j 1', ['-j', '1', '--min-interval', '5'])):
        argv = ours_argv('serve', '--listen', '127.0.0.1:0', *extra)
        proc = subprocess.Popen(argv, env=ours_env(), cwd=tmp, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            line = proc.stderr.readline().decode()
            m = re.search(r'serving (http://\S+)', line)
            if not m:
                t.add(label, 0, '-', '-', '-', '-', '-', '-', '< 1 s', f'failed: {line.strip()[:60]}')
                continue
            url = m.group(1)
            _scrape(url)  # warm-up: imports, the first collection
            if label.startswith('8'):
                proc_before = _scrape(url)[1].get('smem_collections_total', 0)
                time.sleep(5.5)  # the cached collection expires
                wait_for_quiet(log)
                t0 = time.perf_counter()
                with ThreadPoolExecutor(8) as pool:
                    answers = list(pool.map(_scrape, [url] * 8))
                wall = time.perf_counter() - t0
                made = max(a[1].get('smem_collections_total', 0) for a in answers) - proc_before
                t.add(label, 8, fmt_s(wall), fmt_s(min(a[0] for a in answers)), fmt_s(wall),
                      fmt_s(answers[0][1].get('smem_collection_duration_seconds')),
                      int(answers[0][1].get('smem_collection_processes', 0)), f'{answers[0][2] / 1024:.0f}',
                      '1 collection', f'{int(made)} collection(s)')
                continue
            results = []
            for _ in range(runs):
                wait_for_quiet(log)
                results.append(_scrape(url))
            walls = [r[0] for r in results]
            median = statistics.median(walls)
            t.add(label, len(results), fmt_s(median), fmt_s(min(walls)), fmt_s(max(walls)),
                  fmt_s(statistics.median(r[1].get('smem_collection_duration_seconds', 0) for r in results)),
                  int(results[-1][1].get('smem_collection_processes', 0)), f'{results[-1][2] / 1024:.0f}',
                  '< 1 s', 'met' if median < 1 else 'NOT met')
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return [t]
