"""Creating and reading tasks and the project's global context."""

from __future__ import annotations

import functools
import logging
from contextlib import nullcontext
from typing import Any, cast

from django.db import DatabaseError, connection, transaction
from django.db.models import Field

from contexts.models import GlobalContext, TaskContext
from contexts.services.sync import ACTIVE_STATUSES
from contexts.services.validation import validate_changes
from contexts.services.write import notify_changed, publish
from foundation.backends.files import check_safe_id
from foundation.core import prepared
from foundation.core.db import CHANGE_CONTEXT_SQL, qualified
from foundation.core.errors import OrchestratorError, storage_quota_exceeded, task_not_found
from foundation.core.models import Project
from foundation.core.projects import check_project_id, default_project, require_project
from foundation.core.stamps import iso
from foundation.core.tools.schema import MAX_TASK_ID_LENGTH

logger = logging.getLogger("orchestrator.contexts")


def require_task(task_id: str, *, code: str = "E1610", field: str = "taskId") -> None:
    """Raise ``task_not_found`` unless the task exists (one indexed lookup)."""
    if not TaskContext.objects.filter(task_id=task_id).exists():
        raise task_not_found(task_id, code=code, field=field)


def refuse_unknown_task_lock(sender: Any, task_id: str, **kwargs: Any) -> None:
    """Receiver of locks' ``lock_asked_for``: no lock on a task that does not exist."""
    require_task(task_id)


def get_global_context(project_id: str) -> GlobalContext:
    """The project's global context row (E1611 when it is missing)."""
    try:
        return GlobalContext.objects.get(project_id=project_id)
    except GlobalContext.DoesNotExist:
        raise OrchestratorError(
            "E1611", f"Global context for project {project_id!r} is missing",
            {"projectId": project_id}) from None


def project_of_task(task_id: str) -> str | None:
    """The project a task is in, or None when there is no such task."""
    return TaskContext.objects.filter(task_id=task_id).values_list(
        "project_id", flat=True).first()


def status_counts(project_id: str, recent_seconds: float) -> dict[str, int]:
    """The project's tasks by status, one statement: {total (not archived), completed,
    in_progress, recently_completed (completed within ``recent_seconds``)}."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FILTER (WHERE COALESCE(status, '') <> 'archived'), "
            "count(*) FILTER (WHERE status = 'completed'), "
            "count(*) FILTER (WHERE status = 'in_progress'), "
            "count(*) FILTER (WHERE status = 'completed' AND updated_at >= now() - "
            f"make_interval(secs => %s)) FROM {qualified('task_contexts')} "
            "WHERE project_id = %s", [recent_seconds, project_id])
        total, completed, in_progress, recent = cursor.fetchone()
    return {"total": total, "completed": completed, "in_progress": in_progress,
            "recently_completed": recent}


def active_tasks(project_ids: list[str] | None, limit: int) -> list[dict[str, Any]]:
    """The unfinished tasks of ``project_ids`` (None: every project), most recently
    changed first, at most ``limit``: {taskId, name, projectId, status, updatedAt}."""
    tasks = TaskContext.objects.filter(status__in=ACTIVE_STATUSES)
    if project_ids is not None:
        tasks = tasks.filter(project_id__in=project_ids)
    rows = tasks.order_by("-updated_at", "task_id").values_list(
        "task_id", "name", "project_id", "status", "updated_at")[:limit]
    return [{"taskId": task_id, "name": name, "projectId": project_id, "status": status,
             "updatedAt": iso(updated_at)}
            for task_id, name, project_id, status, updated_at in rows]


# A task's insert in one statement, one round trip (it was six: the project's check,
# BEGIN, the versioning trigger's change context, the INSERT, COMMIT, and the row read
# again for what the database filled in; through the ORM they were 45 % of a creating
# start_session's CPU): the change context set in the statement's own FROM, the row
# written only if the project exists and the id is free, and returned whole. The columns
# are those Django's create would write: every field without a database default, and a
# field with one only when it is given.
_INSERT_TASK = """
INSERT INTO {tasks} AS t ({columns})
SELECT {values}
FROM (SELECT {change_context}) AS change_context
WHERE EXISTS (SELECT 1 FROM {projects} p WHERE p.id = %s)
ON CONFLICT (task_id) DO NOTHING
RETURNING t.*
"""


@functools.cache
def _insert_plan(given: frozenset[str]) -> tuple[str, tuple[Field, ...]]:
    """(the statement, its fields in order) for a task given the fields ``given``: the
    same text for the same set, so Postgres plans it once per connection (prepared)."""
    # Field.has_db_default is Django's (5.0+) own; django-stubs does not declare it.
    fields = tuple(f for f in TaskContext._meta.concrete_fields if not f.primary_key
                   and (f.name in given
                        or not f.has_db_default()))  # type: ignore[attr-defined]
    return _INSERT_TASK.format(
        tasks=qualified("task_contexts"),
        projects=connection.ops.quote_name(Project._meta.db_table),
        columns=", ".join(connection.ops.quote_name(f.column) for f in fields),
        values=", ".join(["%s"] * len(fields)), change_context=CHANGE_CONTEXT_SQL), fields


def create_task(task_id: str, fields: dict[str, Any], *, project_id: str | None = None,
                session_id: str | None = None, created_by: str | None = None
                ) -> dict[str, Any]:
    """Insert a task with camelCase ``fields`` into ``project_id`` (default: the default
    project; version 1 is recorded by the trigger), then cache and back it up. E1612
    invalid, E1605 unknown project, E1614 the id exists (in any project: task ids are
    unique across the server), E1617 the project's storage quota (nothing written)."""
    task_id = check_safe_id(task_id)
    project_id = check_project_id(project_id or default_project())
    if len(task_id) > MAX_TASK_ID_LENGTH:
        raise OrchestratorError(
            "E1612", f"taskId is {len(task_id)} characters long; a new task id is at most "
            f"{MAX_TASK_ID_LENGTH} (it must fit its backup file's name)",
            {"field": "taskId", "problem": f"longer than {MAX_TASK_ID_LENGTH} characters"})
    values = {**validate_changes(fields), "task_id": task_id, "project_id": project_id}
    sql, columns = _insert_plan(frozenset(values))
    params = [f.get_db_prep_save(values[f.name] if f.name in values else f.get_default(),
                                 connection) for f in columns]
    params += ["manual", "Task created", session_id or "", created_by or session_id or "",
               project_id]
    try:
        # Inside a transaction, a refused insert (the quota) must not end it: a savepoint.
        with transaction.atomic() if connection.in_atomic_block else nullcontext():
            row = prepared.fetch_one(sql, params)
    except DatabaseError as exc:  # version 1 would pass the project's storage quota
        quota = storage_quota_exceeded(exc)
        if quota is None:
            raise
        raise quota from None  # a refusal, not a database fault (no DatabaseError cause)
    if row is None:
        require_project(project_id)
        raise OrchestratorError("E1614", f"Task {task_id!r} already exists",
                                {"taskId": task_id})
    task = cast(TaskContext, prepared.model_from_row(TaskContext, row))
    notify_changed(task_id, "manual")
    saved_to = publish(task, registry=True)
    logger.info("task created", extra={"taskId": task_id, "projectId": task.project_id,
                                       "version": task.version})
    return {
        "success": True,
        "taskId": task.task_id,
        "projectId": task.project_id,
        "version": task.version,
        "createdAt": iso(task.created_at),
        "savedTo": saved_to,
    }
