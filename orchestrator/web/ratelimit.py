"""The per-token API rate limit: one budget per bearer token, shared by every door a token
uses (the REST tool lane, MCP at /mcp and /mcp/agent, DRF browsing), kept in Redis so all
web workers and stacks count together.

Why ``limits`` (its Redis storage and sliding window counter) rather than DRF throttling:
the REST tool lane and MCP never reach DRF (orchestrator.web.fastlane), so DRF's throttle
classes could limit only browsing; ``limits`` is a maintained library any door can call,
and DRF browsing calls it too (``TokenRateThrottle`` in orchestrator.web.api), so the three
share one counter. The sliding window counter keeps two integers per token (no list of
timestamps as a moving window would) and smooths the burst a fixed window allows at its
edge. Counting a call costs one Redis round trip (an EVALSHA running the library's Lua
script, on the connection pool of foundation.backends.redis_store); only a refused call
makes a second one, for its Retry-After.

A busy token's calls are counted in leases (``_Leases``): a web process charges several
calls to the token at once and admits the next ones from what it holds, for at most
LEASE_SECONDS. Under load that round trip was 10-15 % of a cheap hook call's server CPU
(a heartbeat, a claim), and the same count for every call; a lease of 50 makes it one
call in 50. What it costs in precision, bounded: the limit is never exceeded by more than
what a process holds when a window turns (calls admitted up to LEASE_SECONDS after they
were counted), and a token may be refused a little early, by the permits a process holds
unused when its calls stop (a lease is at most 1 % of the limit, and grows only while it
is used up before it expires). A token calling slowly gets leases of one call: exact, as
before; so does any limit under 200 calls per window.

Fail open: the limiter protects the server, it must never be why it fails. With Redis
down, every call is served unlimited; redis_store's circuit breaker makes that cost
microseconds per call after the first failure (REDIS_CIRCUIT_OPEN_SECONDS).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import redis
from django.conf import settings
from limits import RateLimitItem, parse
from limits.storage import RedisStorage
from limits.strategies import SlidingWindowCounterRateLimiter

from foundation.backends import redis_store
from foundation.core.errors import error_body

# Keys: <prefix>:{<limit>/token:<id>} and its previous window (limits' own layout), beside
# the spec's keys rather than among them.
KEY_PREFIX = "orchestrator-ratelimit"
OFF = frozenset({"", "0", "off", "false", "no", "none"})

_lock = threading.Lock()
_limiter: tuple[redis.Redis, SlidingWindowCounterRateLimiter] | None = None
_item: tuple[str, RateLimitItem | None] | None = None


def limit_item() -> RateLimitItem | None:
    """API_RATE_LIMIT parsed ("1200/minute", "50 per 10 seconds"), None when off."""
    global _item
    text = str(settings.API_RATE_LIMIT or "").strip()
    cached = _item
    if cached is None or cached[0] != text:
        cached = _item = (text, None if text.lower() in OFF else parse(text))
    return cached[1]


def _strategy() -> SlidingWindowCounterRateLimiter:
    """The limiter on redis_store's client (its pool, timeouts and no retries); rebuilt
    when that client is (REDIS_URL changed)."""
    global _limiter
    client = redis_store.client()
    cached = _limiter
    if cached is None or cached[0] is not client:
        with _lock:
            storage = RedisStorage("redis://", connection_pool=client.connection_pool,
                                   key_prefix=KEY_PREFIX)
            cached = _limiter = (client, SlidingWindowCounterRateLimiter(storage))
    return cached[1]


# A lease's permits are used within this many seconds of being counted, or dropped.
LEASE_SECONDS = 1.0
# The most calls one lease counts, and its share of the limit at most (1 %).
LEASE_MAX = 50
LEASE_SHARE = 100


@dataclass
class _Lease:
    """Calls already counted in Redis for one token and limit, that this process may admit
    until ``until`` (time.monotonic)."""

    until: float = 0.0
    left: int = 0
    size: int = 1  # how many calls the next lease counts


class _Leases:
    """This process's leases, one per (limit, token): ``admit`` admits a call from a lease
    or says how many calls to count next, ``add`` stores what was counted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[str, str], _Lease] = {}
        self.clock = time.monotonic

    def admit(self, key: tuple[str, str], now: float, most: int) -> int:
        """0 when the call is admitted from a lease; else the next lease's size: double
        the last one's when it was used up before it expired (a busy token), what it used
        when it expired unused (a token slowing down), 1 for a token not seen lately."""
        with self._lock:
            lease = self._held.get(key)
            if lease is None or now >= lease.until + LEASE_SECONDS:
                return 1
            if now < lease.until:
                if lease.left > 0:
                    lease.left -= 1
                    return 0
                return max(1, min(most, lease.size * 2))
            return max(1, min(most, lease.size - lease.left))

    def add(self, key: tuple[str, str], now: float, counted: int) -> None:
        """``counted`` calls were charged to the token now; one is the caller's."""
        with self._lock:
            if len(self._held) > 10_000:  # tokens gone quiet: their leases have expired
                self._held = {k: v for k, v in self._held.items() if now < v.until}
            lease = self._held.setdefault(key, _Lease())
            lease.left = (lease.left if now < lease.until else 0) + counted - 1
            lease.until = now + LEASE_SECONDS
            lease.size = counted


