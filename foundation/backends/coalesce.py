"""Index files rewritten off the request path, coalesced per process.

Some files summarise many rows: ``_registry.json`` (every task) and
``.tool-history.json`` (the last calls of every session). Rewriting one of them inside
every call that changes a row costs that call the whole summary: 30 ms per switch_task at
10,000 tasks, 1.2 ms and an fsync per tool call, and concurrent agents queue on the disk.
A ``CoalescingWriter`` instead marks its file stale; one daemon thread per process
rewrites it INDEX_FILE_DELAY_MS later, covering every change made before the rewrite
starts. With a delay of 0 the caller rewrites it at once (the tests use that).
``CoalescingWriters`` does the same for a file per key (a project's registry) with one
thread for all keys: a thread per project would mean hundreds of threads per web worker
on a server of many repositories, each waking and reconnecting to Postgres on its own.
Pending rewrites are flushed at interpreter exit. The graph outbox drain
(graph/services/outbox.py) uses the same machinery with its own delay setting.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import close_old_connections, connection

from foundation.observability import metrics, threads

logger = logging.getLogger("orchestrator.files")

# A writer thread that has had nothing to do for this long gives its database
# connection back instead of holding it open. Long enough that a busy server's writers
# keep theirs between bursts (a new Postgres connection costs a backend process).
IDLE_CLOSE_SECONDS = 10.0


class CoalescingWriter:
    def __init__(self, name: str, write: Callable[[], bool],
                 delay_setting: str = "INDEX_FILE_DELAY_MS",
                 interval_setting: str | None = None) -> None:
        self.name = name
        self._write = write
        self._delay_setting = delay_setting  # milliseconds, read at each request
        # Milliseconds, read at each write: at least this long between the starts of two
        # background writes, so that a writer kept busy covers more per write while one
        # after a quiet spell still runs ``delay`` after its request.
        self._interval_setting = interval_setting
        self._last_start = float("-inf")
        self._stale = threading.Event()
        self._thread = threads.ThreadPerProcess(f"index-writer-{name}")
        atexit.register(self._flush_at_exit)

    def request(self) -> bool | None:
        """Ask for a rewrite: the write's result when done at once, None when scheduled."""
        delay = getattr(settings, self._delay_setting) / 1000
        if delay <= 0:
            return self._write()
        self._stale.set()
        self._thread.start(self._run, delay)
        return None

    def flush(self) -> bool:
        """Rewrite now if a rewrite is pending; True when one was written."""
        if not self._stale.is_set():
            return False
        self._stale.clear()
        return self._write()

    def _flush_at_exit(self) -> None:
        with contextlib.suppress(Exception):  # the process is ending either way
            self.flush()

    def _run(self, delay: float) -> None:
        threads.name_this_thread(f"w-{self.name}")
        while True:
            if not self._stale.wait(timeout=IDLE_CLOSE_SECONDS):
                connection.close()
                continue
            time.sleep(delay)  # let the burst finish: one rewrite covers all of it
            if self._interval_setting is not None:
                interval = getattr(settings, self._interval_setting) / 1000
                time.sleep(max(0.0, self._last_start + interval - time.monotonic()))
            self._last_start = time.monotonic()
            try:
                close_old_connections()
                self.flush()
            except Exception:  # e.g. Postgres down: this thread must live to write later
                logger.exception("index file %s not rewritten; retrying on the next change",
                                 self.name)
                metrics.backend_failures_total.labels("file", self.name).inc()
                with contextlib.suppress(Exception):
                    connection.close()  # a broken connection is reopened next time


class CoalescingWriters:
    """Rewrites of a file per key (a project's index file), coalesced like a
    ``CoalescingWriter``'s, by one thread for all keys: a burst writes each stale key
    once, in key order."""

    def __init__(self, name: str, write: Callable[[str], bool],
                 delay_setting: str = "INDEX_FILE_DELAY_MS") -> None:
        self.name = name
        self._write = write
        self._delay_setting = delay_setting
        self._stale: set[str] = set()
        self._lock = threading.Lock()
        self._writer = CoalescingWriter(name, self._write_stale, delay_setting)

    def request(self, key: str) -> bool | None:
        """Ask for a rewrite of ``key``: the write's result when done at once, None when
        scheduled."""
        if getattr(settings, self._delay_setting) <= 0:
            return self._write(key)
        with self._lock:
            self._stale.add(key)
        return self._writer.request()

    def flush(self) -> None:
        """Rewrite every pending key now."""
        self._writer.flush()

    def _write_stale(self) -> bool:
        with self._lock:
            keys, self._stale = sorted(self._stale), set()
        written = True
        for key in keys:
            try:
                written = self._write(key) and written
            except Exception:  # one key's failure must not keep the others stale
                logger.exception("index file %s:%s not rewritten; retrying on its next "
                                 "change", self.name, key)
                metrics.backend_failures_total.labels("file", self.name).inc()
                written = False
        return written
