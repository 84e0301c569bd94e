"""Calls tools through the official MCP client over Streamable HTTP (test helper)."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def _with_session(url: str, token: str | None, action):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        return await action(session)


def call_tool(url: str, token: str, name: str, arguments: dict[str, Any]):
    async def action(session):
        return await session.call_tool(name, arguments)

    return anyio.run(_with_session, url, token, action)


def list_tools(url: str, token: str):
    async def action(session):
        return await session.list_tools()

    return anyio.run(_with_session, url, token, action)
