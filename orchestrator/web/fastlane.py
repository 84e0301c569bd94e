"""The REST tool endpoint: ``POST /api/v1/tools/<name>/`` straight to the registry, without
Django's request stack.

Why: a tool call needs a bearer token, a JSON body and ``call_tool``. Going through
Django's middleware, DRF's request parsing and the WSGI bridge cost ~3 ms of CPU per call
on these 2-core machines, which capped heartbeats at ~330/s. ``answer`` is the one
implementation of a REST tool call. The web server's HTTP protocol
(``orchestrator.web.tool_protocol``) calls it for the requests it answers itself, the ASGI
router (``orchestrator.asgi``) for the rest, and the DRF view (``orchestrator.web.rest``)
only describes the endpoints in the OpenAPI document and answers with it under WSGI.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

import orjson
from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections

from foundation.core.auth import TokenPrincipal, authenticate_header, metrics_only
from foundation.core.errors import OrchestratorError, error_body
from foundation.core.projects import CLIENT_PROJECT_HEADER
from foundation.core.tools import ToolContext, registry
from foundation.observability import tracing
from orchestrator.web import ratelimit
from orchestrator.web.tool_threads import ToolThreads

TOOL_PATH = re.compile(r"^/api/v1/tools/([A-Za-z0-9_]{1,100})/?$")
# Django's own default for a request body read into memory (DATA_UPLOAD_MAX_MEMORY_SIZE).
MAX_BODY_BYTES = 2_621_440
# The header naming the project a call is for, as it arrives (lower case, bytes).
CLIENT_PROJECT = CLIENT_PROJECT_HEADER.lower().encode()
AUTH_HEADERS = {"WWW-Authenticate": 'Bearer realm="orchestrator"'}

Answer = tuple[int, dict[str, Any], dict[str, str]]
T = TypeVar("T")

# The threads that run tool calls (REST and MCP) and token checks, each keeping its own
# persistent database connection. A small fixed pool rather than asgiref's
# sync_to_async: that adds a context copy and future chaining per call, and its default
# executor lets more threads fight over the GIL. Measured on 2 cores, 8 clients,
# 2 workers: heartbeats 1,600 -> 1,750/s. TOOL_THREADS is per web worker process.
# Eight, not four: under agent load a hook call spends most of its time waiting on
# Postgres, and with four threads calls queued behind those waits (bench.agents, 1,000
# agents: hook-call p50 1.6 s with 4, 10 ms with 8, 25 ms with 12 as the GIL grows busier).
TOOL_THREADS = ToolThreads(settings.TOOL_THREADS, "tool")


async def in_tool_thread(function: Callable[..., T], *args: Any) -> T:
    """Run blocking ``function(*args)`` (database, Redis, files) off the event loop."""
    if tracing.enabled:
        # An executor does not carry context variables into its threads; the current span
        # (an incoming traceparent, the MCP request's span) must reach the tool call.
        args = (function, *args)
        function = contextvars.copy_context().run
    return await asyncio.get_running_loop().run_in_executor(TOOL_THREADS, function, *args)


def tool_name(scope: dict[str, Any]) -> str | None:
    """The tool a request is for, when it is a tool call this lane serves."""
    if scope.get("type") != "http" or scope.get("method") != "POST":
        return None
    match = TOOL_PATH.match(scope.get("path", ""))
    return match.group(1) if match else None


def authenticate(authorization: str | None) -> tuple[TokenPrincipal | None, Answer | None]:
    """(principal, None), or (None, the 401 / 403 / 503 answer): the REST tool lane's
    and the MCP endpoints' door."""
    try:
        principal = authenticate_header(authorization)
    except (OperationalError, InterfaceError):
        return None, (503, error_body("E1654", "PostgreSQL is unreachable"), {})
    if principal is None:
        message = ("Authentication credentials were not provided." if not authorization
                   else "Invalid or revoked bearer token")
        return None, (401, error_body("E1609", message), AUTH_HEADERS)
    refused = metrics_only(principal)
    if refused is not None:
        return None, (refused.http_status, refused.to_dict(), {})
    return principal, None


