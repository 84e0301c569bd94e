"""Polling for effects that land asynchronously (background writers, beat, workers)."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(predicate: Callable[[], object], timeout: float = 10.0,
             interval: float = 0.05) -> bool:
    """True as soon as ``predicate()`` is truthy; False once ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def lock_wait(holder_pid: int, waiter_pid: int | None = None, timeout: float = 10.0) -> bool:
    """True once a Postgres backend (``waiter_pid``, or any) waits for a lock that backend
    ``holder_pid`` holds; False after ``timeout``. Postgres's own lock table says so
    (``pg_blocking_pids``), so a test orders two connections on it instead of a sleep."""
    import psycopg

    from tests.processes import database_url

    with psycopg.connect(database_url(), autocommit=True) as probe:
        def waiting() -> bool:
            if waiter_pid is not None:
                row = probe.execute("SELECT %s = ANY(pg_blocking_pids(%s))",
                                    [holder_pid, waiter_pid]).fetchone()
            else:
                row = probe.execute("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted "
                                    "AND %s = ANY(pg_blocking_pids(pid)))",
                                    [holder_pid]).fetchone()
            return bool(row and row[0])

        return wait_for(waiting, timeout=timeout, interval=0.01)
