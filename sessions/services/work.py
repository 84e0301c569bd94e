"""Session work records (agent_sessions_sessionwork): written inside the caller's transaction.

``record_work`` is how the session services say "this session now works on this task"
(start_session writes its first record in its own statement, with ``UPSERT_WORK_SQL``);
a switch_task with a session says it through ``record_switch``. The graph mirror and
the Postgres reader both derive from these rows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from django.db import connection

from foundation.core.db import qualified
from sessions.models import SessionWork
from sessions.services import pause
from sessions.services.common import DETAIL_TABLE

WORK_TABLE = connection.ops.quote_name(SessionWork._meta.db_table)


# A session's work on a task is recorded once; a later record keeps the first start time
# and fills in an agent the first one lacked (start_session writes it in its own
# statement, with this rule).
UPSERT_WORK_SQL = (f"ON CONFLICT (session_id, task_id) DO UPDATE "
                   f"SET agent_id = COALESCE({WORK_TABLE}.agent_id, EXCLUDED.agent_id)")


def record_work(session_id: str, task_id: str) -> None:
    """Record that ``session_id`` works on ``task_id`` (first record wins the start time).

    Only for a session and a task that exist, in one project; the agent is the one the
    session registered with. Call inside the transaction of the change that starts the work.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {WORK_TABLE} (session_id, project_id, task_id, agent_id, started_at) "
            "SELECT s.session_id, s.project_id, %s, d.agent_id, now() "
            f"FROM {qualified('active_sessions')} s "
            f"LEFT JOIN {DETAIL_TABLE} d ON d.session_id = s.session_id "
            "WHERE s.session_id = %s AND EXISTS "
            f"(SELECT 1 FROM {qualified('task_contexts')} t WHERE t.task_id = %s "
            f"AND t.project_id = s.project_id) {UPSERT_WORK_SQL}",
            [task_id, session_id, task_id])


def record_switch(sender: Any, *, session_id: str | None, to_task_id: str,
                  **kwargs: Any) -> None:
    """Receiver of contexts' ``task_switched``, inside the switch's transaction: the
    switching session now works on the new task. A paused session takes no new task:
    E1633, and the switch rolls back with nothing changed."""
    if session_id:
        pause.refuse_if_paused(session_id, action="switching tasks")
        record_work(session_id, to_task_id)


def agent_of(sender: Any, *, session_id: str, **kwargs: Any) -> str | None:
    """Receiver of contexts' ``agent_of_session``: the agent a session runs as."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT agent_id FROM {DETAIL_TABLE} WHERE session_id = %s",
                       [session_id])
        row = cursor.fetchone()
    return row[0] if row else None


def forget_sessions(session_ids: list[str]) -> set[str]:
    """Delete the work records of removed sessions; the tasks they were on."""
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {WORK_TABLE} WHERE session_id = ANY(%s) RETURNING task_id",
                       [list(session_ids)])
        return {r[0] for r in cursor.fetchall()}


def forget_work_of_removed_sessions() -> int:
    """Delete the work records whose session no longer exists; how many (graph's full sync
    asks, as the mirror shows no work of a removed session)."""
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {WORK_TABLE} w WHERE NOT EXISTS (SELECT 1 FROM "
                       f"{qualified('active_sessions')} s WHERE s.session_id = w.session_id)")
        return cursor.rowcount


# Orphaned work: an unfinished task (not completed or
# archived) that a crashed session worked on and that no live (active or compacted) session
# works on. Marking the crash recovered, or a live session on the task, ends it. This is
# the one query every page asks: check_recovery, the console's overview and task list, and
# get_task_graph's ``orphaned`` flag on both graph backends.
_ORPHANED_WORK_SQL = """
SELECT t.task_id, t.name, s.session_id, s.last_heartbeat, t.project_id, t.id
FROM {work} w
JOIN {sessions} s ON s.session_id = w.session_id
JOIN {tasks} t ON t.task_id = w.task_id
WHERE s.status = 'crashed' AND COALESCE(t.status, 'pending') NOT IN ('completed', 'archived')
  AND (%(projects)s::text[] IS NULL OR w.project_id = ANY(%(projects)s::text[]))
  AND (%(tasks)s::text[] IS NULL OR t.task_id = ANY(%(tasks)s::text[]))
  AND (%(project)s::text IS NULL OR s.project_dir = %(project)s::text)
  AND NOT EXISTS (SELECT 1 FROM {work} lw JOIN {sessions} ls ON ls.session_id = lw.session_id
                  WHERE lw.project_id = w.project_id AND lw.task_id = w.task_id
                    AND ls.status IN ('active', 'compacted'))
