"""The tool registry: every way in (REST, MCP, console, periodic jobs, commands) calls
``call_tool``.

A tool is declared once, in its app's ``tools.py``, with ``register(Tool(...))``: name,
description, JSON Schema of input and output, and the service function it calls. The
registry validates input against the schema (bad input -> the tool's validation code,
400), runs the handler, and turns unexpected faults into E1699 so transports only ever
see ``OrchestratorError``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import psycopg
from django.db import DatabaseError, InterfaceError, OperationalError

from foundation.core.errors import OrchestratorError, failure_reason, storage_quota_exceeded
from foundation.core.tools.access import check_access, session_argument
from foundation.core.tools.definition import Tool, ToolContext
from foundation.core.tools.input_checks import (
    format_problem,
    quick_validator_for,
    scan_input,
    validator_for,
)
from foundation.observability import metrics, tracing
from foundation.observability.logformat import call_project

logger = logging.getLogger("orchestrator.tools")


# Hooks run after every call (success or failure) with (tool, arguments, result_or_error,
# context, duration_seconds); the sessions app uses one to record tool history.
AfterCallHook = Callable[[Tool, dict[str, Any], dict[str, Any], ToolContext, float], None]

_TOOLS: dict[str, Tool] = {}
_AFTER_CALL: list[AfterCallHook] = []


def register(tool: Tool) -> Tool:
    if tool.name in _TOOLS:
        raise ValueError(f"tool {tool.name!r} registered twice")
    writes_session = tool.writes_session
    if writes_session is None and not tool.read_only and "sessionId" not in tool.creates \
            and "sessionId" in tool.input_schema.get("properties", {}):
        # A write naming a session (the saver of a version, the author of a checkpoint or
        # resolution) names the caller's own: otherwise a token could record its writes
        # under another token's session and forge the audit trail (issue 34).
        writes_session = session_argument
    tool = Tool(**{**tool.__dict__, "validator": validator_for(tool.input_schema),
                   "quick_validator": quick_validator_for(tool.input_schema),
                   "writes_session": writes_session})
    _TOOLS[tool.name] = tool
    return tool


def add_after_call_hook(hook: AfterCallHook) -> None:
    if hook not in _AFTER_CALL:
        _AFTER_CALL.append(hook)


def tools() -> list[Tool]:
    """The tools network clients see (REST, MCP, the OpenAPI document), by name."""
    return sorted((t for t in _TOOLS.values() if not t.internal), key=lambda t: t.name)


def internal_tools() -> list[Tool]:
    """The operations only in-process callers may call, by name."""
    return sorted((t for t in _TOOLS.values() if t.internal), key=lambda t: t.name)


def get_tool(name: str, context: ToolContext | None = None) -> Tool:
    """The tool ``name``; E1615 if there is none, or if it is internal and ``context`` is
    a network client."""
    tool = _TOOLS.get(name)
    if tool is None or (tool.internal and context is not None and not context.in_process):
        raise OrchestratorError("E1615", f"No tool named {name!r}")
    return tool


def validate_input(tool: Tool, arguments: Any) -> dict[str, Any]:
    if not isinstance(arguments, dict):
        raise OrchestratorError(tool.validation_code, "Tool input must be a JSON object")
    unstorable, has_float = scan_input(arguments)
    if unstorable:
        raise OrchestratorError(
            tool.validation_code,
            f"Invalid input for {tool.name}: {unstorable['field']}: {unstorable['problem']}",
            [unstorable])
    if not has_float and tool.quick_validator.is_valid(arguments):
        return arguments  # see input_checks.quick_validator_for: it only ever accepts
    errors = sorted(tool.validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if errors:
        details = [
            {"field": ".".join(str(p) for p in e.absolute_path) or "(root)",
             "problem": format_problem(e)}
            for e in errors[:20]
        ]
        first = details[0]
        raise OrchestratorError(
            tool.validation_code,
            f"Invalid input for {tool.name}: {first['field']}: {first['problem']}",
            details,
        )
    return arguments


NETWORK_TRANSPORTS = frozenset({"rest", "mcp"})


def unreachable(exc: BaseException) -> bool:
    """The server could not be reached or the connection broke, as opposed to a query
    cut off by statement_timeout or aborted to break a deadlock (the server answered)."""
    return not isinstance(exc.__cause__, psycopg.errors.QueryCanceled
                          | psycopg.errors.DeadlockDetected
                          | psycopg.errors.SerializationFailure)


def unavailable_message(exc: BaseException) -> str:
    """E1654's message: a query cut off by statement_timeout, or aborted to break a
    deadlock, is not an unreachable server."""
    if isinstance(exc.__cause__, psycopg.errors.QueryCanceled):
        return "PostgreSQL did not answer within the statement timeout"
    if isinstance(exc.__cause__, psycopg.errors.DeadlockDetected
                  | psycopg.errors.SerializationFailure):
        # Retried where that is safe (foundation.core.db); this one ran out of tries.
        return ("PostgreSQL aborted this call's transaction to break a deadlock with "
                "another call; retry it")
    return "PostgreSQL is unreachable"


def database_failure(tool: Tool, exc: BaseException, code: str,
                     message: str) -> OrchestratorError:
    """A database failure in ``tool``: ``code`` (E1654 unreachable, E1699 other), or the
    tool's own spec code (``Tool.database_code``) with the status ``code`` has (503 while
    the database is unreachable) and ``code`` as details.cause. details.reason is the
    error's kind, never Postgres's message (``failure_reason``): the caller logged that."""
    reason = failure_reason(exc)
    if tool.database_code is None:
        return OrchestratorError(code, message, {"reason": reason})
    status = OrchestratorError(code).http_status
    return OrchestratorError(tool.database_code, f"{message} ({tool.name} failed)",
                             {"reason": reason, "cause": code}, http_status=status)


def _held(tool: Tool, args: dict[str, Any] | None, context: ToolContext,
          exc: BaseException) -> dict[str, Any] | None:
    """The tool's answer while Postgres is unreachable (``Tool.when_database_down``), for a
    valid call of a network client; None: fail as usual. Not for in-process callers (the
    replay of held calls itself among them: it must see the failure and stop)."""
    if (tool.when_database_down is None or args is None
            or context.transport not in NETWORK_TRANSPORTS or not unreachable(exc)):
        return None
    try:
        return tool.when_database_down(args, context)
    except Exception:  # the fallback failing must not hide the outage's own answer
        logger.exception("tool %s: holding the call while the database is down failed",
                         tool.name)
        return None


def call_tool(name: str, arguments: Any, context: ToolContext) -> dict[str, Any]:
    """Validate, run and return the tool's output; raise ``OrchestratorError`` on failure."""
    tool = get_tool(name, context)
    # Log lines of the call carry its project when it names one or the client said where
    # it works (services add it where they learn it from a task or session).
    named = arguments.get("projectId") if isinstance(arguments, dict) else None
    project = named if isinstance(named, str) else context.project
    token = call_project.set(project) if project else None
    try:
        # Every transport comes through here: the one place a tool call's span starts.
        with tracing.tool_span(tool.name, context.transport, arguments) as span:
            return _run_tool(tool, arguments, context, span)
    finally:
        if token is not None:
            call_project.reset(token)


