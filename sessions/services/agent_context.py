"""What an agent is handed when it starts or comes back from a compaction: which task it
works on (when it did not say) and that task's tiered context bundle (HOT, WARM, COLD)."""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any

from django.db import connection

from contexts.services.bundle import bundle_statement, context_bundle
from contexts.services.tasks import create_task
from foundation.core import prepared
from foundation.core.db import qualified
from foundation.core.errors import OrchestratorError, project_not_found
from foundation.core.models import Project
from foundation.core.prepared import Statement
from foundation.core.projects import check_project_id
from foundation.core.tools.schema import MAX_TASK_ID_LENGTH
from sessions.services.common import get_session, logger, sessions_table, tasks_table

# Whether the project exists and its name (a task made for a branch is named after it),
# the task of the latest earlier session of this project directory and branch, and the
# project's active task, each only if the task still exists and is not finished (a session
# that names no task wants work to go on, not a completed or archived task): one round
# trip, prepared (planning it cost more than running it).
FINISHED_STATUSES = ("completed", "archived")
_RESOLVE_SQL = """
SELECT EXISTS (SELECT 1 FROM {projects} p WHERE p.id = %(project_id)s) AS known,
       (SELECT p.name FROM {projects} p WHERE p.id = %(project_id)s) AS project_name,
       (SELECT s.task_id FROM {sessions} s JOIN {tasks} t ON t.task_id = s.task_id
        WHERE s.project_id = %(project_id)s AND s.project_dir = %(project)s
          AND s.git_branch = %(branch)s AND COALESCE(t.status, '') <> ALL(%(finished)s)
        ORDER BY s.started_at DESC NULLS LAST LIMIT 1) AS branch_task,
       (SELECT g.active_task_id FROM {global_context} g JOIN {tasks} t
        ON t.task_id = g.active_task_id
        WHERE g.project_id = %(project_id)s AND COALESCE(t.status, '') <> ALL(%(finished)s))
         AS active_task
"""


def resolve_task(project_id: str, project_dir: str | None, git_branch: str | None, *,
                 create: bool = False, session_id: str | None = None
                 ) -> tuple[str | None, str | None]:
    """(taskId, source) for a session of ``project_id`` that named no task: the task of the
    most recent session on the same directory and git branch ("branch"); with ``create``,
    the project's task of that branch if someone made it ("branchTask"); the project's
    active task ("active"); with ``create``, a new task for the branch, or for the
    directory without git ("created"); else (None, None). Completed and archived tasks are
    never picked. E1612 / E1605 for a malformed or unknown project."""
    sql = _RESOLVE_SQL.format(projects=connection.ops.quote_name(Project._meta.db_table),
                              sessions=sessions_table(), tasks=tasks_table(),
                              global_context=qualified("global_context"))
    row = prepared.fetch_one(sql, {"project": project_dir, "branch": git_branch,
                                   "project_id": check_project_id(project_id),
                                   "finished": list(FINISHED_STATUSES)})
    if not row["known"]:
        raise project_not_found(project_id)
    branch_task, active_task = row["branch_task"], row["active_task"]
    if branch_task and project_dir and git_branch:
        return branch_task, "branch"
    work = _work_of(project_id, row["project_name"], project_dir, git_branch) if create \
        else None
    if work is not None and work.existing is not None:
        owner, status = work.existing
        if owner == project_id and status not in FINISHED_STATUSES:
            return work.task_id, "branchTask"
    if active_task:
        return active_task, "active"
    if work is not None:
        return _create_work_task(project_id, work, session_id), "created"
    return None, None


class _Work:
    """The task a branch (or, without git, a directory) gets when its first session names
    none: a readable id from the project and the branch, the branch as its name, and the
    (project, status) of a task that has that id already, if one does."""

    def __init__(self, task_id: str, name: str, description: str,
                 existing: tuple[str, str | None] | None) -> None:
        self.task_id, self.name, self.description = task_id, name, description
        self.existing = existing


def _slug(text: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")
    return re.sub(r"-{2,}", "-", cleaned) or "work"


def _work_of(project_id: str, project_name: str | None, project_dir: str | None,
             git_branch: str | None) -> _Work | None:
    repository = _slug(project_name or project_id.rsplit(":", 1)[-1])
    if git_branch:
        task_id, name = f"{repository}-{_slug(git_branch)}", git_branch
        description = (f"Work on branch {git_branch} of {project_name or project_id}, made "
                       "by its first session (rename it, or switch_task to another task).")
    elif project_dir:
        name = os.path.basename(project_dir.rstrip("/")) or "root"
        task_id = _slug(name)
        description = (f"Work in {project_dir} (not a git repository), made by its first "
                       "session (rename it, or switch_task to another task).")
    else:
        return None
    # The id is made distinct when another project has it already (ids are unique across
    # the server: two repositories may both have a branch main). One round trip reads the
    # id's owner and whichever of the two ids is taken.
    digest = hashlib.sha256(project_id.encode()).hexdigest()[:6]
    plain = task_id[:MAX_TASK_ID_LENGTH]
    distinct = f"{task_id[:MAX_TASK_ID_LENGTH - 7]}-{digest}"
    taken = {row[0]: (row[1], row[2]) for row in prepared.fetch_all(
        _TASKS_BY_ID.format(tasks=tasks_table()), [list({task_id, plain, distinct})])}
    owner = taken.get(task_id, (None,))[0]
    chosen = plain if owner is None or owner == project_id else distinct
    return _Work(chosen, name, description, taken.get(chosen))


_TASKS_BY_ID = "SELECT task_id, project_id, status FROM {tasks} WHERE task_id = ANY(%s)"


def _create_work_task(project_id: str, work: _Work, session_id: str | None) -> str:
    try:
        create_task(work.task_id, {"name": work.name, "status": "in_progress",
                                   "description": work.description},
                    project_id=project_id, session_id=session_id,
                    created_by="session start")
    except OrchestratorError as exc:
        if exc.code != "E1614":  # made by a session that started at the same moment
            raise
    return work.task_id


def bundle_read(task_id: str | None, budget_tokens: int | None) -> Statement | None:
    """The statement ``bundle_or_none`` reads with, for a caller that sends it in a round
    trip of its own; None when no bundle is wanted or the task id is not one it can read
    (``bundle_or_none`` then says why)."""
    if not task_id or not budget_tokens:
        return None
    try:
        return bundle_statement(task_id)
    except OrchestratorError:
        return None


def bundle_or_none(task_id: str | None, budget_tokens: int | None,
                   tiers: list[str] | None = None, *,
                   prefetched: tuple[Statement, dict[str, Any] | None] | None = None
                   ) -> dict[str, Any] | None:
    """The task's bundle for an answer that must not fail for it (its write is done).
    ``prefetched``: (``bundle_read``'s statement, the row it read)."""
    if not task_id or not budget_tokens:
        return None
    try:
        return context_bundle(task_id, budget_tokens, tiers, prefetched=prefetched)
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
