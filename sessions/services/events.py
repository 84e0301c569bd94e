"""The per-session event log (append-only, numbered 1, 2, 3, ...) and scratchpad.

Sequences come from ``SessionDetail.event_count``, bumped with UPDATE ... RETURNING in
the append's transaction (one database function call, migration 0004): the row lock
serialises concurrent appends of one session, and a refused or failed insert gives the
number back, so sequences are 1..n with no gap or duplicate.
``end_session`` takes the same lock, so no event lands after a session's end.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from foundation.core import prepared
from foundation.core.db import internal_schema
from foundation.core.errors import session_not_found
from foundation.core.stamps import iso
from sessions.models import SessionDetail
from sessions.services.common import (
    CLOSED_STATUSES,
    DETAIL_TABLE,
    EVENTS_TABLE,
    fetch_dicts,
    refuse_for_status,
    session_status,
    sessions_table,
)

DEFAULT_TURNS = 30
APPEND_FUNCTION = f'"{internal_schema(settings.MCP_SCHEMA)}".append_session_event'


def lock_open_session(session_id: str, *, action: str) -> int:
    """Lock the session's detail row and return its event counter; refuse closed sessions."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {DETAIL_TABLE} (session_id, compaction_count, event_count, scratchpad,"
            " created_at) SELECT %s, 0, 0, '{}', now() WHERE EXISTS (SELECT 1 FROM "
            f"{sessions_table()} WHERE session_id = %s) ON CONFLICT (session_id) DO NOTHING",
            [session_id, session_id])
        cursor.execute(f"SELECT event_count FROM {DETAIL_TABLE} WHERE session_id = %s "
                       "FOR UPDATE", [session_id])
        row = cursor.fetchone()
    # Read the status only once the lock is held: an end_session that committed while we
    # waited is visible to this new statement.
    status = session_status(session_id)
    if row is None or status is None or status in CLOSED_STATUSES:
        raise refuse_for_status(session_id, status, action=action)
    return row[0]


def append_event(session_id: str, event_type: str, role: str, content: str,
                 parts: Any = None) -> dict[str, Any]:
    """One round trip: the database function of migration 0004 takes the row lock and the
    next sequence, checks the session is open once the lock is held, and inserts."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {APPEND_FUNCTION}(%s, %s, %s, %s, %s::jsonb, %s)",
                       [session_id, event_type, role, content,
                        None if parts is None else json.dumps(parts), list(CLOSED_STATUSES)])
        event_id, sequence, created_at, status = cursor.fetchone()
    if event_id is None:
        raise refuse_for_status(session_id, status, action="appending events")
    return {"success": True, "sessionId": session_id, "eventId": event_id,
            "sequence": sequence, "type": event_type, "role": role,
            "createdAt": iso(created_at)}


# Several sessions' events in one statement, in the order given (each LATERAL call runs as
# append_event's own: the session's lock, its next sequence, refused when it is closed).
_APPEND_EACH = f"""
SELECT e.event_id FROM unnest(%s::varchar[], %s::varchar[], %s::varchar[], %s::text[],
                              %s::jsonb[]) WITH ORDINALITY AS h(session_id, event_type, role,
                                                                content, parts, n),
LATERAL {APPEND_FUNCTION}(h.session_id, h.event_type, h.role, h.content, h.parts,
                          %s::varchar[]) AS e
ORDER BY h.n
"""


def append_events(events: list[tuple[str, str, str, str, Any]]) -> list[bool]:
    """(session id, event type, role, content, parts) events, each appended as
    ``append_event`` would, in one round trip; for each, whether it was appended (False:
    its session is closed or gone). Why: the claim-overlap recorder tells every holder of
    a batch, and one statement each cost it a round trip apiece."""
    if not events:
        return []
    rows = prepared.fetch_all(_APPEND_EACH, [
        [e[0] for e in events], [e[1] for e in events], [e[2] for e in events],
        [e[3] for e in events], [None if e[4] is None else json.dumps(e[4]) for e in events],
        list(CLOSED_STATUSES)])
    return [event_id is not None for (event_id,) in rows]


def event_data(row: dict[str, Any]) -> dict[str, Any]:
    parts = row["parts"]
    # Django's psycopg setup hands raw jsonb back as text; the ORM would decode it.
    if isinstance(parts, str):
        parts = json.loads(parts)
    return {"sequence": row["sequence"], "type": row["event_type"], "role": row["role"],
            "content": row["content"], "parts": parts,
            "createdAt": iso(row["created_at"])}


def estimate_tokens(event: dict[str, Any]) -> int:
    # About four characters per token of the JSON form, as the context bundle counts.
    return -(-len(json.dumps(event, default=str)) // 4)


def recent_events(session_id: str, *, max_turns: int | None = DEFAULT_TURNS,
                  max_tokens: int | None = None) -> dict[str, Any]:
    """The latest events: the last ``max_turns`` turns, trimmed from the oldest to fit
    ``max_tokens``. A turn starts at a user_message and holds what follows it."""
    if session_status(session_id) is None:
        raise session_not_found(session_id)
    since = 0
    if max_turns is not None:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT sequence FROM {EVENTS_TABLE} WHERE session_id = %s AND "
                "event_type = 'user_message' ORDER BY sequence DESC OFFSET %s LIMIT 1",
                [session_id, max_turns - 1])
            row = cursor.fetchone()
        since = row[0] if row else 0
    rows = fetch_dicts(
        f"SELECT sequence, event_type, role, content, parts, created_at FROM {EVENTS_TABLE} "
        "WHERE session_id = %s AND sequence >= %s ORDER BY sequence DESC",
        [session_id, since])
    events: list[dict[str, Any]] = []
    tokens = 0
    truncated = False
    for row in rows:
        event = event_data(row)
        cost = estimate_tokens(event)
        if max_tokens is not None and tokens + cost > max_tokens:
            truncated = True
            break
        events.append(event)
        tokens += cost
    events.reverse()
    return {"sessionId": session_id, "events": events, "count": len(events),
            "estimatedTokens": tokens, "truncated": truncated}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch: objects merge recursively, null deletes a key."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def get_scratchpad(session_id: str) -> dict[str, Any]:
    if session_status(session_id) is None:
        raise session_not_found(session_id)
    detail = SessionDetail.objects.filter(session_id=session_id).first()
    return {"sessionId": session_id,
            "scratchpad": dict(detail.scratchpad or {}) if detail else {},
            "updatedAt": iso(detail.scratchpad_updated_at) if detail else None}


def update_scratchpad(session_id: str, patch: dict[str, Any]) -> dict[str, Any]:
    """Merge ``patch`` into the scratchpad under the row lock (no lost concurrent updates)."""
    with transaction.atomic():
        lock_open_session(session_id, action="updating the scratchpad")
        detail = SessionDetail.objects.get(session_id=session_id)
        detail.scratchpad = merge_patch(detail.scratchpad or {}, patch)
        detail.scratchpad_updated_at = timezone.now()
        detail.save(update_fields=["scratchpad", "scratchpad_updated_at"])
    return {"success": True, "sessionId": session_id, "scratchpad": detail.scratchpad,
            "updatedAt": iso(detail.scratchpad_updated_at)}

