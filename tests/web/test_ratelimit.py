"""The per-token rate limit (orchestrator.web.ratelimit) against the real server: one
budget per token over the REST tool lane, MCP and browsing; 429 E1618 with Retry-After
past it; other tokens untouched; Redis down serves every call (fail open)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from foundation.backends import redis_store
from foundation.core.models import ApiToken
from orchestrator.web import ratelimit
from tests.conftest import free_port
from tests.mcp_client import call_tool

ROOT = Path(__file__).resolve().parents[2]
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "rate-limit-test", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}


def rest(url: str, token: str, tool: str = "list_projects", body: dict | None = None):
    return httpx.post(f"{url}/api/v1/tools/{tool}/", json=body or {}, timeout=30,
                      headers={"Authorization": f"Bearer {token}"})


def mcp(url: str, token: str, path: str = "/mcp"):
    return httpx.post(f"{url}{path}", json=INITIALIZE, timeout=30,
                      headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})


def browse(url: str, token: str):
    return httpx.get(f"{url}/api/v1/tasks/", timeout=30,
                     headers={"Authorization": f"Bearer {token}"})


def assert_rate_limited(response: httpx.Response) -> int:
    """429, Retry-After and the spec's error object (over MCP, as the ``data`` of a
    JSON-RPC error whose message starts with the code)."""
    assert response.status_code == 429, (response.status_code, response.text)
    wait = int(response.headers["Retry-After"])
    assert 1 <= wait <= 60
    body = response.json()
    if "jsonrpc" in body:
        assert body["id"] is None and body["error"]["code"] == -32000
        assert body["error"]["message"].startswith("E1618: Too many requests")
        body = body["error"]["data"]
    assert body["success"] is False and body["timestamp"]
    assert body["error"]["code"] == "E1618"
    assert body["error"]["details"] == {"limit": "6 per minute", "retryAfterSeconds": wait}
    assert f"retry after {wait} s" in body["error"]["message"]
    return wait


def test_one_budget_per_token_over_rest_mcp_and_browsing(live_api, settings):
    settings.API_RATE_LIMIT = "6/minute"
    url, token = live_api
    # Six calls through the three doors spend the one budget...
    assert rest(url, token).status_code == 200
    assert rest(url, token, "list_projects", {}).status_code == 200
    assert mcp(url, token).status_code == 200
    assert mcp(url, token, "/mcp/agent").status_code == 200
    assert browse(url, token).status_code == 200
    assert rest(url, token).status_code == 200
    # ... and each door then refuses the token, before any work.
    assert_rate_limited(rest(url, token))
    assert_rate_limited(rest(url, token, "save_context_snapshot",
                              {"taskId": "nope", "updates": {}}))
    assert_rate_limited(mcp(url, token))
    assert_rate_limited(mcp(url, token, "/mcp/agent"))
    assert_rate_limited(browse(url, token))
    # Another token has its own budget.
    _, other = ApiToken.issue(f"other-{time.monotonic_ns()}")
    assert rest(url, other).status_code == 200
    assert mcp(url, other).status_code == 200
    assert browse(url, other).status_code == 200


def test_the_official_mcp_client_gets_an_error_not_a_hang(live_api, settings):
    settings.API_RATE_LIMIT = "6/minute"
    url, token = live_api
    for _ in range(6):
        assert rest(url, token).status_code == 200
    started = time.monotonic()
    with pytest.raises(ExceptionGroup) as refused:
        call_tool(url, token, "list_projects", {})
    assert time.monotonic() - started < 10
    (error,) = refused.value.exceptions[0].exceptions
    # The SDK raises the JSON-RPC error of the 429's body: the code and the wait reach
    # the caller (and through Claude Code, the model).
    assert isinstance(error, MCPError) and error.error.code == -32000
    assert error.message.startswith("E1618: Too many requests for this token (limit 6 per "
                                 "minute); retry after"), error


def test_a_refused_call_writes_nothing(live_api, settings):
    settings.API_RATE_LIMIT = "6/minute"
    url, token = live_api
    for _ in range(6):
        rest(url, token)
    assert_rate_limited(rest(url, token, "create_task", {"taskId": "limited", "name": "x"}))
    settings.API_RATE_LIMIT = "off"
    answer = rest(url, token, "get_unified_context", {"taskId": "limited"})
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "E1610"


def test_off_turns_the_limit_off(live_api, settings):
    settings.API_RATE_LIMIT = "6/minute"
    url, token = live_api
    for _ in range(6):
        rest(url, token)
    assert_rate_limited(rest(url, token))
    settings.API_RATE_LIMIT = "off"
    assert all(rest(url, token).status_code == 200 for _ in range(20))


def test_with_redis_down_every_call_is_served_quickly(live_api, settings):
    settings.API_RATE_LIMIT = "6/minute"
    url, token = live_api
    for _ in range(6):
        rest(url, token)
    assert_rate_limited(rest(url, token))
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    started = time.monotonic()
    statuses = [rest(url, token).status_code for _ in range(12)]
    statuses += [mcp(url, token).status_code, browse(url, token).status_code]
    assert statuses == [200] * 14
    assert time.monotonic() - started < 10


def test_a_bad_limit_stops_start_up_naming_the_setting():
    env = {**os.environ, "API_RATE_LIMIT": "lots", "DJANGO_SETTINGS_MODULE":
           "orchestrator.settings"}
    done = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == \
        "E1690: API_RATE_LIMIT: not a rate like '1200/minute', got 'lots'"


def test_the_default_is_1200_a_minute_per_token():
    env = {k: v for k, v in os.environ.items() if k != "API_RATE_LIMIT"}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import settings;"
         " from orchestrator.web.ratelimit import describe, limit_item;"
         " print(describe(limit_item()))"],
        cwd=ROOT, env={**env, "DJANGO_SETTINGS_MODULE": "orchestrator.settings"},
        capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "1200 per minute", done.stderr


def counted_calls(token_id: int) -> int:
    """How many calls Redis has counted against the token (limits' own window stats)."""
    item = ratelimit.limit_item()
    stats = redis_store.run(lambda _: ratelimit._strategy().get_window_stats(
        item, f"token:{token_id}"))
    return item.amount - stats.remaining


class Clock:
    """time.monotonic for the leases, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(ratelimit._leases, "clock", fake)
    return fake


def test_a_busy_token_is_counted_in_leases_never_past_its_limit(settings, clock):
    settings.API_RATE_LIMIT = "20000/minute"  # leases of up to 50 calls (1 % is 200)
    token = 900_001
    assert all(ratelimit.retry_after(token) is None for _ in range(1000))
    # Leases of 1, 2, 4, ... 32, then 50 (26 of them for 1,000 calls, not 1,000 counts):
    # Redis has counted the calls of the lease in hand too, one lease at most.
    counted = counted_calls(token)
    assert 1000 < counted < 1000 + ratelimit.LEASE_MAX
    # What a lease holds is never more than the limit has left: 300 a minute (leases of
    # 3) admits exactly 300 calls in a row, then refuses with the wait.
    settings.API_RATE_LIMIT = "300/minute"
    waits = [ratelimit.retry_after(token + 1) for _ in range(320)]
    assert waits[:300] == [None] * 300
    assert all(isinstance(wait, int) and 1 <= wait <= 60 for wait in waits[300:])
    assert counted_calls(token + 1) == 300


def test_a_slow_token_is_counted_call_by_call(settings, clock):
    settings.API_RATE_LIMIT = "20000/minute"
    token = 900_003
    for _ in range(200):  # a busy second: leases grow
        assert ratelimit.retry_after(token) is None
    busy = counted_calls(token)
    # Then a call every three seconds: the lease left over expires unused, and each call
    # is counted alone (no permits charged for calls that never come).
    for _ in range(10):
        clock.now += 3
        assert ratelimit.retry_after(token) is None
    assert counted_calls(token) == busy + 10


def test_a_small_limit_is_counted_exactly(settings, clock):
    settings.API_RATE_LIMIT = "150/minute"  # under 200 a window: no lease past one call
    token = 900_004
    for admitted in range(1, 151):  # Redis has counted each call as it came, no more
        assert ratelimit.retry_after(token) is None
        assert counted_calls(token) == admitted
    assert ratelimit.retry_after(token) is not None
