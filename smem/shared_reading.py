"""One reading shared by the requests that want it: smem serve's scrapes of ``/metrics`` and its
page's fetches of ``data.json`` (reading ``/proc`` is the cost; the answers are cheap).

A reading younger than ``min_interval`` seconds answers again, its age counted from when it
started, the instant its figures describe: counted from its end, a client asking every S seconds
for a reading that takes d found it S - d old and got it twice, every other answer the one before
(a Prometheus scraping every 5 s saw its scrape durations alternate 0.01, 0.1 s).  A tenth of
``min_interval`` is forgiven: a client asking every ``min_interval`` seconds, its requests a few
milliseconds early or late, still gets a new reading each time.  A request that arrived while a
reading was under way shares it, however long it took (``min_interval`` 0 shares nothing).
"""

import threading
import time

__all__ = ["SharedReading"]

#: the share of min_interval a reading must be old to be read again
OLD_ENOUGH = 0.9


class SharedReading:
    """``read()``'s value, made at most once per ``min_interval`` seconds, one at a time."""

    def __init__(self, min_interval, read):
        self.min_interval = min_interval
        self._read = read
        self._lock = threading.Lock()
        self._latest = None
        self._started = None  # time.monotonic() when the latest reading started
        self._ended = None    # and when it ended

    def get(self):
        """(the latest reading, whether this call made it).  A read that raises keeps the one
        before, and the next call reads again."""
        arrived = time.monotonic()
        with self._lock:
            now = time.monotonic()
            shared = self.min_interval > 0 and self._ended is not None and self._ended >= arrived
            if self._ended is not None and (shared or now - self._started < self.min_interval * OLD_ENOUGH):
                return self._latest, False
            self._latest = self._read()
            self._started, self._ended = now, time.monotonic()
            return self._latest, True
