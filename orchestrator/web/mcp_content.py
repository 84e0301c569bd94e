"""What MCP offers besides tools: prompts, resources, subscriptions to task contexts and
progress of long tool calls.

Agents without hooks (Aider, Roo Code, any MCP client) have only the MCP server: no
session start injects a resume prompt or a task's context, no hook saves for them. So the
server offers, in the MCP specification's own terms:

- prompts: ``resume`` (the resume prompt of the latest crashed, abandoned or paused
  session of a task or agent: ``check_recovery``'s, the one the session start injects)
  and ``task_briefing`` (``get_context_bundle``'s markdown of a task);
- resources: a task's context (``orchestrator://tasks/{taskId}/context``, what
  ``get_unified_context`` answers) and a project's handoff note
  (``orchestrator://projects/{projectId}/handoff``); ``resources/list`` names the
  caller's unfinished tasks, most recently changed first, and the handoff notes;
- ``subscriptions/listen`` on task contexts: a save, rollback or switch of the task, in
  whatever process, reaches the stream as ``notifications/resources/updated``
  (``contexts/services/events.py`` broadcasts task changes on Redis, ``Relay`` hands them
  to the SDK's subscription bus in each web process);
- progress notifications of tools that report it (``ToolContext.progress``) when the
  request carries a progressToken.

Every read goes through the tool registry or its access rules with the caller's
ToolContext: a token limited to projects reaches here exactly what its tool calls reach,
and another project's task answers as a missing one (E1610).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar, cast
from urllib.parse import quote, unquote

import anyio
import mcp_types as types
import redis.asyncio
from django.conf import settings
from django.db import InterfaceError, OperationalError
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params

from contexts.services import events, tasks
from foundation.backends.files import check_safe_id
from foundation.core.auth import TOKEN_CACHE_SECONDS, authenticate_header
from foundation.core.errors import OrchestratorError, task_not_found
from foundation.core.models import TokenScope
from foundation.core.projects import CLIENT_PROJECT_HEADER, require_project
from foundation.core.tools import access, registry
from orchestrator.web.fastlane import in_fresh_connection, in_tool_thread
from sessions.services import handoffs, recovery

logger = logging.getLogger("orchestrator.mcp")
T = TypeVar("T")

# -- who is calling --------------------------------------------------------------------------


def tool_context(ctx: Any, stdio_project: str | None = None) -> registry.ToolContext:
    """The ToolContext of an MCP request. Over HTTP the ASGI router authenticated the token
    first (a request without a principal, which it never lets through, would get the least
    a token has). Over stdio (manage.py mcp_stdio) there is no request: a local process
    holding the database credentials, trusted like any management command, working in the
    project its --project names."""
    request = getattr(ctx, "request", None)
    if request is None:
        return registry.ToolContext("mcp", project=stdio_project)
    principal = (getattr(request, "scope", None) or {}).get("orchestrator.principal")
    if principal is None:
        return registry.ToolContext("mcp", scope=TokenScope.READ, projects=frozenset())
    return registry.ToolContext("mcp", principal.name, principal.scope, principal.projects,
                                request.headers.get(CLIENT_PROJECT_HEADER) or None)


def mcp_error(exc: OrchestratorError) -> MCPError:
    """An E16xx error as the MCP error a prompt or resource request answers: the code and
    message in the message (what clients show), the error object as data. The caller's
    mistakes (4xx) are invalid params, the server's faults internal errors."""
    code = types.INVALID_PARAMS if exc.http_status < 500 else types.INTERNAL_ERROR
    return MCPError(code, f"{exc.code}: {exc.message}", exc.to_dict())


