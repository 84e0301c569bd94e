"""The Redis client for the spec's keys (``context:*``): JSON values, short timeouts, a
circuit breaker.

Redis is a cache: callers must survive it being down. ``RedisUnavailable`` is the only
exception this module raises; after a failure the breaker stays open for
REDIS_CIRCUIT_OPEN_SECONDS so an outage costs a few microseconds per request instead of
redis-py's default retries (~4.5 s measured here). The next sync repairs what was missed.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import redis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.retry import Retry

from foundation.core.errors import failure_reason
from foundation.observability import tracing

logger = logging.getLogger("orchestrator.redis")
T = TypeVar("T")


class RedisUnavailable(Exception):
    pass


class _Breaker:
    def __init__(self) -> None:
        self._open_until = 0.0
        self._lock = threading.Lock()

    def is_open(self) -> bool:
        return time.monotonic() < self._open_until

    def trip(self) -> None:
        with self._lock:
            self._open_until = time.monotonic() + settings.REDIS_CIRCUIT_OPEN_SECONDS

    def reset(self) -> None:
        self._open_until = 0.0


breaker = _Breaker()
_client: redis.Redis | None = None
_client_url: str | None = None
_client_lock = threading.Lock()


def client() -> redis.Redis:
    """The shared client (thread-safe connection pool), rebuilt if REDIS_URL changed."""
    global _client, _client_url
    url = settings.REDIS_URL
    if _client is None or _client_url != url:
        with _client_lock:
            if _client is None or _client_url != url:
                _client = redis.Redis.from_url(
                    url,
                    socket_connect_timeout=0.3,
                    socket_timeout=1.0,
                    retry=Retry(NoBackoff(), 0),
                    retry_on_error=[],
                    health_check_interval=30,
                    decode_responses=True,
                )
                _client_url = url
                breaker.reset()
    return _client


def run(operation: Callable[[redis.Redis], T]) -> T:
    """Run one Redis operation; raise RedisUnavailable (fast, while the breaker is open)."""
    if breaker.is_open():
        raise RedisUnavailable("circuit open after a recent Redis failure")
    try:
        with tracing.backend_span("redis", "redis"):
            return operation(client())
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        breaker.trip()
        logger.warning("redis unavailable: %s", exc)
        raise RedisUnavailable(failure_reason(exc)) from exc
    except redis.RedisError as exc:
        # Answers quote a RedisUnavailable (details.reason): its kind only, the server's
        # words (addresses, keys, scripts) stay in this log line.
        logger.warning("redis error: %s", exc)
        raise RedisUnavailable(failure_reason(exc)) from exc


def key(*parts: str) -> str:
    """A spec key under REDIS_KEY_PREFIX, e.g. key("task", "t1") -> "context:task:t1"."""
    return settings.REDIS_KEY_PREFIX + ":".join(parts)


def set_json(name: str, value: Any, ttl: int | None) -> None:
    payload = json.dumps(value, default=str)
    run(lambda r: r.set(name, payload, ex=ttl))


def get_json(name: str) -> Any | None:
    raw = run(lambda r: r.get(name))
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        logger.warning("redis key %s holds invalid JSON; treating as a miss", name)
        return None


def delete(*names: str) -> int:
    if not names:
        return 0
    return run(lambda r: r.delete(*names))


def ping() -> bool:
    """Health probe that bypasses the breaker (it is how we find out Redis is back)."""
    try:
        ok = bool(client().ping())
    except (redis.RedisError, OSError):
        return False
    if ok:
        breaker.reset()
    return ok
