"""switch_task: one transaction, then the hot context in Redis and files.

The source save (with currentTaskUpdates), global_context.active_task_id and the target's
last_session_at commit together or not at all. Both task rows are locked in task_id
order, so two opposite switches cannot deadlock.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models.functions import Now

from contexts import signals
from contexts.models import GlobalContext, TaskContext
from contexts.services import backends, relationships, representation
from contexts.services.write import TaskChanges, notify_changed, write_task
from foundation.backends.files import check_safe_id
from foundation.core.errors import (
    OrchestratorError,
    failure_reason,
    projects_differ,
    task_not_found,
)
from foundation.core.stamps import now_iso
from foundation.observability import metrics

logger = logging.getLogger("orchestrator.contexts")


def _lock_pair(from_task_id: str | None, to_task_id: str) -> dict[str, TaskContext]:
    ids = sorted({to_task_id, *([from_task_id] if from_task_id else [])})
    rows = {t.task_id: t for t in
            TaskContext.objects.select_for_update().filter(task_id__in=ids).order_by("task_id")}
    if from_task_id and from_task_id not in rows:
        raise task_not_found(from_task_id, code="E1660", field="fromTaskId")
    if to_task_id not in rows:
        raise task_not_found(to_task_id, code="E1661", field="toTaskId")
    if from_task_id and rows[from_task_id].project_id != rows[to_task_id].project_id:
        raise projects_differ(
            "switch_task moves within one project: the two tasks are in different projects",
            {t: rows[t].project_id for t in (from_task_id, to_task_id)})
    return rows


def _switch_in_db(from_task_id: str | None, to_task_id: str, changes: TaskChanges,
                  save_current_state: bool, session_id: str | None, actor: str | None):
    with transaction.atomic():
        # Both rows, in task id order: two opposite switches cannot deadlock.
        rows = _lock_pair(from_task_id, to_task_id)
        source = rows.get(from_task_id) if from_task_id else None
        if source is not None and save_current_state and changes.columns:
            # Joins this transaction; its caches and file are published on commit.
            source = write_task(source.task_id, changes, change_type="auto_save",
                                summary=f"Saved on switch to {to_task_id}",
                                session_id=session_id, actor=actor).task
        project_id = rows[to_task_id].project_id
        TaskContext.objects.filter(task_id=to_task_id).update(last_session_at=Now())
        # The active task is the project's: switching in one repository leaves the others'.
        if not GlobalContext.objects.filter(project_id=project_id).update(
                active_task_id=to_task_id):
            raise OrchestratorError("E1611", "Global context is missing",
                                    {"projectId": project_id})
        target = TaskContext.objects.get(task_id=to_task_id)
        # From Postgres, in this transaction: a switch never waits on the graph server.
        blocked_by = relationships.unfinished_blockers(to_task_id)
        notify_changed(to_task_id, "switch")
        # A switch also says which session now works on the new task: recorded by the
        # sessions app's receiver, inside this transaction.
        signals.task_switched.send(sender=TaskContext, session_id=session_id,
                                   from_task_id=from_task_id, to_task_id=to_task_id)
    return source, target, blocked_by


def switch_task(to_task_id: str, *, from_task_id: str | None = None,
                save_current_state: bool = True, current_task_updates: dict[str, Any] | None = None,
                session_id: str | None = None, actor: str | None = None) -> dict[str, Any]:
    check_safe_id(to_task_id, "toTaskId")
    if from_task_id is not None:
        check_safe_id(from_task_id, "fromTaskId")
    updates = current_task_updates or {}
    allowed = {"immediateContext", "currentPhase", "iteration"}
    if set(updates) - allowed:
        raise OrchestratorError("E1612", "currentTaskUpdates may only hold immediateContext, "
                                "currentPhase and iteration",
                                {"field": sorted(set(updates) - allowed)[0]})
    changes = TaskChanges.validated(updates)
    started = time.perf_counter()
    try:
        source, target, blocked_by = _switch_in_db(from_task_id, to_task_id, changes,
                                                   save_current_state, session_id, actor)
    except DatabaseError as exc:
        logger.exception("task switch %s -> %s failed", from_task_id, to_task_id)
        raise OrchestratorError("E1662", "The task switch failed; nothing was changed",
                                {"reason": failure_reason(exc)}) from exc
    # After the commit (and after the saved source's caches and file): the new hot
    # context everywhere, and the registry's active task.
    backends.publish_task(target, active=True, registry=True)
    duration = time.perf_counter() - started
    metrics.task_switches_total.inc()
    metrics.task_switch_duration_seconds.observe(duration)
    logger.info("Task switched", extra={
        "fromTask": from_task_id, "toTask": to_task_id, "projectId": target.project_id,
        "saved": bool(source is not None and save_current_state),
        "duration_ms": round(duration * 1000, 1), "session_id": session_id})
    result: dict[str, Any] = {
        "success": True,
        "newTask": {
            "taskId": target.task_id,
            "name": target.name,
            "status": target.status,
            "currentPhase": target.current_phase,
            "iteration": target.iteration,
            "immediateContext": representation.immediate_context(target),
            "keyFiles": list(target.key_files or []),
            "resumePrompt": target.resume_prompt,
            "blockedBy": blocked_by,
        },
        "timestamp": now_iso(),
    }
    if source is not None:
        result["previousTask"] = {"taskId": source.task_id, "saved": save_current_state,
                                  "version": source.version}
    return result
