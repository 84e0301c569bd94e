"""MCP transport with the official SDK (``mcp`` 2.x low-level ``Server``).

Why the official SDK: it implements the protocol (initialize, version negotiation,
Streamable HTTP, stdio) so we only map the registry onto ``tools/list`` and
``tools/call``. ``django-mcp-server`` pins ``mcp<2`` and wraps Django models rather than
our registry, so it would add a second way of declaring tools.

Streamable HTTP runs stateless with JSON responses: every POST is self-contained, which
suits several uvicorn workers behind one port without sticky sessions.

Two endpoints: ``/mcp`` lists and calls every registry tool (other clients and the
contract rely on it); ``/mcp/agent`` lists and calls only the agent catalogue
(``orchestrator.web.agent_tools``): the tools a model should call itself, under short
names and descriptions. Both take the same bearer token and project header, and answer a
call the same way.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import json
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette

from foundation.core.errors import OrchestratorError
from foundation.core.models import TokenScope
from foundation.core.projects import CLIENT_PROJECT_HEADER
from foundation.core.tools import registry
from foundation.core.tools.schema import answer_or_error
from orchestrator.web import agent_tools
from orchestrator.web.fastlane import in_fresh_connection, in_tool_thread

SERVER_NAME = "session-orchestrator"
# What clients see in initialize / server/discover: the installed package's version.
try:
    SERVER_VERSION = importlib.metadata.version("session-orchestrator")
except importlib.metadata.PackageNotFoundError:  # running from a checkout not installed
    SERVER_VERSION = "0+unknown"
PATH = "/mcp"
AGENT_PATH = "/mcp/agent"


def list_tools() -> list[types.Tool]:
    """The registry as tools/list gives it (HTTP and stdio alike).

    Every tool, present and future, advertises answer-or-error: error results carry the
    spec's error object as structuredContent, which must conform too.
    """
    return [
        types.Tool(name=t.name, description=t.description, input_schema=t.input_schema,
                   output_schema=answer_or_error(t.output_schema))
        for t in registry.tools()
    ]


def list_agent_tools() -> list[types.Tool]:
    """The agent catalogue as tools/list gives it: the registry tools it calls, renamed,
    with short descriptions and trimmed input schemas, and the same answer-or-error
    outputSchema as on /mcp."""
    return [
        types.Tool(name=t.name, description=t.description, input_schema=t.input_schema,
                   output_schema=answer_or_error(t.output_schema))
        for t in agent_tools.listed()
    ]


# How a tools/call name becomes a registry call: as it is (/mcp), or through the agent
# catalogue (/mcp/agent), which knows only its own names.
Caller = Callable[[str, Any, registry.ToolContext], dict[str, Any]]


def _call(name: str, arguments: dict[str, Any], context: registry.ToolContext,
          call: Caller | None = None) -> types.CallToolResult:
    try:
        result = (call or registry.call_tool)(name, arguments, context)
    except OrchestratorError as exc:
        body = exc.to_dict()
        return types.CallToolResult(
            content=[types.TextContent(text=f"{exc.code}: {exc.message}")],
            structured_content=body,
            is_error=True,
        )
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(result, default=str))],
        structured_content=result,
    )


async def _on_list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=await in_tool_thread(list_tools))


async def _on_list_agent_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=await in_tool_thread(list_agent_tools))


async def _on_call_tool(ctx, params: types.CallToolRequestParams, *,
                        stdio_project: str | None = None,
                        call: Caller | None = None) -> types.CallToolResult:
    # Over HTTP the ASGI router authenticated the token first (a request without a
    # principal, which it never lets through, would get the least a token has). Over stdio
    # (manage.py mcp_stdio) there is no request: a local process holding the database
    # credentials, trusted like any management command, working in the project its
    # --project names.
    context = registry.ToolContext("mcp", project=stdio_project)
    request = getattr(ctx, "request", None)
    if request is not None:
        principal = (getattr(request, "scope", None) or {}).get("orchestrator.principal")
        project = request.headers.get(CLIENT_PROJECT_HEADER) or None
        context = registry.ToolContext("mcp", scope=TokenScope.READ, projects=frozenset()) \
            if principal is None else \
            registry.ToolContext("mcp", principal.name, principal.scope, principal.projects,
                                 project)
    # Tool calls run in parallel threads, each with its own database connection, instead
    # of queueing behind one.
    return await in_tool_thread(in_fresh_connection, _call, params.name,
                                params.arguments or {}, context, call)


def build_server(stdio_project: str | None = None, *, agent: bool = False) -> Server:
    """The MCP server of every tool, or with ``agent`` of the agent catalogue only."""
    if agent:
        on_call_tool = functools.partial(_on_call_tool, stdio_project=stdio_project,
                                         call=agent_tools.call)
        return Server(SERVER_NAME, version=SERVER_VERSION, on_list_tools=_on_list_agent_tools,
                      on_call_tool=on_call_tool,
                      instructions="Session orchestrator: load, save and switch task "
                                   "context, checkpoints and rollback, the task graph, "
                                   "conflicts.")
    on_call_tool = functools.partial(_on_call_tool, stdio_project=stdio_project) \
        if stdio_project else _on_call_tool
    return Server(SERVER_NAME, version=SERVER_VERSION, on_list_tools=_on_list_tools,
                  on_call_tool=on_call_tool,
                  instructions="Session orchestration tools: contexts, checkpoints, sessions, "
                               "recovery, conflicts and the task graph.")


def _streamable_http_app(server: Server, path: str) -> Starlette:
    return server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=True,
        json_response=True,
        # The ASGI router checks Host and Origin for every path first (orchestrator.web.hosts,
        # ALLOWED_HOSTS and CSRF_TRUSTED_ORIGINS), so the SDK's own check would only repeat it.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )


def build_http_app() -> Starlette:
    """The Starlette app serving MCP at /mcp (every tool) and /mcp/agent (the agent
    catalogue); auth is checked by the ASGI router first. Its lifespan runs both
    endpoints' session managers."""
    full = _streamable_http_app(build_server(), PATH)
    agent = _streamable_http_app(build_server(agent=True), AGENT_PATH)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with full.router.lifespan_context(full), agent.router.lifespan_context(agent):
            yield

    return Starlette(routes=[*full.routes, *agent.routes], lifespan=lifespan)
