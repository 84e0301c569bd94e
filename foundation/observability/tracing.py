"""Tracing with OpenTelemetry (a span per tool call, children per backend round trip),
exported over OTLP/HTTP.

Off unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is
set. Off costs one bool test per instrumented call: every helper here hands back a
shared no-op context manager, no span object is built, no header is parsed, and the
Postgres statement hook is not even installed.

On, a trace looks like this:

    session_orchestration.save_context_snapshot       one per tool call (registry.call_tool)
    +-- validate_input
    +-- postgres_update                               the save's transaction
    |   +-- postgres SELECT                           one per statement
    |   +-- trigger_version_save                      the UPDATE whose trigger versions
    |       +-- postgres UPDATE
    +-- redis_update
    |   +-- redis                                     one per Redis round trip
    +-- file_sync
        +-- file_write                                one per atomic file write

with the 9.3.2 attributes (``task.id``, ``session.id``, ``context.version``,
``operation.type``, ``backend.type``). The parent comes from an incoming ``traceparent``
header (REST tool endpoints and /mcp, see ``orchestrator.asgi``) or from the Celery
message that started a task; a Celery task and a management command get a span of their
own, which the tool calls they make nest under.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from foundation.observability.logformat import SERVICE_NAME

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
SPAN_PREFIX = "session_orchestration."
STATEMENT_TEXT_LIMIT = 1000
UNTRACED_COMMANDS = frozenset({"mcp_stdio", "runserver", "shell", "dbshell"})

enabled = False
_tracer = trace.get_tracer(SERVICE_NAME)
_NOOP = contextlib.nullcontext()
# Spans of running Celery tasks, by task id: prerun and postrun are separate signals.
_task_spans: dict[str, tuple[Span, object]] = {}


def endpoint_configured() -> bool:
    return any(os.environ.get(name) for name in ENDPOINT_VARIABLES)


def configure() -> bool:
    """Export spans over OTLP when an endpoint is configured; True when tracing is on."""
    if enabled or not endpoint_configured():
        return enabled
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # Resource.create reads OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES over this default.
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    install(provider)
    return True


def install(provider: Any) -> None:
    """Make ``provider`` the process's tracer provider and turn the instrumentation on.

    The OpenTelemetry API accepts one provider per process; tests install an SDK provider
    with an in-memory exporter through here.
    """
    global enabled
    if trace.get_tracer_provider() is not provider:
        trace.set_tracer_provider(provider)
    if enabled:
        return
    enabled = True
    _instrument_postgres()
    _instrument_celery()


def disable() -> None:
    """Stop making spans (the provider stays; the OpenTelemetry API cannot unset it)."""
    global enabled
    enabled = False


# -- spans -------------------------------------------------------------------------------

def _operation_type(tool_name: str) -> str:
    """9.3.2's ``operation.type``: the tool's verb (save, switch, ...), reads are ``load``."""
    verb = tool_name.split("_", 1)[0]
    return "load" if verb in ("get", "check") else verb


@contextlib.contextmanager
def _tool_span(tool_name: str, transport: str, arguments: Any) -> Iterator[Span]:
    attributes: dict[str, Any] = {"operation.type": _operation_type(tool_name),
                                  "tool.name": tool_name, "tool.transport": transport}
    if isinstance(arguments, dict):
        task_id = arguments.get("taskId") or arguments.get("toTaskId")
        if isinstance(task_id, str):
            attributes["task.id"] = task_id
        if isinstance(arguments.get("sessionId"), str):
            attributes["session.id"] = arguments["sessionId"]
    with _tracer.start_as_current_span(SPAN_PREFIX + tool_name, kind=SpanKind.INTERNAL,
                                       attributes=attributes) as span:
        yield span


def tool_span(tool_name: str, transport: str, arguments: Any):
    """The span of one tool call (a no-op context manager when tracing is off)."""
    if not enabled:
        return _NOOP
    return _tool_span(tool_name, transport, arguments)


def record_tool_outcome(span: Span | None, outcome: Mapping[str, Any]) -> None:
    """Put the answer's version, or its error code, on the tool span."""
    if span is None:
        return
    version = outcome.get("version")
    if isinstance(version, int) and not isinstance(version, bool):
        span.set_attribute("context.version", version)
    if outcome.get("success") is False:
        error = outcome.get("error")
        code = error.get("code") if isinstance(error, dict) else "error"
        span.set_attribute("error.code", str(code))
        span.set_status(StatusCode.ERROR, str(code))


def span(name: str, **attributes: Any):
    """A child span of the current one (no-op when tracing is off)."""
    if not enabled:
        return _NOOP
    return _tracer.start_as_current_span(name, attributes=attributes)


# The trigger that writes a task's version (migration contexts/0001).
VERSION_TRIGGER = "auto_save_context_version"