def _run_tool(tool: Tool, arguments: Any, context: ToolContext, span: Any) -> dict[str, Any]:
    name = tool.name
    started = time.perf_counter()
    outcome: dict[str, Any]
    args: dict[str, Any] | None = None
    try:
        with tracing.span("validate_input"):
            args = validate_input(tool, arguments)
        args = check_access(tool, args, context)
        result = tool.handler(args, context)
        outcome = result
        return result
    except OrchestratorError as exc:
        outcome = exc.to_dict()
        raise
    except (OperationalError, InterfaceError) as exc:
        logger.error("tool %s: database unavailable: %s", name, exc)
        held = _held(tool, args, context, exc)
        if held is not None:
            outcome = held
            return held
        error = database_failure(tool, exc, "E1654", unavailable_message(exc))
        outcome = error.to_dict()
        raise error from exc
    except DatabaseError as exc:
        quota = storage_quota_exceeded(exc)  # E1617 from any write path; else a fault
        if quota is None:
            logger.exception("tool %s: database error", name)
        error = quota or database_failure(tool, exc, "E1699", "Database error")
        outcome = error.to_dict()
        raise error from exc
    except Exception as exc:
        logger.exception("tool %s failed unexpectedly", name)
        error = OrchestratorError("E1699", f"Unexpected server fault in {name}")
        outcome = error.to_dict()
        raise error from exc
    finally:
        duration = time.perf_counter() - started
        failure = outcome.get("error") if outcome.get("success") is False else None
        code = failure.get("code", "error") if isinstance(failure, dict) else "ok"
        metrics.labelled(metrics.tool_calls_total, tool.name, context.transport,
                         str(code)).inc()
        metrics.labelled(metrics.tool_call_duration_seconds, tool.name).observe(duration)
        tracing.record_tool_outcome(span, outcome)
        for hook in _AFTER_CALL:
            try:
                hook(tool, arguments if isinstance(arguments, dict) else {}, outcome, context,
                     duration)
            except Exception:  # a hook must never change the tool's answer
                logger.exception("after-call hook %r failed for %s", hook, name)