ORDER BY s.last_heartbeat DESC NULLS LAST, t.task_id, s.session_id
"""
# For an EXISTS: is there orphaned work in the project %(project)s (an id, here), asked
# from the project's crashed sessions out (a materialised CTE, so that a generic plan of
# a prepared statement cannot start from the project's work rows instead: it ran the
# live-worker check for every one of them, 12 ms at 100 sessions).
ORPHANED_WORK_PROBE = """
WITH crashed AS MATERIALIZED (SELECT session_id FROM {sessions}
                              WHERE project_id = %(project)s AND status = 'crashed')
SELECT 1 FROM crashed c
JOIN {work} w ON w.session_id = c.session_id
JOIN {tasks} t ON t.task_id = w.task_id
WHERE COALESCE(t.status, 'pending') NOT IN ('completed', 'archived')
  AND NOT EXISTS (SELECT 1 FROM {work} lw JOIN {sessions} ls ON ls.session_id = lw.session_id
                  WHERE lw.project_id = w.project_id AND lw.task_id = w.task_id
                    AND ls.status IN ('active', 'compacted'))
""".format(work=WORK_TABLE, sessions=qualified("active_sessions"),
           tasks=qualified("task_contexts"))


class OrphanedWork(NamedTuple):
    """An orphaned task and one crashed session that worked on it."""

    task_id: str
    name: str
    session_id: str  # the crashed session
    last_heartbeat: datetime | None  # of that session
    project_id: str
    task_pk: Any  # TaskContext's primary key (the console links to it)


def orphaned_work(task_ids: set[str] | None = None, *, project_ids: list[str] | None = None,
                  project_dir: str | None = None) -> list[OrphanedWork]:
    """Orphaned work of ``project_ids`` (None: every project), ``task_ids`` (None: every
    task) and, with ``project_dir``, of the crashed sessions of that directory, newest crash
    first; a task appears once per crashed session that worked on it."""
    sql = _ORPHANED_WORK_SQL.format(work=WORK_TABLE, sessions=qualified("active_sessions"),
                                    tasks=qualified("task_contexts"))
    with connection.cursor() as cursor:
        cursor.execute(sql, {"tasks": None if task_ids is None else sorted(task_ids),
                             "projects": project_ids, "project": project_dir})
        return [OrphanedWork(*row) for row in cursor.fetchall()]


def one_per_task(rows: list[OrphanedWork]) -> list[OrphanedWork]:
    """``orphaned_work`` rows, one per task: the session that crashed on it last (the rows
    come newest crash first), in that order."""
    tasks: dict[str, OrphanedWork] = {}
    for row in rows:
        tasks.setdefault(row.task_id, row)
    return list(tasks.values())


def orphaned_tasks(task_ids: set[str] | None = None, *, project_ids: list[str] | None = None,
                   project_dir: str | None = None) -> list[OrphanedWork]:
    """The orphaned tasks (one row each, newest crash first) of ``orphaned_work``'s scope."""
    return one_per_task(orphaned_work(task_ids, project_ids=project_ids,
                                      project_dir=project_dir))


def orphaned_task_ids(task_ids: set[str] | None = None, *,
                      project_ids: list[str] | None = None) -> set[str]:
    """The ids of the orphaned tasks of ``orphaned_work``'s scope."""
    return {row.task_id for row in orphaned_work(task_ids, project_ids=project_ids)}
