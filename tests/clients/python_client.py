"""The official Python MCP client (``mcp``) at a chosen protocol revision, wire recorded.

How the SDK chooses a revision (mcp/client/session.py, client.py):

* ``ClientSession.initialize()`` always offers ``LATEST_HANDSHAKE_VERSION`` (2025-11-25);
  ``Client(mode=...)`` takes "legacy" (that initialize), "auto" (``server/discover``, else
  initialize) or a modern revision (adopted without asking) and refuses 2025 revisions.
* So 2026-07-28 is ``ClientSession.send_discover(revision)`` and ``adopt`` of its answer
  (what ``discover()`` and mode "auto" do, pinned to the revision); 2025-11-25 is
  ``initialize()``; an older 2025 revision is the same handshake through the session's
  public ``send_request`` with that offer, then ``adopt`` and ``notifications/initialized``,
  after which the session stamps that revision's header on every request.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx2
import mcp_types as types
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

from tests.clients.revisions import PROTOCOL_VERSION_META_KEY

CLIENT_INFO = types.Implementation(name="orchestrator-conformance", version="1.0.0")


class WireRecorder(httpx2.AsyncBaseTransport):
    """An httpx2 transport that records every request (see revisions.py for the shape)."""

    def __init__(self) -> None:
        self.wire: list[dict[str, Any]] = []
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        message = None
        if request.method == "POST":
            try:
                message = json.loads(await request.aread())
            except ValueError:
                message = None
        message = message if isinstance(message, dict) else {}
        params = message.get("params") or {}
        entry: dict[str, Any] = {
            "httpMethod": request.method, "rpcMethod": message.get("method"),
            "protocolHeader": request.headers.get("mcp-protocol-version"),
            "metaProtocolVersion": (params.get("_meta") or {}).get(PROTOCOL_VERSION_META_KEY),
            "offeredVersion": params.get("protocolVersion")
            if message.get("method") == "initialize" else None,
            "status": None, "result": None, "error": None,
        }
        self.wire.append(entry)
        response = await self._inner.handle_async_request(request)
        entry["status"] = response.status_code
        if not response.headers.get("content-type", "").startswith("application/json"):
            return response  # an SSE stream (not used: the server answers JSON) stays a stream
        raw = b"".join([chunk async for chunk in response.aiter_raw()])
        await response.aclose()
        if "content-encoding" not in response.headers:
            answer = json.loads(raw) if raw else {}
            answer = answer if isinstance(answer, dict) else {}
            entry["error"] = answer.get("error")
            if entry["rpcMethod"] in ("initialize", "server/discover"):
                entry["result"] = answer.get("result")
        return httpx2.Response(response.status_code, headers=response.headers, content=raw,
                               extensions=response.extensions, request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def connect(session: ClientSession, revision: str) -> None:
    """Negotiate exactly ``revision`` on a fresh session (see the module docstring)."""
    if revision in MODERN_PROTOCOL_VERSIONS:
        session.adopt(types.DiscoverResult.model_validate(await session.send_discover(revision)))
    elif revision == LATEST_HANDSHAKE_VERSION:
        await session.initialize()
    else:
        offer = types.InitializeRequest(params=types.InitializeRequestParams(
            protocol_version=revision, capabilities=types.ClientCapabilities(),
            client_info=CLIENT_INFO))
        session.adopt(await session.send_request(offer, types.InitializeResult))
        await session.send_notification(types.InitializedNotification())


@asynccontextmanager
async def _session(url: str, token: str, revision: str,
                   recorder: WireRecorder) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30,
                           transport=recorder) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write, client_info=CLIENT_INFO) as session,
    ):
        await connect(session, revision)
        yield session


@contextmanager
def open_session(url: str, token: str, revision: str
                 ) -> Iterator[tuple[BlockingPortal, ClientSession, WireRecorder]]:
    """A session at ``revision`` for synchronous test code: ``portal.call(session.x, ...)``."""
    recorder = WireRecorder()
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_session(url, token, revision, recorder)) as session,
    ):
        yield portal, session, recorder


@asynccontextmanager
async def _client(url: str, token: str, mode: str,
                  recorder: WireRecorder) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30,
                                  transport=recorder) as http:
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with Client(transport, mode=mode, client_info=CLIENT_INFO) as client:
            yield client


@contextmanager
def open_client(url: str, token: str, mode: str
                ) -> Iterator[tuple[BlockingPortal, Client, WireRecorder]]:
    """The SDK's high-level ``Client`` connecting in ``mode`` ("auto", "legacy", a revision)."""
    recorder = WireRecorder()
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_client(url, token, mode, recorder)) as client,
    ):
        yield portal, client, recorder