def admit(authorization: str | None, *, mcp: bool = False
          ) -> tuple[TokenPrincipal | None, Answer | None]:
    """``authenticate``, then count the call against the token's rate limit: (principal,
    None), or (None, the 401 / 503 / 429 answer; ``mcp``: the 429 as MCP gives it). The
    REST tool lane and MCP admit every request here; DRF browsing counts against the same
    budget (web.api.TokenRateThrottle)."""
    principal, refusal = authenticate(authorization)
    if refusal is not None:
        return None, refusal
    wait = ratelimit.retry_after(principal.token_id)
    if wait is not None:
        return None, ratelimit.mcp_refusal(wait) if mcp else ratelimit.refusal(wait)
    return principal, None


def answer(name: str, authorization: str | None, body: bytes | None,
           project: str | None = None) -> Answer:
    """One REST tool call: (HTTP status, JSON body, extra headers). ``project``: the
    X-Orchestrator-Project header (``ToolContext.project``).

    The one implementation of ``POST /api/v1/tools/<name>/``: this lane serves it in
    production, the DRF view (orchestrator.web.rest) answers with it under WSGI, and the
    suite's tool client calls it directly."""
    principal, refusal = admit(authorization)
    if refusal is not None:
        return refusal
    if body is None:
        return 413, error_body("E1612", f"Request body over {MAX_BODY_BYTES} bytes"), {}
    try:
        # No body is no arguments; blanks alone are not JSON (a 400 like any malformed body).
        arguments = json.loads(body) if body else {}
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
        return 400, error_body("E1612", f"Malformed JSON: {exc}"), {}
    try:
        result = registry.call_tool(name, arguments,
                                    ToolContext("rest", principal.name, principal.scope,
                                                principal.projects, project or None))
    except OrchestratorError as exc:
        return exc.http_status, exc.to_dict(), {}
    # 202 Accepted: a save held while Postgres is unreachable (contexts/services/pending.py)
    # is kept and applied later, not done yet.
    return (202 if result.get("pending") is True else 200), result, {}


def in_fresh_connection(function: Callable[..., T], *args: Any) -> T:
    """Run ``function`` in a tool thread with a usable database connection, and leave it
    usable for the thread's next call (a connection the call broke is dropped)."""
    close_old_connections()
    try:
        return function(*args)
    finally:
        close_old_connections()


def check_token(authorization: str | None) -> tuple[TokenPrincipal | None, Answer | None]:
    """``admit`` in a tool thread (the MCP endpoint's check, before the MCP layer: a call
    over the limit is an HTTP 429 with Retry-After, as on REST)."""
    return in_fresh_connection(functools.partial(admit, mcp=True), authorization)


def handle(name: str, authorization: str | None, body: bytes | None,
           project: str | None = None) -> Answer:
    """``answer`` in a tool thread."""
    return in_fresh_connection(answer, name, authorization, body, project)


# orjson writes what json.dumps(payload, default=str) wrote, as the same JSON values:
# datetimes and dataclasses are handed to ``default`` (str(), as before) rather than
# orjson's own forms, keys that are not strings become strings as json's do. What orjson
# refuses (an integer past 64 bits, say) takes json's way. Why: encoding was ~10 % of a
# web worker's GIL samples under load; a claim_files answer took 4.6 us with json, 0.55 us
# with orjson (in-process, 100,000 answers).
_ORJSON_OPTIONS = (orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
                   | orjson.OPT_NON_STR_KEYS)


def encode(payload: dict[str, Any]) -> bytes:
    """A JSON answer as it goes on the wire (timestamps, decimals, UUIDs as strings)."""
    try:
        return orjson.dumps(payload, default=str, option=_ORJSON_OPTIONS)
    except TypeError:
        return json.dumps(payload, default=str).encode()


async def read_body(receive) -> bytes | None:
    """The whole request body, or None when it exceeds MAX_BODY_BYTES."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def json_answer(payload: dict[str, Any], headers: dict[str, str]
                ) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """(the headers, the body) of a JSON answer as they go on the wire."""
    body = encode(payload)
    raw_headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(body)).encode())]
    raw_headers += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return raw_headers, body


async def send_json(send, status: int, payload: dict[str, Any],
                    headers: dict[str, str]) -> None:
    raw_headers, body = json_answer(payload, headers)
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})
