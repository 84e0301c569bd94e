"""Session work records (graph_session_work): written inside the caller's transaction.

``record_work`` is how the session and context services say "this session now works on
this task". The graph mirror and the Postgres reader both derive from these rows.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from graph.models import SessionWork
from orchestrator.db import qualified
from sessions.services.common import DETAIL_TABLE

WORK_TABLE = connection.ops.quote_name(SessionWork._meta.db_table)


def record_work(session_id: str, task_id: str, *, agent_id: str | None = None,
                started_at: datetime | None = None) -> None:
    """Record that ``session_id`` works on ``task_id`` (first record wins the start time).

    Only for a session and a task that exist; the agent defaults to the one the session
    registered with. Call inside the transaction of the change that starts the work.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {WORK_TABLE} (session_id, task_id, agent_id, started_at) "
            "SELECT s.session_id, %s, COALESCE(%s, d.agent_id), COALESCE(%s, now()) "
            f"FROM {qualified('active_sessions')} s "
            f"LEFT JOIN {DETAIL_TABLE} d ON d.session_id = s.session_id "
            "WHERE s.session_id = %s AND EXISTS "
            f"(SELECT 1 FROM {qualified('task_contexts')} t WHERE t.task_id = %s) "
            "ON CONFLICT (session_id, task_id) DO UPDATE "
            f"SET agent_id = COALESCE({WORK_TABLE}.agent_id, EXCLUDED.agent_id)",
            [task_id, agent_id, started_at, session_id, task_id])


def forget_sessions(session_ids: list[str]) -> set[str]:
    """Delete the work records of removed sessions; the tasks they were on."""
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {WORK_TABLE} WHERE session_id = ANY(%s) RETURNING task_id",
                       [list(session_ids)])
        return {r[0] for r in cursor.fetchall()}