async def served(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` in a tool thread with its own database connection; its
    OrchestratorError as the MCP error, any other fault as E1699 without its internals."""
    try:
        return await in_tool_thread(in_fresh_connection, function, *args)
    except OrchestratorError as exc:
        raise mcp_error(exc) from None
    except Exception:
        logger.exception("MCP %s failed", getattr(function, "__name__", "request"))
        raise mcp_error(OrchestratorError("E1699", "Unexpected server fault")) from None


def invalid(message: str, **details: Any) -> OrchestratorError:
    return OrchestratorError("E1612", message, details or None)


# -- access: the registry's rules --------------------------------------------------------------

# A prompt or resource naming a task or project may be read exactly when get_unified_context
# naming it could: the access rules of that tool (the client's project header, the token's
# projects, another project's task answering as a missing one).
READ_TOOL = "get_unified_context"


def reachable_task(task_id: str, context: registry.ToolContext) -> str:
    """``task_id`` when the caller may read it; E1612 malformed, E1610 missing or another
    project's, E1608 a project header the token may not use."""
    check_safe_id(task_id)
    access.check_access(registry.get_tool(READ_TOOL), {"taskId": task_id}, context)
    if tasks.project_of_task(task_id) is None:
        raise task_not_found(task_id)
    return task_id


def reachable_project(project_id: str, context: registry.ToolContext) -> str:
    """``project_id`` when the caller may read it; E1612 malformed, E1608 a project the
    token may not reach, E1605 missing."""
    access.check_access(registry.get_tool(READ_TOOL), {"projectId": project_id}, context)
    return require_project(project_id)


# -- prompts ---------------------------------------------------------------------------------

PROMPTS = (
    types.Prompt(
        name="resume", title="Resume interrupted work",
        description="The resume prompt of the latest crashed, abandoned or paused session of a "
                    "task or an agent in your projects: what it worked on, its unsaved "
                    "changes, the next step. Without arguments: the latest of all.",
        arguments=[types.PromptArgument(name="taskId", description="The task",
                                        required=False),
                   types.PromptArgument(name="agentId",
                                        description="The agent that ran the session",
                                        required=False)]),
    types.Prompt(
        name="task_briefing", title="Task briefing",
        description="A task's context to start work on it, as markdown: status, current work "
                    "and next step, blockers, key files, decisions, related tasks, open "
                    "conflicts, the project's rules.",
        arguments=[types.PromptArgument(name="taskId", description="The task", required=True),
                   types.PromptArgument(name="budgetTokens",
                                        description="Token budget (default 2000)",
                                        required=False)]),
)
PROMPT_ARGUMENTS = {p.name: {a.name for a in p.arguments or ()} for p in PROMPTS}


def _arguments(name: str, arguments: dict[str, str] | None) -> dict[str, str]:
    if name not in PROMPT_ARGUMENTS:
        raise invalid(f"No prompt named {name!r} (prompts: {', '.join(PROMPT_ARGUMENTS)})",
                      field="name")
    arguments = dict(arguments or {})
    unknown = sorted(set(arguments) - PROMPT_ARGUMENTS[name])
    if unknown:
        raise invalid(f"Prompt {name} takes no argument {unknown[0]!r} (arguments: "
                      f"{', '.join(sorted(PROMPT_ARGUMENTS[name]))})", field=unknown[0])
    return {key: value for key, value in arguments.items() if value != ""}


def _message(text: str) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=types.TextContent(text=text))


def get_prompt(name: str, arguments: dict[str, str] | None,
               context: registry.ToolContext) -> types.GetPromptResult:
    arguments = _arguments(name, arguments)
    if name == "resume":
        return _resume(arguments.get("taskId"), arguments.get("agentId"), context)
    return _briefing(arguments, context)


def _resume(task_id: str | None, agent_id: str | None,
            context: registry.ToolContext) -> types.GetPromptResult:
    if task_id is not None:
        reachable_task(task_id, context)
    if agent_id is not None and len(agent_id) > 255:
        raise invalid("agentId is longer than 255 characters", field="agentId")
    # check_recovery through the registry: the caller's projects, its scope (it runs the
    # crash sweep, so a read token gets E1608), traced and counted as the hooks' call is.
    report = registry.call_tool("check_recovery", {}, context)
    entry = recovery.latest_to_resume(report, task_id=task_id, agent_id=agent_id)
    whose = " and ".join(part for part in (task_id and f"task {task_id}",
                                           agent_id and f"agent {agent_id}") if part) \
        or "your projects"
    if entry is None:
        return types.GetPromptResult(
            description=f"Nothing to resume for {whose}",
            messages=[_message(f"No crashed, abandoned or paused session of {whose} needs "
                               "recovery.")])
    return types.GetPromptResult(
        description=f"Resume session {entry['sessionId']} ({entry['recoveryType']}) of "
                    f"task {entry.get('taskId') or '(none)'}",
        messages=[_message(entry["resumePrompt"])])


def _briefing(arguments: dict[str, str], context: registry.ToolContext
              ) -> types.GetPromptResult:
    if "taskId" not in arguments:
        raise invalid("Prompt task_briefing needs a taskId", field="taskId")
    call: dict[str, Any] = {"taskId": arguments["taskId"]}
    if "budgetTokens" in arguments:
        try:
            call["budgetTokens"] = int(arguments["budgetTokens"])
        except ValueError:
            raise invalid("budgetTokens must be a whole number", field="budgetTokens") \
                from None
    bundle = registry.call_tool("get_context_bundle", call, context)
    return types.GetPromptResult(
        description=f"Briefing on task {arguments['taskId']} (~{bundle['estimatedTokens']} "
                    "tokens)",
        messages=[_message(bundle["text"])])


# -- resources -------------------------------------------------------------------------------

SCHEME = "orchestrator"
TASK_TEMPLATE = f"{SCHEME}://tasks/{{taskId}}/context"
HANDOFF_TEMPLATE = f"{SCHEME}://projects/{{projectId}}/handoff"
_TASK_URI = re.compile(rf"^{SCHEME}://tasks/([^/?#]+)/context$")
_HANDOFF_URI = re.compile(rf"^{SCHEME}://projects/([^/?#]+)/handoff$")
JSON = "application/json"
# resources/list names at most this many tasks (the caller's unfinished ones, most recently
# changed first); any other task is read through the template.
LISTED_TASKS = 50
# A subscription stream watches at most this many task contexts, and a token holds at most
# this many streams open in one web process (each holds a connection; the process serves
# 1024 in all): one client cannot take every stream of the server.
SUBSCRIBED_URIS = 100
STREAMS_PER_TOKEN = 20
# An open stream's token is checked again this often (as often as a REST call's cached
# token is): a revoked token's stream ends within about twice this.
TOKEN_RECHECK_SECONDS = TOKEN_CACHE_SECONDS

TEMPLATES = (
    types.ResourceTemplate(
        uri_template=TASK_TEMPLATE, name="task-context", title="Task context",
        description="A task's whole context as JSON (get_unified_context): status, current "
                    "work, key files, decisions, relationships, conflicts, global context. "
                    "Subscribe to it (subscriptions/listen) to hear of every save.",
        mime_type=JSON),
    types.ResourceTemplate(
        uri_template=HANDOFF_TEMPLATE, name="handoff-note", title="Handoff note",
        description="The note the last session of a project left for the next one "
                    "(summary, open items), as JSON; null when none was left.",
        mime_type=JSON),
)


def task_uri(task_id: str) -> str:
    return TASK_TEMPLATE.replace("{taskId}", quote(task_id, safe=""))


def handoff_uri(project_id: str) -> str:
    return HANDOFF_TEMPLATE.replace("{projectId}", quote(project_id, safe=""))


def parse_uri(uri: str) -> tuple[str, str]:
    """("task", taskId) or ("handoff", projectId); E1612 for any other URI."""
    for kind, pattern in (("task", _TASK_URI), ("handoff", _HANDOFF_URI)):
        match = pattern.match(uri)
        if match:
            return kind, unquote(match.group(1))
    raise invalid(f"Unknown resource URI {uri[:200]!r}: resources are {TASK_TEMPLATE} and "
                  f"{HANDOFF_TEMPLATE}", field="uri")


def list_resources(context: registry.ToolContext) -> list[types.Resource]:
    if context.project is not None:
        access.check_client_project(context)
    projects = context.visible_projects()
    listed = [types.Resource(
        uri=task_uri(task["taskId"]), name=task["taskId"], title=task["name"],
        description=f"{task['status']} task of project {task['projectId']}, changed "
                    f"{task['updatedAt']}",
        mime_type=JSON) for task in tasks.active_tasks(projects, LISTED_TASKS)]
    for project_id in projects or [context.default_project()]:
        listed.append(types.Resource(
            uri=handoff_uri(project_id), name=f"handoff-{project_id}",
            title=f"Handoff note of {project_id}",
            description="The last session's note for the next one", mime_type=JSON))
    return listed


def read_resource(uri: str, context: registry.ToolContext) -> types.ReadResourceResult:
    kind, key = parse_uri(uri)
    if kind == "task":
        reachable_task(key, context)
        body: Any = registry.call_tool(READ_TOOL, {"taskId": key}, context)
    else:
        reachable_project(key, context)
        body = {"projectId": key,
                "handoff": handoffs.handoff_data(handoffs.active_handoff(key))}
    return types.ReadResourceResult(contents=[types.TextResourceContents(
        uri=uri, mime_type=JSON, text=json.dumps(body, default=str))])


# -- subscriptions -------------------------------------------------------------------------------

# One bus and one listen handler per process, shared by both endpoints: the relay feeds the
# bus, each open subscriptions/listen stream takes what its filter names.
BUS = InMemorySubscriptionBus()
LISTEN = ListenHandler(BUS)
RELAY_RETRY_SECONDS = 1.0
# How long a new stream waits for the relay to subscribe before its ack, and how often an
# idle relay looks whether its last stream closed.
RELAY_READY_SECONDS = 2.0
RELAY_IDLE_SECONDS = 1.0


def check_subscriptions(uris: list[str], context: registry.ToolContext) -> None:
    """The URIs a listen request may watch: task contexts the caller may read."""
    if len(uris) > SUBSCRIBED_URIS:
        raise invalid(f"A subscription watches at most {SUBSCRIBED_URIS} resources, not "
                      f"{len(uris)}", field="resourceSubscriptions")
    for uri in uris:
        kind, key = parse_uri(uri)
        if kind != "task":
            raise invalid(f"Only task contexts ({TASK_TEMPLATE}) can be subscribed to, not "
                          f"{uri[:200]!r}", field="resourceSubscriptions")
        reachable_task(key, context)


def listen_handler(stdio_project: str | None = None):
    """``subscriptions/listen``: the requested task contexts checked against the caller's
    access first (another project's task is E1610, as a missing one), then the SDK's
    ListenHandler serves the stream."""
    async def on_listen(ctx: Any, params: types.SubscriptionsListenRequestParams
                        ) -> types.SubscriptionsListenResult:
        uris = list(params.notifications.resource_subscriptions or ())
        context = tool_context(ctx, stdio_project)
        await served(check_subscriptions, uris, context)
        holder = context.actor
        if _open_streams.get(holder, 0) >= STREAMS_PER_TOKEN:
            raise mcp_error(OrchestratorError(
                "E1618", f"This token has {STREAMS_PER_TOKEN} subscription streams open "
                "already: close one first", {"limit": STREAMS_PER_TOKEN}))
        _open_streams[holder] = _open_streams.get(holder, 0) + 1
        relay = _relay
        try:
            if relay is not None:
                await relay.opened()
            authorization = _authorization(ctx)
            if authorization is None:  # stdio: no token to lose
                return await LISTEN(ctx, params)
            return await _until_revoked(authorization, LISTEN(ctx, params))
        finally:
            if relay is not None:
                relay.closed()
            _open_streams[holder] -= 1
            if not _open_streams[holder]:
                del _open_streams[holder]

    return on_listen


def _authorization(ctx: Any) -> str | None:
    request = getattr(ctx, "request", None)
    return request.headers.get("authorization") if request is not None else None


async def _until_revoked(authorization: str, stream: Awaitable[T]) -> T:
    """Serve ``stream`` while its token stays valid. A listen stream outlives the request
    that checked its token, so the token is checked again every TOKEN_RECHECK_SECONDS: a
    revoked token's stream ends with E1609 instead of hearing of further changes. An
    unreachable Postgres ends nothing (the token cannot be read either way)."""
    revoked = False

    async def watch(scope: anyio.CancelScope) -> None:
        nonlocal revoked
        while True:
            await anyio.sleep(TOKEN_RECHECK_SECONDS)
            try:
                valid = await in_tool_thread(authenticate_header, authorization)
            except (OperationalError, InterfaceError):
                continue
            if valid is None:
                revoked = True
                scope.cancel()
                return

    result: T | None = None
    failed: Exception | None = None  # raised as itself, not inside the group's ExceptionGroup
    async with anyio.create_task_group() as group:
        group.start_soon(watch, group.cancel_scope)
        try:
            result = await stream
        except Exception as exc:  # noqa: BLE001 - re-raised below, unchanged
            failed = exc
        group.cancel_scope.cancel()
    if failed is not None:
        raise failed
    if revoked:
        raise mcp_error(OrchestratorError("E1609", "The token of this subscription stream "
                                          "was revoked"))
    return cast(T, result)


_open_streams: dict[str, int] = {}  # token name -> listen streams open in this process


class Relay:
    """Hands every task change broadcast on Redis to the bus while this process has a
    listen stream open. With none open it holds no subscription: every save of every
    process is broadcast, and parsing each message in every web worker for nobody cost
    ~7 % of a web worker's CPU under agent load."""

    def __init__(self) -> None:
        self.streams = 0  # listen streams open in this process
        self.wanted = anyio.Event()  # set when the first stream opens
        self.subscribed = anyio.Event()  # set while subscribed to the channel

    async def opened(self) -> None:
        """A stream opens: subscribed before its ack, so no change after the ack is
        missed (unless Redis is down: then it goes on unannounced, as a save would)."""
        self.streams += 1
        self.wanted.set()
        with anyio.move_on_after(RELAY_READY_SECONDS):
            await self.subscribed.wait()

    def closed(self) -> None:
        self.streams -= 1

    async def run(self) -> None:
        """Subscribe while streams are open, reconnect after a failure (changes broadcast
        meanwhile are lost: listeners refetch). An outage is logged once, not at every
        attempt."""
        failing = False
        while True:
            if not self.streams:
                self.wanted = anyio.Event()
                await self.wanted.wait()
            client = redis.asyncio.Redis.from_url(settings.REDIS_URL, decode_responses=True,
                                                  socket_connect_timeout=1.0)
            try:
                async with client.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(events.channel())
                    self.subscribed.set()
                    if failing:
                        logger.info("task change relay has Redis again")
                        failing = False
                    while self.streams:
                        message = await pubsub.get_message(timeout=RELAY_IDLE_SECONDS)
                        if message is not None and message.get("type") == "message":
                            await BUS.publish(ResourceUpdated(uri=task_uri(message["data"])))
            except (redis.RedisError, OSError) as exc:
                if not failing:
                    logger.warning("task change relay lost Redis: %s", exc)
                failing = True
            finally:
                self.subscribed = anyio.Event()
                with anyio.CancelScope(shield=True):
                    await client.aclose()
            if failing:
                await anyio.sleep(RELAY_RETRY_SECONDS)


_relay: Relay | None = None  # the running server's (task_events)


@contextlib.asynccontextmanager
async def task_events() -> AsyncIterator[None]:
    """Run the relay while the server runs; close open listen streams gracefully at the
    end."""
    global _relay
    _relay = Relay()
    async with anyio.create_task_group() as group:
        group.start_soon(_relay.run)
        try:
            yield
        finally:
            LISTEN.close()
            group.cancel_scope.cancel()


# -- progress --------------------------------------------------------------------------------

# How long a tool thread waits for one progress notification to be written before going on
# without it (a client that stopped reading must not hold the tool call).
PROGRESS_WRITE_SECONDS = 2.0


def with_progress(ctx: Any, context: registry.ToolContext) -> registry.ToolContext:
    """``context`` reporting ``ToolContext.progress`` as notifications/progress when the
    request carries a progressToken; unchanged otherwise."""
    if progress_token_from_params(getattr(ctx, "params", None)) is None:
        return context
    loop = asyncio.get_running_loop()

    def report(done: int, total: int) -> None:
        future = asyncio.run_coroutine_threadsafe(
            ctx.session.report_progress(done, total, f"{done} of {total}"), loop)
        try:
            future.result(timeout=PROGRESS_WRITE_SECONDS)
        except Exception as exc:  # a lost progress note must never fail the call
            future.cancel()
            logger.debug("progress notification not sent: %s", exc)

    return dataclasses.replace(context, progress=report)
