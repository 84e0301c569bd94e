"""rollback_to: restore every content column from a version or a checkpoint.

The restore is an ordinary task write (``write_task``), so the trigger records it as a NEW
version (a rollback can itself be rolled back). Backup checkpoint, restore and version
happen in one transaction with the task row locked; the caches are refreshed after the
commit. Stored values go back as they were, even where today's input limits are tighter.
"""

from __future__ import annotations

import logging
import time
from decimal import Decimal
from typing import Any

from django.db import DatabaseError

from contexts.models import ContextVersion, TaskContext
from contexts.services import checkpoints
from contexts.services.write import COLUMN_FIELDS, TaskChanges, write_task
from foundation.backends.files import check_safe_id
from foundation.core.errors import OrchestratorError
from foundation.core.stamps import now_iso
from foundation.observability import metrics

logger = logging.getLogger("orchestrator.contexts")


def target_row(task_id: str, target_type: str, version: int | None,
               checkpoint_id: str | None) -> dict[str, Any]:
    """The snake_case row to restore: E1612 for an incomplete target, E1622/E1623/E1624."""
    if target_type == "version":
        if version is None:
            raise OrchestratorError("E1612", "target.version is required for a version target",
                                    {"field": "target.version"})
        row = (ContextVersion.objects.filter(task_id=task_id, version=version)
               .values_list("snapshot", flat=True).first())
        if row is None:
            raise OrchestratorError("E1623", f"Task {task_id!r} has no version {version}",
                                    {"taskId": task_id, "version": version})
        if not isinstance(row, dict):
            raise OrchestratorError("E1624", f"Version {version} of {task_id!r} is unreadable",
                                    {"taskId": task_id, "version": version})
        return row
    if not checkpoint_id:
        raise OrchestratorError("E1612", "target.checkpointId is required for a checkpoint "
                                "target", {"field": "target.checkpointId"})
    return checkpoints.verified_task_row(checkpoints.get_checkpoint(checkpoint_id), task_id)


def restored_values(row: dict[str, Any]) -> dict[str, Any]:
    """Column values of every content column in a to_jsonb row (absent -> NULL)."""
    values = {column: row.get(column) for column in COLUMN_FIELDS}
    if values.get("name") is None:
        raise OrchestratorError("E1624", "The target state has no task name", {})
    if values["score"] is not None:
        values["score"] = Decimal(str(values["score"]))
    return values


def preview(task: TaskContext, target_type: str, version: int | None = None,
            checkpoint_id: str | None = None) -> list[dict[str, Any]]:
    """Field-by-field differences a rollback would make: [{field, current, restored}]."""
    values = restored_values(target_row(task.task_id, target_type, version, checkpoint_id))
    changes = []
    for column, new in values.items():
        current = getattr(task, column)
        if column == "score":
            current = None if current is None else Decimal(current)
        if current != new:
            changes.append({"field": COLUMN_FIELDS[column], "current": current,
                            "restored": new})
    return changes


def rollback_to(task_id: str, target_type: str, *, version: int | None = None,
                checkpoint_id: str | None = None, create_backup: bool = True,
                session_id: str | None = None, actor: str | None = None) -> dict[str, Any]:
    check_safe_id(task_id)
    if target_type not in ("version", "checkpoint"):
        raise OrchestratorError("E1612", "target.type must be 'version' or 'checkpoint'",
                                {"field": "target.type"})
    started = time.perf_counter()
    identifier: str | int = version if target_type == "version" else checkpoint_id
    summary = (f"Rollback to version {version}" if target_type == "version"
               else f"Rollback to checkpoint {checkpoint_id}")
    backup: dict[str, str] = {}

    def restore(task: TaskContext) -> TaskChanges:
        values = restored_values(target_row(task_id, target_type, version, checkpoint_id))
        return TaskChanges.restoring(
            values, changed={c for c, v in values.items() if getattr(task, c) != v})

    def back_up(task: TaskContext) -> None:
        try:
            backup["checkpointId"] = checkpoints.create_checkpoint(
                f"Backup before {summary.lower()}", task_id=task_id, checkpoint_type="auto",
                description=f"Automatic backup of {task_id} v{task.version}",
                session_id=session_id, actor=actor)["checkpointId"]
        except OrchestratorError as exc:
            # The backup's database failure is the rollback's: E1624, as every database
            # failure of rollback_to (its tool's database_code), not E1620.
            if isinstance(exc.__cause__, DatabaseError):
                raise exc.__cause__ from None
            raise

    done = write_task(task_id, restore,
                      change_type="manual" if target_type == "version" else "recovery",
                      summary=summary, session_id=session_id, actor=actor,
                      before_update=back_up if create_backup else None)
    task = done.task
    metrics.rollbacks_total.labels(target_type).inc()
    logger.info("Rollback executed", extra={
        "taskId": task_id, "projectId": task.project_id,
        "target": f"{target_type}:{identifier}",
        "backupCreated": bool(backup), "version": task.version,
        "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        "session_id": session_id})
    result: dict[str, Any] = {
        "success": True,
        "taskId": task_id,
        "rolledBackTo": {"type": target_type, "identifier": identifier},
        "restoredState": {"currentPhase": task.current_phase, "iteration": task.iteration,
                          "status": task.status},
        "version": task.version,
        "savedTo": done.saved_to,
        "timestamp": now_iso(),
    }
    if backup:
        result["backupCheckpointId"] = backup["checkpointId"]
    return result