_leases = _Leases()


def retry_after(token_id: int | None) -> int | None:
    """Count one call against the token's budget: None when it may go ahead, else the
    whole seconds (>= 1) to wait. None too when the limit is off, for a call without a
    token row (never over HTTP), and while Redis is unreachable (fail open)."""
    item = limit_item()
    if item is None or token_id is None:
        return None
    identity = f"token:{token_id}"
    key, now = (str(item), identity), _leases.clock()
    size = _leases.admit(key, now, max(1, min(LEASE_MAX, item.amount // LEASE_SHARE)))
    if size == 0:
        return None
    try:
        limiter = _strategy()
        if redis_store.run(lambda _: limiter.hit(item, identity, cost=size)):
            _leases.add(key, now, size)
            return None
        # A lease that does not fit may leave room for this one call.
        if size > 1 and redis_store.run(lambda _: limiter.hit(item, identity)):
            _leases.add(key, now, 1)
            return None
        stats = redis_store.run(lambda _: limiter.get_window_stats(item, identity))
    except redis_store.RedisUnavailable:
        return None  # logged by redis_store; its breaker skips Redis for a moment
    return max(1, math.ceil(stats.reset_time - time.time()))


def describe(item: RateLimitItem) -> str:
    """The limit as people read it: "1200 per minute", "50 per 10 seconds"."""
    unit = item.GRANULARITY.name
    return f"{item.amount} per {unit}" if item.multiples == 1 \
        else f"{item.amount} per {item.multiples} {unit}s"


def refusal(seconds: int) -> tuple[int, dict, dict[str, str]]:
    """The 429 answer (status, spec error body, headers) for a call over the limit."""
    item = limit_item()
    limit = describe(item) if item is not None else ""
    body = error_body("E1618", f"Too many requests for this token (limit {limit}); "
                               f"retry after {seconds} s",
                      {"limit": limit, "retryAfterSeconds": seconds})
    return 429, body, {"Retry-After": str(seconds)}


# JSON-RPC's range for implementation-defined server errors.
JSONRPC_SERVER_ERROR = -32000


def mcp_refusal(seconds: int) -> tuple[int, dict, dict[str, str]]:
    """The 429 answer on /mcp and /mcp/agent: HTTP 429 with Retry-After, given before the
    MCP layer (so initialize and tools/list count too, and a refused call costs no
    JSON-RPC parsing), whose body is a JSON-RPC error with the spec's error object as its
    ``data``. Why that body: the official SDKs surface a JSON-RPC error found in a non-2xx
    answer (the Python SDK raises it with its message, "E1618: ... retry after N s"; with
    the spec's object alone it says only "Server returned an error response"), and the
    TypeScript SDK puts the body's text in its error; the id is null, as for any request
    refused before its id was read (the clients put their request's id back)."""
    status, body, headers = refusal(seconds)
    error = body["error"]
    return status, {"jsonrpc": "2.0", "id": None,
                    "error": {"code": JSONRPC_SERVER_ERROR,
                              "message": f"{error['code']}: {error['message']}",
                              "data": body}}, headers


# Attempts without a token (an enrollment code's exchange), per client address: enough for
# a team enrolling its machines, too few to guess a 192-bit code (none could anyway; the
# limit keeps a flood of them off the database).
UNAUTHENTICATED_ATTEMPTS = parse("10/minute")


def attempt_retry_after(address: str) -> int | None:
    """Count one unauthenticated attempt from ``address``: None when it may go ahead, else
    the whole seconds to wait. Fails open when Redis is unreachable, as ``retry_after``."""
    identity = f"address:{address}"
    item = UNAUTHENTICATED_ATTEMPTS
    try:
        limiter = _strategy()
        if redis_store.run(lambda _: limiter.hit(item, identity)):
            return None
        stats = redis_store.run(lambda _: limiter.get_window_stats(item, identity))
    except redis_store.RedisUnavailable:
        return None
    return max(1, math.ceil(stats.reset_time - time.time()))


def attempt_refusal(seconds: int) -> tuple[int, dict, dict[str, str]]:
    """The 429 for too many attempts without a token from one address."""
    limit = describe(UNAUTHENTICATED_ATTEMPTS)
    body = error_body("E1618", f"Too many attempts from this address (limit {limit}); "
                               f"retry after {seconds} s",
                      {"limit": limit, "retryAfterSeconds": seconds})
    return 429, body, {"Retry-After": str(seconds)}
