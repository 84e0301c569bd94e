"""Handoff notes between sessions of one project (seed 001 AD-2).

Exactly one active handoff per project: the partial unique index enforces it and
``leave_handoff`` replaces the previous one in the caller's transaction. A transaction-
scoped advisory lock per project serialises concurrent replacements, so two sessions
ending at once leave the later one active instead of one failing on the index.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from sessions.models import SessionHandoff
from sessions.services.common import iso


def project_key(project_dir: str | None) -> str:
    return project_dir or settings.MCP_PROJECT_ID


def _lock_project(key: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext('agent_sessions.handoff'), "
                       "hashtext(%s))", [key])


def leave_handoff(*, project_dir: str | None, session_id: str, agent_id: str | None,
                  summary: str, open_items: list[str]) -> SessionHandoff:
    """Deactivate the project's active handoff and insert the new one (call in atomic)."""
    key = project_key(project_dir)
    _lock_project(key)
    SessionHandoff.objects.filter(project_key=key, active=True).update(active=False)
    return SessionHandoff.objects.create(project_key=key, from_session_id=session_id,
                                         from_agent=agent_id, summary=summary,
                                         open_items=open_items)


def consume_handoff(*, project_dir: str | None, session_id: str) -> SessionHandoff | None:
    """Take the project's active handoff for a starting session (call in atomic)."""
    key = project_key(project_dir)
    _lock_project(key)
    handoff = SessionHandoff.objects.filter(project_key=key, active=True).first()
    if handoff is None:
        return None
    handoff.active = False
    handoff.consumed_at = timezone.now()
    handoff.consumed_by_session_id = session_id
    handoff.save(update_fields=["active", "consumed_at", "consumed_by_session_id"])
    return handoff


def handoff_data(handoff: SessionHandoff | None) -> dict[str, Any] | None:
    if handoff is None:
        return None
    return {
        "handoffId": str(handoff.id),
        "projectDir": handoff.project_key,
        "fromSessionId": handoff.from_session_id,
        "fromAgent": handoff.from_agent,
        "summary": handoff.summary,
        "openItems": list(handoff.open_items or []),
        "createdAt": iso(handoff.created_at),
        "consumedAt": iso(handoff.consumed_at),
        "active": handoff.active,
    }
