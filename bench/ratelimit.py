"""``python -m bench.ratelimit``: what the per-token rate limit adds to one call.

    make bench BENCH_ARGS=...   # or, on embedded servers:
    .venv/bin/python -m orchestrator.ops.launcher --temp -- .venv/bin/python -m bench.ratelimit

Times ``orchestrator.web.ratelimit.retry_after`` (one EVALSHA of limits' sliding window
script on the shared Redis pool) per call, wall and CPU of this process, beside a bare
Redis PING on the same pool (the round trip alone) and the limiter turned off; then the
same with Redis unreachable (the breaker open: fail open).
"""

from __future__ import annotations

import os
import statistics
import time

from bench.common import machine_line, setup_django

CALLS = 5000


def timed(function, calls: int = CALLS) -> tuple[float, float]:
    """(median wall µs per call over 5 blocks, CPU µs per call)."""
    walls, cpu_start = [], time.process_time()
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(calls // 5):
            function()
        walls.append((time.perf_counter() - started) / (calls // 5) * 1e6)
    return statistics.median(walls), (time.process_time() - cpu_start) / calls * 1e6


def main() -> None:
    os.environ["API_RATE_LIMIT"] = "100000000/minute"  # never refuses: the cost of a pass
    setup_django()
    from django.conf import settings

    from foundation.backends import redis_store
    from orchestrator.web import ratelimit

    rows = []
    rows.append(("redis PING (one round trip)",
                 *timed(lambda: redis_store.run(lambda r: r.ping()))))
    ratelimit.retry_after(1)  # loads the script (EVAL once, EVALSHA after)
    rows.append(("limiter on", *timed(lambda: ratelimit.retry_after(1))))
    settings.API_RATE_LIMIT = "off"
    rows.append(("limiter off", *timed(lambda: ratelimit.retry_after(1))))
    settings.API_RATE_LIMIT = "100000000/minute"
    settings.REDIS_URL = "redis://127.0.0.1:9/0"  # nothing listens: fail open
    ratelimit.retry_after(1)  # trips the breaker
    rows.append(("limiter on, Redis down", *timed(lambda: ratelimit.retry_after(1))))
    print(machine_line())
    print(f"{'what':32} {'wall µs/call':>13} {'CPU µs/call':>12}")
    for name, wall, cpu in rows:
        print(f"{name:32} {wall:13.1f} {cpu:12.1f}")


if __name__ == "__main__":
    main()