def version_save_span(task_id: str):
    """``trigger_version_save``, under ``postgres_update``: the UPDATE of
    task_contexts whose versioning trigger writes the version. The trigger runs inside
    that statement, so the span is the statement (its ``postgres UPDATE`` span is the
    child); ``context.version`` is set from the row it returns (``set_version``)."""
    return backend_span("trigger_version_save", "postgres",
                        **{"task.id": task_id, "db.trigger": VERSION_TRIGGER})


def set_version(span: Span | None, version: int | None) -> None:
    if span is not None and version is not None:
        span.set_attribute("context.version", version)


def backend_span(name: str, backend: str, **attributes: Any):
    """A span around one backend operation, with 9.3.2's ``backend.type``; only inside an
    operation's span. A round trip outside any (the per-token rate-limit check a request
    makes before its tool call starts) would otherwise be a trace of its own per request."""
    if not enabled or not trace.get_current_span().is_recording():
        return _NOOP
    return _tracer.start_as_current_span(name, kind=SpanKind.CLIENT,
                                         attributes={"backend.type": backend, **attributes})


# -- context from outside ------------------------------------------------------------------

def attach_incoming_headers(headers: list[tuple[bytes, bytes]]) -> object | None:
    """Make an incoming request's ``traceparent`` the current context; a token to detach."""
    if not enabled:
        return None
    carrier = {}
    for name, value in headers:
        if name in (b"traceparent", b"tracestate"):
            carrier[name.decode("latin-1")] = value.decode("latin-1")
    if not carrier:
        return None
    return otel_context.attach(propagate.extract(carrier))


def detach(token: object | None) -> None:
    if token is not None:
        otel_context.detach(token)


@contextlib.contextmanager
def command_span(command: str) -> Iterator[None]:
    """The span of one management command run (``manage.py``).

    Servers and shells get none: every tool call of an hour-long stdio MCP session would
    otherwise share one trace.
    """
    if not enabled or command in UNTRACED_COMMANDS:
        yield
        return
    with _tracer.start_as_current_span(SPAN_PREFIX + "command." + command,
                                       attributes={"operation.type": command}):
        yield


# -- Postgres: one span per statement ---------------------------------------------------------

def statement_span(sql: Any):
    """The span of one Postgres statement, ``postgres <VERB>``; for statements sent past
    Django's cursor (``foundation.core.prepared``), which its execute wrappers never see."""
    if not enabled:
        return _NOOP
    text = sql if isinstance(sql, str) else str(sql)
    verb = text.lstrip().split(None, 1)[0].upper() if text.strip() else "SQL"
    return _tracer.start_as_current_span(
        "postgres " + verb, kind=SpanKind.CLIENT,
        attributes={"backend.type": "postgres", "db.system": "postgresql",
                    "db.statement": text[:STATEMENT_TEXT_LIMIT]})


def _statement_span(execute, sql, params, many, context):
    with statement_span(sql):
        return execute(sql, params, many, context)


def instrument_connection(connection: Any, **_: Any) -> None:
    if _statement_span not in connection.execute_wrappers:
        connection.execute_wrappers.append(_statement_span)


def _instrument_postgres() -> None:
    from django.db import connections
    from django.db.backends.signals import connection_created

    connection_created.connect(instrument_connection, dispatch_uid="orchestrator.tracing")
    for connection in connections.all(initialized_only=True):
        instrument_connection(connection)


# -- Celery: trace context in the message, a span per task run ------------------------------------

def _inject_into_message(headers: dict | None = None, **_: Any) -> None:
    if enabled and headers is not None:
        propagate.inject(headers)


class _RequestGetter:
    """Reads ``traceparent`` from a Celery request (message headers become attributes)."""

    def get(self, carrier: Any, key: str) -> list[str] | None:
        value = getattr(carrier, key, None)
        return [value] if isinstance(value, str) else None

    def keys(self, carrier: Any) -> list[str]:
        return []


def _start_task_span(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    if not enabled or task is None or task_id is None:
        return
    parent = propagate.extract(task.request, getter=_RequestGetter())
    task_span = _tracer.start_span(SPAN_PREFIX + "task." + task.name, context=parent,
                                   kind=SpanKind.CONSUMER,
                                   attributes={"operation.type": task.name.rsplit(".", 1)[-1],
                                               "celery.task_id": task_id})
    token = otel_context.attach(trace.set_span_in_context(task_span))
    _task_spans[task_id] = (task_span, token)


def _end_task_span(task_id: str | None = None, state: str | None = None, **_: Any) -> None:
    entry = _task_spans.pop(task_id, None) if task_id else None
    if entry is None:
        return
    task_span, token = entry
    if state and state != "SUCCESS":
        task_span.set_status(StatusCode.ERROR, state)
    otel_context.detach(token)
    task_span.end()


def _instrument_celery() -> None:
    from celery import signals

    signals.before_task_publish.connect(_inject_into_message, weak=False,
                                        dispatch_uid="orchestrator.tracing.publish")
    signals.task_prerun.connect(_start_task_span, weak=False,
                                dispatch_uid="orchestrator.tracing.prerun")
    signals.task_postrun.connect(_end_task_span, weak=False,
                                 dispatch_uid="orchestrator.tracing.postrun")
