"""Calls tools through the official MCP client over Streamable HTTP (test helper)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import httpx2
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def _session(url: str, token: str | None, extra_headers: dict[str, str] | None = None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    headers.update(extra_headers or {})
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


async def _with_session(url: str, token: str | None, action,
                        extra_headers: dict[str, str] | None = None):
    async with _session(url, token, extra_headers) as session:
        return await action(session)


@contextmanager
def open_session(url: str, token: str) -> Iterator[tuple[BlockingPortal, ClientSession]]:
    """One initialized client session for many calls from synchronous test code:
    ``portal.call(session.call_tool, name, arguments)``."""
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_session(url, token)) as session,
    ):
        yield portal, session


def call_tool(url: str, token: str, name: str, arguments: dict[str, Any], *,
              headers: dict[str, str] | None = None):
    async def action(session):
        return await session.call_tool(name, arguments)

    return anyio.run(_with_session, url, token, action, headers)


def list_tools(url: str, token: str):
    async def action(session):
        return await session.list_tools()

    return anyio.run(_with_session, url, token, action)
