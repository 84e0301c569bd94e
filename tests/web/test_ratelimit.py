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

from foundation.core.models import ApiToken
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
