"""Shared bench helpers: Django setup against DATABASE_URL, timing, a live server, a table."""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass


def setup_django() -> None:
    if not os.environ.get("DATABASE_URL"):
        raise SystemExit("set DATABASE_URL to a dedicated benchmark database")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orchestrator.settings")
    import django

    django.setup()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


@dataclass
class Result:
    operation: str
    transport: str
    clients: int
    samples: list[float]

    def row(self) -> list[str]:
        ms = [s * 1000 for s in self.samples]
        return [self.operation, self.transport, str(self.clients), str(len(ms)),
                f"{statistics.median(ms):.2f}", f"{percentile(ms, 0.99):.2f}"]


def measure(operation: Callable[[int, int], None], *, clients: int, requests: int,
            prepare: Callable[[int, int], None] | None = None,
            per_thread_close: Callable[[], None] | None = None) -> list[float]:
    """Run ``operation(client, i)`` ``requests`` times over ``clients`` threads; seconds each.

    ``prepare(client, i)`` runs before each timed call, outside the timing.
    """
    samples: list[float] = []
    lock = threading.Lock()

    def worker(client: int) -> None:
        local = []
        try:
            for i in range(client, requests, clients):
                if prepare:
                    prepare(client, i)
                started = time.perf_counter()
                operation(client, i)
                local.append(time.perf_counter() - started)
        finally:
            if per_thread_close:
                per_thread_close()
        with lock:
            samples.extend(local)

    with ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(worker, c) for c in range(clients)]:
            future.result()
    return samples


class LiveServer:
    """uvicorn serving orchestrator.asgi in a thread of this process."""

    def __init__(self, port: int) -> None:
        import uvicorn

        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(
            "orchestrator.asgi:application", host="127.0.0.1", port=port,
            log_level="warning", lifespan="on", access_log=False))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("bench server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "+".join("-" * (w + 2) for w in widths)
    print(f"+{line}+")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print(f"+{line}+")
    for row in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True))
              + " |")
    print(f"+{line}+")
