"""What an agent is handed when it starts or comes back from a compaction: which task it
works on (when it did not say) and that task's tiered context bundle (seed 001)."""

from __future__ import annotations

from typing import Any

from django.db import connection

from contexts.services.bundle import context_bundle
from orchestrator.core.db import qualified
from orchestrator.core.errors import OrchestratorError
from sessions.services.common import get_session, logger, sessions_table, tasks_table

# Task of the latest earlier session of this project directory and branch, and the
# project's active task, each only if the task still exists and is not finished (a session
# that names no task wants work to go on, not a completed or archived task): one round
# trip.
FINISHED_STATUSES = ("completed", "archived")
_RESOLVE_SQL = """
SELECT (SELECT s.task_id FROM {sessions} s JOIN {tasks} t ON t.task_id = s.task_id
        WHERE s.project_id = %(project_id)s AND s.project_dir = %(project)s
          AND s.git_branch = %(branch)s AND COALESCE(t.status, '') <> ALL(%(finished)s)
        ORDER BY s.started_at DESC NULLS LAST LIMIT 1),
       (SELECT g.active_task_id FROM {global_context} g JOIN {tasks} t
        ON t.task_id = g.active_task_id
        WHERE g.project_id = %(project_id)s AND COALESCE(t.status, '') <> ALL(%(finished)s))
"""


def resolve_task(project_id: str, project_dir: str | None,
                 git_branch: str | None) -> tuple[str | None, str | None]:
    """(taskId, source) for a session of ``project_id`` that named no task: the task of the
    most recent session on the same directory and git branch ("branch"), else the
    project's active task ("active"), else (None, None); completed and archived tasks are
    never picked."""
    sql = _RESOLVE_SQL.format(sessions=sessions_table(), tasks=tasks_table(),
                              global_context=qualified("global_context"))
    with connection.cursor() as cursor:
        cursor.execute(sql, {"project": project_dir, "branch": git_branch,
                             "project_id": project_id,
                             "finished": list(FINISHED_STATUSES)})
        branch_task, active_task = cursor.fetchone()
    if branch_task and project_dir and git_branch:
        return branch_task, "branch"
    if active_task:
        return active_task, "active"
    return None, None


def bundle_or_none(task_id: str | None, budget_tokens: int | None,
                   tiers: list[str] | None = None) -> dict[str, Any] | None:
    """The task's bundle for an answer that must not fail for it (its write is done)."""
    if not task_id or not budget_tokens:
        return None
    try:
        return context_bundle(task_id, budget_tokens, tiers)
    except OrchestratorError as exc:
        logger.warning("context bundle left out: %s", exc.message, extra={"taskId": task_id})
        return None


def bundle_for(*, task_id: str | None, session_id: str | None, budget_tokens: int,
               tiers: list[str] | None) -> dict[str, Any]:
    """get_context_bundle: for a task, or for the task of a session."""
    if task_id is None and session_id is None:
        raise OrchestratorError("E1612", "Give taskId or sessionId",
                                {"field": "taskId", "problem": "taskId or sessionId required"})
    if task_id is None:
        task_id = get_session(session_id).task_id
        if not task_id:
            raise OrchestratorError("E1610", f"Session {session_id!r} has no task",
                                    {"sessionId": session_id})
    return {"success": True, **context_bundle(task_id, budget_tokens, tiers)}
