"""Shared bench helpers: Django setup against DATABASE_URL, timing, a live server, a table."""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# One token stands for every simulated client here (bench.agents: thousands of agents), so
# the servers the benches start, and Django in this process, take a per-token rate limit
# no bench reaches: the limiter still runs (its Redis round trip is in every measured
# call) but never refuses. A server of your own (--url) needs the same: API_RATE_LIMIT.
BENCH_RATE_LIMIT = "100000000/minute"
os.environ.setdefault("API_RATE_LIMIT", BENCH_RATE_LIMIT)


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
            per_thread_close: Callable[[], None] | None = None,
            warmup: int = 0) -> list[float]:
    """Run ``operation(client, i)`` ``requests`` times over ``clients`` threads; seconds each.

    ``prepare(client, i)`` runs before each timed call, outside the timing. ``warmup``
    untimed calls per thread come first, so that opening a thread's database connection
    (what a long-running server does once) is not counted as a call's latency.
    """
    samples: list[float] = []
    lock = threading.Lock()

    def worker(client: int) -> None:
        local = []
        try:
            for i in range(-warmup * clients + client, 0, clients):
                operation(client, i)
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


class ServerProcess:
    """The production web server (``python -m orchestrator.ops.webserver``, as ``make run``
    starts it) in its own processes, with this process's environment.

    Why not uvicorn in a thread of the bench: the server would share the bench's GIL with
    the client threads, and the numbers would describe that contention, not the server.
    """

    def __init__(self, port: int, workers: int = 2) -> None:
        self.port, self.workers = port, workers
        self.url = f"http://127.0.0.1:{port}"
        self.process = None

    def __enter__(self) -> ServerProcess:
        import subprocess
        import sys
        import urllib.request

        self.process = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.ops.webserver", "--port", str(self.port),
             "--workers", str(self.workers)])
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2):
                    return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError("bench server did not start") from None
                time.sleep(0.2)

    def __exit__(self, *exc) -> None:
        import subprocess

        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_model() -> str:
    """The CPU's model name as the kernel reports it (/proc/cpuinfo), else the platform's."""
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def python_ms() -> float:
    """Milliseconds plain Python takes for sum(range(10**6)), the best of 5 rounds of 5."""
    import timeit

    return min(timeit.repeat("sum(range(10**6))", number=5, repeat=5)) / 5 * 1000


def machine_line() -> str:
    """How fast this machine runs plain Python, so numbers from two machines compare:
    the same code measured 2-3x apart on two machines of the same kind here."""
    return (f"machine: {cpu_model()}, {os.cpu_count()} cores; python sum(range(10**6)) = "
            f"{python_ms():.1f} ms")


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
    print(machine_line())


class RawHttpClient:
    """A keep-alive HTTP/1.1 client on a bare socket, for load generation.

    Why not httpx: on these 2-core machines the load generator shares the CPU with the
    server it measures, and httpx spends ~0.4 ms of Python per request, which is more than
    a heartbeat costs the server. This one formats the request once and parses only the
    status line and Content-Length (~30 µs), so the numbers describe the server.
    """

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.sock = self._connect()
        self.extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.buffer = b""
        self.closing = False

    def _connect(self) -> Any:
        import socket

        sock = socket.create_connection((self.host, self.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.closing:
            # The last answer said "Connection: close" (the server ends a keep-alive
            # connection after its 100th tool call): a new connection, as any client makes.
            self.sock.close()
            self.sock, self.buffer, self.closing = self._connect(), b"", False
        head = (f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self.extra}"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
        self.sock.sendall(head.encode() + body)
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        header, _, rest = self.buffer.partition(b"\r\n\r\n")
        lines = header.split(b"\r\n")
        status = int(lines[0].split()[1])
        length = next(int(line.split(b":", 1)[1]) for line in lines[1:]
                      if line.lower().startswith(b"content-length:"))
        self.closing = any(line.lower().replace(b" ", b"") == b"connection:close"
                           for line in lines[1:])
        while len(rest) < length:
            self.buffer = rest
            self._fill()
            rest = self.buffer
        self.buffer = rest[length:]
        return status, rest[:length]

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


class ToolClients:
    """Tool calls over HTTP with one keep-alive ``RawHttpClient`` per bench thread."""

    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token
        self.local = threading.local()

    def post(self, tool: str, body: bytes) -> bytes:
        """POST an already encoded body; the answer, or RuntimeError unless 200."""
        client = getattr(self.local, "client", None)
        if client is None:
            client = self.local.client = RawHttpClient(
                self.base, {"Authorization": f"Bearer {self.token}"})
        status, answer = client.post(f"/api/v1/tools/{tool}/", body)
        if status != 200:
            raise RuntimeError(f"{tool}: {status} {answer[:200]!r}")
        return answer

    def call(self, tool: str, body: dict) -> dict:
        return json.loads(self.post(tool, json.dumps(body).encode()))
