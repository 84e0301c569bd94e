"""Who else holds a path: live claims joined with what a reader shows of their
session and task."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection

from claims.services.claimants import CLAIMS_TABLE, Claimant, live_seconds
from foundation.core import prepared
from foundation.core.db import qualified
from foundation.core.stamps import iso
from sessions.models import SessionDetail

# -- who else holds a path ------------------------------------------------------------------

@dataclass
class Holder:
    project_id: str
    path: str
    session_id: str
    task_id: str | None
    agent_id: str | None
    task_name: str | None
    task_status: str | None
    doing: str | None
    claimed_at: datetime
    touched_at: datetime
    expires_at: datetime
    held: bool
    seconds_ago: float

    def as_dict(self) -> dict[str, Any]:
        return {"projectId": self.project_id, "path": self.path,
                "sessionId": self.session_id, "taskId": self.task_id,
                "taskName": self.task_name, "taskStatus": self.task_status,
                "agentId": self.agent_id, "doing": self.doing,
                "state": "held" if self.held else "recent",
                "claimedAt": iso(self.claimed_at), "lastEditAt": iso(self.touched_at),
                "expiresAt": iso(self.expires_at),
                "secondsSinceEdit": round(self.seconds_ago, 1)}


# Live claims with what a reader shows of their session and task. {where} narrows them.
_HOLDERS = """
SELECT c.project_id, c.path, c.session_id, c.task_id, d.agent_id, t.name, t.status,
       COALESCE(NULLIF(t.immediate_context->>'workingOn', ''), t.current_phase),
       c.claimed_at, c.touched_at, c.expires_at, c.expires_at > now() AS held,
       extract(epoch FROM now() - c.touched_at)
FROM {claims} c
JOIN {sessions} s ON s.session_id = c.session_id
LEFT JOIN {details} d ON d.session_id = c.session_id
LEFT JOIN {tasks} t ON t.task_id = c.task_id
WHERE c.released_at IS NULL
  AND c.expires_at > now() - make_interval(secs => %(recent)s)
  AND s.status IN ('active', 'compacted')
  AND s.last_heartbeat > now() - make_interval(secs => %(live)s)
  AND {where}
ORDER BY c.path, c.touched_at DESC
"""


def holders_query(where: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The holders statement narrowed by ``where``, and its parameters."""
    sql = _HOLDERS.format(claims=CLAIMS_TABLE, sessions=qualified("active_sessions"),
                          details=SessionDetail._meta.db_table,
                          tasks=qualified("task_contexts"), where=where)
    return sql, {"recent": settings.FILE_CLAIM_RECENT_SECONDS, "live": live_seconds(), **params}


def holders_from(rows: list[tuple[Any, ...]]) -> list[Holder]:
    return [Holder(*row[:11], bool(row[11]), float(row[12] or 0)) for row in rows]


def holders_where(where: str, params: dict[str, Any]) -> list[Holder]:
    """Unprepared: each listing's ``where`` differs (the hot paths prepare their own)."""
    sql, params = holders_query(where, params)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return holders_from(cursor.fetchall())


_OTHERS = ("c.project_id = %(project)s AND c.path = ANY(%(paths)s::text[]) "
           "AND c.session_id <> %(me)s "
           "AND (%(task)s::text IS NULL OR c.task_id IS DISTINCT FROM %(task)s::text)")


def other_holders_query(who: Claimant, paths: list[str]) -> tuple[str, dict[str, Any]]:
    """The statement of claims on ``paths`` that concern ``who``: other sessions, other
    tasks (rows for ``holders_from``). Run prepared: every claim of a file someone else
    holds asks, and planning the join cost ~0.9 ms of Postgres time each, more than
    running it."""
    return holders_query(_OTHERS, {"project": who.project_id, "paths": paths,
                                   "me": who.session_id, "task": who.task_id})


def other_holders(who: Claimant, paths: list[str]) -> list[Holder]:
    """Claims on ``paths`` that concern ``who`` (``other_holders_query``)."""
    return holders_from(prepared.fetch_all(*other_holders_query(who, paths)))
