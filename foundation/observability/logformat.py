"""JSON log lines in the spec's format: timestamp, level, logger, message, context.

    {"timestamp", "level", "logger": "session-orchestration", "message", "context": {...},
     "trace_id", "span_id", "session_id", "component"}

``logger`` is the service name, as in the spec's example; the Python logger that wrote
the line (``orchestrator.contexts``, ``django.request``, ...) goes to ``component``.
``trace_id``/``span_id`` are the current OpenTelemetry span's, present on every line
written inside a span (a tool call, a Celery task, a traced request). ``session_id`` is
lifted to the top level from the ``session_id`` or ``sessionId`` extra, ``projectId``
from the ``projectId`` extra, else from the project of the tool call being served
(``call_project``: the one it names, or the client's X-Orchestrator-Project).
"""

from __future__ import annotations

import contextvars
import json
import logging
import math
import time
from itertools import filterfalse

from opentelemetry import trace

SERVICE_NAME = "session-orchestration"
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
# The spec's level names say WARN where Python says WARNING.
_LEVELS = {"WARNING": "WARN"}
# The project of the tool call this thread serves (set by the tool registry).
call_project: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "call_project", default=None)


# Every log line goes through here (a save writes one): the encoder is built once, and the
# "YYYY-MM-DDTHH:MM:SS" of the current second is formatted once per second.
_encode = json.JSONEncoder(default=str).encode
_second: tuple[int, str] = (-1, "")


def _timestamp(created: float) -> str:
    """``created`` (Unix seconds) as ISO 8601 UTC to the millisecond, ``...T10:30:00.000Z``."""
    global _second
    whole = math.floor(created)
    micro = round((created - whole) * 1e6)  # as datetime.fromtimestamp rounds
    if micro >= 1_000_000:
        whole, micro = whole + 1, micro - 1_000_000
    second, prefix = _second
    if second != whole:
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
        _second = (whole, prefix)
    return f"{prefix}.{micro // 1000:03d}Z"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "timestamp": _timestamp(record.created),
            "level": _LEVELS.get(record.levelname, record.levelname),
            "logger": SERVICE_NAME,
            "message": record.getMessage(),
        }
        # The extras in the order given; filterfalse passes over the standard attributes
        # in C, so only the few extras cost a Python step each.
        attributes = record.__dict__
        context = {k: attributes[k] for k in filterfalse(_STANDARD.__contains__, attributes)}
        session_id = context.pop("session_id", None) or context.get("sessionId")
        project_id = context.pop("projectId", None) or call_project.get()
        if context:
            entry["context"] = context
        # A contextvar read: without a span (tracing off, no traceparent) it is INVALID_SPAN.
        span_context = trace.get_current_span().get_span_context()
        if span_context.is_valid:
            entry["trace_id"] = format(span_context.trace_id, "032x")
            entry["span_id"] = format(span_context.span_id, "016x")
        if session_id:
            entry["session_id"] = session_id
        if project_id:
            entry["projectId"] = project_id
        entry["component"] = record.name
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return _encode(entry)
