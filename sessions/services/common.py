"""Shared pieces of the session services: table names, lookups and error diagnosis."""

from __future__ import annotations

import logging
from typing import Any

from django.db import connection, transaction

from foundation.core.db import qualified
from foundation.core.errors import OrchestratorError, session_not_found
from foundation.observability import metrics
from sessions import signals
from sessions.models import ActiveSession, SessionDetail, SessionEvent, ToolInvocation

logger = logging.getLogger("orchestrator.sessions")

# Statuses of a session whose agent process is still expected to send heartbeats.
LIVE_STATUSES = ("active", "compacted")
# Statuses of a session that is over: no heartbeats, events or compactions any more.
CLOSED_STATUSES = ("ended", "recovered")


def sessions_table() -> str:
    return qualified("active_sessions")


def tasks_table() -> str:
    return qualified("task_contexts")


DETAIL_TABLE = SessionDetail._meta.db_table
HISTORY_TABLE = ToolInvocation._meta.db_table
EVENTS_TABLE = SessionEvent._meta.db_table


def session_status(session_id: str) -> str | None:
    """The stored status, or None when there is no such session."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT status FROM {sessions_table()} WHERE session_id = %s",
                       [session_id])
        row = cursor.fetchone()
    return None if row is None else (row[0] or "active")


def refuse_for_status(session_id: str, status: str | None, *, action: str) -> OrchestratorError:
    """The error for a session that a conditional update did not touch (why it didn't)."""
    if status is None:
        return session_not_found(session_id)
    details = {"sessionId": session_id, "status": status}
    if status == "crashed":
        return OrchestratorError(
            "E1603", f"Session {session_id!r} crashed; run check_recovery before {action}",
            details)
    return OrchestratorError("E1602", f"Session {session_id!r} is {status}; cannot {action}",
                             details)


def get_session(session_id: str, *, code: str = "E1600") -> ActiveSession:
    try:
        return ActiveSession.objects.get(session_id=session_id)
    except ActiveSession.DoesNotExist:
        raise session_not_found(session_id, code=code) from None


def announce_ends(session_ids: list[str], status: str) -> None:
    """``announce_end`` for many sessions: one bulk signal after the commit."""
    if not session_ids:
        return
    metrics.sessions_total.labels(status).inc(len(session_ids))
    ids = list(session_ids)
    transaction.on_commit(lambda: signals.sessions_ended.send(
        sender=ActiveSession, session_ids=ids, status=status))


def announce_end(session_id: str, status: str) -> None:
    """Count the final status and tell listeners once the transaction has committed."""
    metrics.sessions_total.labels(status).inc()
    transaction.on_commit(lambda: signals.session_ended.send(
        sender=ActiveSession, session_id=session_id, status=status))


def fetch_dicts(sql: str, params: list[Any]) -> list[dict[str, Any]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        columns = [c.name for c in cursor.description]
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
