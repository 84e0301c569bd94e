"""Who may call what: token scopes and session ownership (spec 8.1.2).

A token has a scope (``orchestrator.core.models.TokenScope``): ``read`` calls only tools the
registry marks read-only (E1608 otherwise); ``write`` calls every tool but writes only
the sessions it started itself (E1604 for another token's session); ``admin`` writes
every session. A tool declares which session a call writes with ``Tool.writes_session``.

In-process callers (admin actions, management commands, Celery tasks) are not tokens:
their ``ToolContext.scope`` is None and nothing here restricts them.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from django.db import connection

from orchestrator.core.db import qualified
from orchestrator.core.errors import OrchestratorError
from orchestrator.core.models import SessionOwner, TokenScope
from orchestrator.core.tools.definition import Tool, ToolContext

# Owners seen recently, so that the check does not cost a query on every heartbeat. An
# owner only changes when a session id is deleted (retention) and started again, so a
# minute of staleness is harmless; starting a session here refreshes its entry at once.
# "No owner" (a session started in-process: admin, command, stdio) is remembered too:
# otherwise every heartbeat of such a session paid a query to learn it again.
OWNER_CACHE_SECONDS = 60.0
OWNER_CACHE_SIZE = 10_000
_owners: dict[str, tuple[float, str | None]] = {}
_owners_lock = threading.Lock()


def _remember(session_id: str, owner: str | None) -> None:
    with _owners_lock:
        if len(_owners) >= OWNER_CACHE_SIZE:
            _owners.clear()
        _owners[session_id] = (time.monotonic(), owner)


def forget_session_owners() -> None:
    """Drop the cache (tests roll back the rows it reflects)."""
    with _owners_lock:
        _owners.clear()


def session_argument(arguments: dict[str, Any]) -> str | None:
    """``Tool.writes_session`` for tools whose ``sessionId`` names the session they write."""
    return arguments.get("sessionId")


def owner_of(session_id: str) -> str | None:
    cached = _owners.get(session_id)
    if cached and time.monotonic() - cached[0] < OWNER_CACHE_SECONDS:
        return cached[1]
    # One round trip: the owner, and whether the session exists at all. Only an existing
    # session's answer is remembered; a session id not started yet may get an owner any
    # moment, and its first check must see it.
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT o.token_name FROM {qualified('active_sessions')} s "
            f"LEFT JOIN {SessionOwner._meta.db_table} o ON o.session_id = s.session_id "
            "WHERE s.session_id = %s "
            f"UNION ALL SELECT token_name FROM {SessionOwner._meta.db_table} "
            "WHERE session_id = %s LIMIT 1", [session_id, session_id])
        row = cursor.fetchone()
    if row is None:
        return None  # no such session and no owner row: nothing to protect, nothing cached
    owner = row[0]
    _remember(session_id, owner)
    return owner


def record_session_owner(session_id: str, context: ToolContext) -> None:
    """Bind a just-started session to the token that started it (no-op for in-process
    callers, which are not tokens)."""
    if context.scope is None or not context.actor:
        return
    SessionOwner.objects.update_or_create(session_id=session_id,
                                          defaults={"token_name": context.actor})
    _remember(session_id, context.actor)


def check_access(tool: Tool, arguments: dict[str, Any], context: ToolContext) -> None:
    """Raise E1608 / E1604 when the calling token may not make this call."""
    if context.scope is None or context.scope == TokenScope.ADMIN:
        return
    if context.scope == TokenScope.READ and not tool.read_only:
        raise OrchestratorError(
            "E1608", f"A read token cannot call {tool.name}: it changes stored data",
            {"tool": tool.name, "scope": context.scope})
    session_id = tool.writes_session(arguments) if tool.writes_session else None
    if not session_id:
        return
    owner = owner_of(session_id)
    if owner is not None and owner != context.actor:
        raise OrchestratorError(
            "E1604", f"Session {session_id!r} was started by another token; only that token "
            "or an admin token may change it", {"sessionId": session_id, "tool": tool.name})
