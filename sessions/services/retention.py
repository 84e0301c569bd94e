"""What retention prunes of the sessions app (registered in AgentSessionsConfig.ready;
the rules are on orchestrator.ops.retention's page): the event logs of sessions long over
or removed, the sessions over (ended or recovered, needing no recovery) for longer than
RETENTION_EVENT_DAYS with their tool history, handoff notes replaced that long ago, the
notices delivered (or left undelivered by a session that is over) that long ago; and it
asks the foundation to drop the owner rows of sessions that no longer exist."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db import connection, transaction

from foundation.core.retention import RetentionPolicy, delete_grouped, select
from foundation.core.tools.access import forget_owners_of_removed
from sessions.models import SessionHandoff
from sessions.services.common import CLOSED_STATUSES, EVENTS_TABLE, sessions_table
from sessions.services.notices import NOTICES_TABLE

_CLOSED = ", ".join(f"'{s}'" for s in CLOSED_STATUSES)


def prune(policy: RetentionPolicy, dry_run: bool) -> dict[str, Any]:
    seconds = policy.event_days * 86400
    if dry_run:
        return {"events_by_session": Counter(
            session for _, session in select(_prunable_events_sql(), [seconds] * 2))}
    events = delete_grouped(connection.ops.quote_name(EVENTS_TABLE), _prunable_events_sql(),
                            [seconds] * 2, policy.batch_size)
    with transaction.atomic():
        owners = forget_owners_of_removed(f"SELECT session_id FROM {sessions_table()}")
    return {"events_by_session": events, "session_owners": owners,
            "sessions": _remove_sessions_long_over(seconds, policy.batch_size),
            "handoffs": _forget_replaced_handoffs(seconds),
            "notices": _forget_old_notices(seconds)}


def _prunable_events_sql() -> str:
    """SELECT id, session_id of events of long-ended or removed sessions (parameter:
    seconds, twice)."""
    return f"""
        SELECT e.id, e.session_id FROM {connection.ops.quote_name(EVENTS_TABLE)} e
        LEFT JOIN {sessions_table()} s ON s.session_id = e.session_id
        WHERE (s.session_id IS NULL AND e.created_at < now() - make_interval(secs => %s))
           OR (s.status IN ({_CLOSED}) AND s.recovery_needed IS NOT TRUE
               AND COALESCE(s.ended_at, s.last_heartbeat, s.started_at)
                   < now() - make_interval(secs => %s))
    """


def _remove_sessions_long_over(seconds: float, batch_size: int) -> int:
    """Sessions ended (or recovered) longer than ``seconds`` ago and needing no recovery:
    their events went above; the rows, tool history and detail go now. The stale-session
    sweep only closes sessions: retention is the one that deletes history."""
    from sessions.services.recovery import remove_sessions

    removed = 0
    while True:
        ids = [row[0] for row in select(
            f"SELECT session_id FROM {sessions_table()} "
            f"WHERE status IN ({_CLOSED}) AND recovery_needed IS NOT TRUE "
            "AND COALESCE(ended_at, last_heartbeat, started_at) "
            "< now() - make_interval(secs => %s) LIMIT %s", [seconds, batch_size])]
        if not ids:
            return removed
        removed += len(remove_sessions(ids))


def _forget_replaced_handoffs(seconds: float) -> int:
    """Handoff notes replaced (no longer the project's active one) that long ago."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {SessionHandoff._meta.db_table} WHERE active IS NOT TRUE "
                       "AND created_at < now() - make_interval(secs => %s)", [seconds])
        return cursor.rowcount


def _forget_old_notices(seconds: float) -> int:
    """Notices delivered long ago, or never taken by a session that is over or gone."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {NOTICES_TABLE} n WHERE n.created_at < now() - make_interval(secs => %s) "
            "AND (n.delivered_at IS NOT NULL OR NOT EXISTS (SELECT 1 FROM "
            f"{sessions_table()} s WHERE s.session_id = n.session_id "
            "AND s.status IN ('active', 'compacted')))", [seconds])
        return cursor.rowcount
