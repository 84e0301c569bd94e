"""Handoff notes between sessions of one project: a note left in one clone
or worktree of a repository is read by the next session in any other of the same project.

Exactly one active handoff per project: the partial unique index enforces it and an
ending session replaces the previous one in its transaction (``LEAVE_STATEMENTS``). Starting
sessions read it without deactivating it (``CONSUME_ACTIVE_SQL``). A transaction-
scoped advisory lock per project serialises concurrent replacements, so two sessions
ending at once leave the later one active instead of one failing on the index.
"""

from __future__ import annotations

import json
from typing import Any

from foundation.core.stamps import iso
from sessions.models import SessionHandoff

# How an ending session leaves its note (end_session runs these among its statements, in
# its transaction, once it has ended session %(session)s; ``{ended}`` is the condition
# saying it did, ``{agent}`` the note's author): the project's lock (a transaction-scoped
# advisory lock per project, so two sessions ending at once leave the later note active
# instead of one failing on the index), the active note deactivated, the new one
# inserted, active.
LEAVE_STATEMENTS = (
    "SELECT pg_advisory_xact_lock(hashtext('agent_sessions.handoff'), hashtext(s.project_id))"
    " FROM {sessions} s WHERE s.session_id = %(session)s AND {ended}",
    f"UPDATE {SessionHandoff._meta.db_table} SET active = false WHERE active "
    "AND project_id = (SELECT s.project_id FROM {sessions} s "
    "WHERE s.session_id = %(session)s AND {ended})",
    f"INSERT INTO {SessionHandoff._meta.db_table} (id, project_id, project_dir, "
    "from_session_id, from_agent, summary, open_items, active, created_at) "
    "SELECT gen_random_uuid(), s.project_id, s.project_dir, s.session_id, {agent}, "
    "%(summary)s, %(open_items)s::jsonb, true, now() FROM {sessions} s "
    "WHERE s.session_id = %(session)s AND {ended}",
)


# How a starting session reads the project's active note (start_session runs it inside
# its one statement, RETURNING the note): the note stays active (until the next
# end_session replaces it), so parallel sessions all get it; the first read sets
# ``consumed_at`` (and who), every read sets ``last_confirmed_at``. One conditional UPDATE,
# no project lock: reads must not queue behind each other, and the row lock orders them
# against a replacing end_session.
CONSUME_ACTIVE_SQL = (
    f"UPDATE {SessionHandoff._meta.db_table} SET consumed_at = COALESCE(consumed_at, now()), "
    "consumed_by_session_id = COALESCE(consumed_by_session_id, %(session)s), "
    "last_confirmed_at = now() WHERE project_id = %(project)s AND active")
HANDOFF_FIELDS = tuple(SessionHandoff._meta.concrete_fields)


def handoff_from_columns(row: dict[str, Any], prefix: str) -> SessionHandoff | None:
    """The note in ``row``'s ``<prefix><column>`` entries (None when its id is null): what a
    statement that consumed it alongside other work returned."""
    if row[f"{prefix}id"] is None:
        return None
    values = {field.attname: row[f"{prefix}{field.column}"] for field in HANDOFF_FIELDS}
    if isinstance(values["open_items"], str):  # Django loads jsonb as text
        values["open_items"] = json.loads(values["open_items"])
    return SessionHandoff(**values)


def handoff_of(*, project_id: str, session_id: str) -> SessionHandoff | None:
    """The latest note ``session_id`` left in its project (active or replaced since): what
    a resumed conversation of that session reads, rather than whichever note is newest."""
    return (SessionHandoff.objects.filter(project_id=project_id, from_session_id=session_id)
            .order_by("-created_at").first())


def active_handoff(project_id: str) -> SessionHandoff | None:
    """The project's active note, read without consuming it: a look at the note (an MCP
    resource read) is not a session starting on it."""
    return SessionHandoff.objects.filter(project_id=project_id, active=True).first()


def handoff_data(handoff: SessionHandoff | None) -> dict[str, Any] | None:
    if handoff is None:
        return None
    return {
        "handoffId": str(handoff.id),
        "projectId": handoff.project_id,
        "projectDir": handoff.project_dir,
        "fromSessionId": handoff.from_session_id,
        "fromAgent": handoff.from_agent,
        "summary": handoff.summary,
        "openItems": list(handoff.open_items or []),
        "createdAt": iso(handoff.created_at),
        "consumedAt": iso(handoff.consumed_at),
        "consumedBySessionId": handoff.consumed_by_session_id,
        "lastConfirmedAt": iso(handoff.last_confirmed_at),
        "active": handoff.active,
    }
