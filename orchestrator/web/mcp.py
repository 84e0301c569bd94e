"""MCP transport with the official SDK (``mcp`` 2.x low-level ``Server``).

Why the official SDK: it implements the protocol (initialize, version negotiation,
Streamable HTTP, stdio) so we only map the registry onto ``tools/list`` and
``tools/call``. ``django-mcp-server`` pins ``mcp<2`` and wraps Django models rather than
our registry, so it would add a second way of declaring tools.

Streamable HTTP runs stateless: every POST is self-contained, which suits several uvicorn
workers behind one port without sticky sessions. Answers are JSON, except for a request
asking for progress (an SSE stream: the progress, then the answer) and a 2026-07-28
``subscriptions/listen`` (its answer is the stream of task changes). Prompts, resources and
subscriptions are ``orchestrator.web.mcp_content``'s.

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
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecuritySettings,
)
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from starlette.applications import Starlette
from starlette.routing import Route

from foundation.core.errors import OrchestratorError
from foundation.core.tools import registry
from foundation.core.tools.schema import answer_or_error
from orchestrator.web import agent_tools, mcp_content
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
    context = mcp_content.with_progress(ctx, mcp_content.tool_context(ctx, stdio_project))
    # Tool calls run in parallel threads, each with its own database connection, instead
    # of queueing behind one.
    return await in_tool_thread(in_fresh_connection, _call, params.name,
                                params.arguments or {}, context, call)


def _content_handlers(stdio_project: str | None) -> dict[str, Any]:
    """Prompts, resources and task-context subscriptions (``mcp_content``), the same on
    both endpoints: they are what an agent without hooks starts from."""
    def context(ctx) -> registry.ToolContext:
        return mcp_content.tool_context(ctx, stdio_project)

    async def on_list_prompts(ctx, params) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=list(mcp_content.PROMPTS))

    async def on_get_prompt(ctx, params: types.GetPromptRequestParams
                            ) -> types.GetPromptResult:
        return await mcp_content.served(mcp_content.get_prompt, params.name,
                                        params.arguments, context(ctx))

    async def on_list_resources(ctx, params) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=await mcp_content.served(mcp_content.list_resources, context(ctx)))

    async def on_list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=list(mcp_content.TEMPLATES))

    async def on_read_resource(ctx, params: types.ReadResourceRequestParams
                               ) -> types.ReadResourceResult:
        return await mcp_content.served(mcp_content.read_resource, params.uri, context(ctx))

    # No resources/subscribe: the HTTP endpoints are stateless (no session, no standing
    # stream to send a later notification on), so handshake-era clients are told
    # resources.subscribe = false; 2026-07-28 clients subscribe with subscriptions/listen,
    # whose answer is the stream.
    return {"on_list_prompts": on_list_prompts, "on_get_prompt": on_get_prompt,
            "on_list_resources": on_list_resources,
            "on_list_resource_templates": on_list_resource_templates,
            "on_read_resource": on_read_resource,
            "on_subscriptions_listen": mcp_content.listen_handler(stdio_project)}


def build_server(stdio_project: str | None = None, *, agent: bool = False) -> Server:
    """The MCP server of every tool, or with ``agent`` of the agent catalogue only; both
    with the prompts, resources and subscriptions of ``mcp_content``."""
    content = _content_handlers(stdio_project)
    if agent:
        on_call_tool = functools.partial(_on_call_tool, stdio_project=stdio_project,
                                         call=agent_tools.call)
        return Server(SERVER_NAME, version=SERVER_VERSION, on_list_tools=_on_list_agent_tools,
                      on_call_tool=on_call_tool, **content,
                      instructions="Session orchestrator: load, save and switch task "
                                   "context, checkpoints and rollback, the task graph, "
                                   "conflicts. Prompts: resume, task_briefing; resources: "
                                   "task contexts, handoff notes.")
    on_call_tool = functools.partial(_on_call_tool, stdio_project=stdio_project) \
        if stdio_project else _on_call_tool
    return Server(SERVER_NAME, version=SERVER_VERSION, on_list_tools=_on_list_tools,
                  on_call_tool=on_call_tool, **content,
                  instructions="Session orchestration tools: contexts, checkpoints, sessions, "
                               "recovery, conflicts and the task graph. Prompts: resume, "
                               "task_briefing; resources: task contexts, handoff notes.")


# The ASGI router checks Host and Origin for every path first (orchestrator.web.hosts,
# ALLOWED_HOSTS and CSRF_TRUSTED_ORIGINS), so the SDK's own check would only repeat it.
NO_REBINDING_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def _manager(server: Server, *, json_response: bool) -> StreamableHTTPSessionManager:
    return StreamableHTTPSessionManager(app=server, json_response=json_response,
                                        stateless=True, security_settings=NO_REBINDING_CHECK)


def _asks_for_progress(body: bytes) -> bool:
    """Whether a POSTed JSON-RPC request carries params._meta.progressToken."""
    if b"progressToken" not in body:
        return False
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and \
        progress_token_from_params(message.get("params")) is not None


class _Lanes:
    """One endpoint, two ways to answer. A request asking for progress (a progressToken)
    gets its answer as an SSE stream, the progress notifications before it; every other
    request a plain JSON answer, as before (JSON mode has no room for notifications: the
    SDK drops them). A subscriptions/listen request is a stream whichever lane takes it
    (the SDK's rule)."""

    def __init__(self, server: Server) -> None:
        self.json = _manager(server, json_response=True)
        self.sse = _manager(server, json_response=False)

    @contextlib.asynccontextmanager
    async def run(self):
        async with self.json.run(), self.sse.run():
            yield

    async def __call__(self, scope, receive, send) -> None:
        if scope.get("method") != "POST":
            return await self.json.handle_request(scope, receive, send)
        # Read the body (up to the SDK's own limit, which refuses more), then hand it on.
        chunks, more, size = [], True, 0
        while more and size <= DEFAULT_MAX_REQUEST_BODY_SIZE:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
        body = b"".join(chunks)
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": more}

        lane = self.sse if not more and _asks_for_progress(body) else self.json
        await lane.handle_request(scope, replay, send)


def build_http_app() -> Starlette:
    """The Starlette app serving MCP at /mcp (every tool) and /mcp/agent (the agent
    catalogue); auth is checked by the ASGI router first. Its lifespan runs the endpoints'
    session managers and the relay of task changes to subscriptions."""
    full = _Lanes(build_server())
    agent = _Lanes(build_server(agent=True))

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with full.run(), agent.run(), mcp_content.task_events():
            yield

    return Starlette(routes=[Route(PATH, endpoint=full), Route(AGENT_PATH, endpoint=agent)],
                     lifespan=lifespan)
