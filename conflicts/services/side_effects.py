"""What each resolution action does to tasks, caches, files and locks.

Runs inside resolve_conflict's transaction. Task changes go through ``write_task`` (row
lock, lock rule, versioning trigger with a summary naming the conflict), which joins that
transaction and publishes to Redis and files after its commit. Any failure raises,
which rolls the whole resolution back (resolve_conflict reports it as E1644).

Task A / task B per type: file_conflict and spec_contradiction name two tasks; for
state_mismatch and data_inconsistency A is Postgres and B is the cache / file copy
(evidence.expectedValue / evidence.actualValue); lock_collision and version_divergence
concern task A only. merge and custom take resolvedValue = {taskId: {camelCase changes}}
for the conflict's task(s).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import transaction

from conflicts.models import ContextConflict
from contexts.models import TaskContext
from contexts.services import cache
from contexts.services import representation as task_repr
from contexts.services.write import Changes, lock_task, write_task
from foundation.backends import files, redis_store
from foundation.core.errors import OrchestratorError
from locks import services as locks


class _Writer:
    """Applies task changes on behalf of one resolution, through ``write_task`` inside
    resolve_conflict's transaction (caches and files follow its commit)."""

    def __init__(self, conflict: ContextConflict, action: str, session_id: str | None,
                 actor: str | None):
        self.summary = f"Resolved conflict {conflict.pk} ({conflict.conflict_type}, {action})"
        self.session_id = session_id
        self.actor = actor

    def change(self, task_id: str, changes: Changes) -> str:
        done = write_task(task_id, changes, change_type="manual", summary=self.summary,
                          session_id=self.session_id, actor=self.actor)
        if not done.changed:
            return f"{task_id}: no change needed"
        fields = sorted(changes) if isinstance(changes, dict) else ["keyFiles"]
        return f"{task_id}: {', '.join(fields)} updated (version {done.version})"


def _fail(message: str, **details: Any) -> OrchestratorError:
    return OrchestratorError("E1644", message, details or None)


def resync_cache(task_id: str) -> str:
    """Replace the cached task with the Postgres row (deleting first: the cached copy may
    claim a newer version, which the version-guarded cache write would keep)."""
    try:
        redis_store.delete(cache.task_cache_key(task_id))
    except redis_store.RedisUnavailable as exc:
        raise OrchestratorError("E1650", f"Redis is unreachable: {exc}") from exc
    exists = TaskContext.objects.filter(task_id=task_id).exists()
    if exists and not cache.refresh_task_cache(task_id):
        raise OrchestratorError("E1650", "Could not rewrite the task cache")
    return f"{task_id}: redis cache resynced from postgres"


def rewrite_file(task_id: str) -> str:
    """Overwrite the task's file backup with the Postgres row (no version guard: the file
    may claim a newer version than the database)."""
    task = lock_task(task_id)
    try:
        files.write_json_atomic(files.task_file(task_id), task_repr.task_file(task))
    except OSError as exc:
        raise OrchestratorError("E1651", f"File write failed: {exc}") from exc
    return f"{task_id}: file backup rewritten from postgres"


def _rewrite_file_after_commit(task_id: str) -> None:
    transaction.on_commit(partial(rewrite_file_committed, task_id), robust=True)


def rewrite_file_committed(task_id: str) -> None:
    task = TaskContext.objects.filter(task_id=task_id).first()
    if task is not None:
        files.write_json_atomic(files.task_file(task_id), task_repr.task_file(task))


def release_lock(conflict: ContextConflict) -> str:
    seen = (conflict.evidence or {}).get("actualValue")
    if not isinstance(seen, dict):
        raise _fail("The conflict's evidence does not hold the abandoned lock")
    if locks.release_abandoned_lock(conflict.task_a_id, seen):
        return f"{conflict.task_a_id}: abandoned lock released"
    return f"{conflict.task_a_id}: lock already gone or taken over by a live session"


def _evidence_values(conflict: ContextConflict) -> dict[str, Any]:
    value = (conflict.evidence or {}).get("actualValue")
    if not isinstance(value, dict) or not value:
        raise _fail("The conflict's evidence holds no field values to apply")
    return value


def _use_file_conflict(conflict: ContextConflict, action: str, writer: _Writer) -> list[str]:
    shared = set((conflict.evidence or {}).get("actualValue") or [])
    loser = conflict.task_b_id if action == "use_a" else conflict.task_a_id
    if not loser:
        raise _fail("file_conflict without a second task")

    def without_shared(task: TaskContext) -> dict[str, Any]:
        return {"keyFiles": [path for path in (task.key_files or []) if path not in shared]}

    return [writer.change(loser, without_shared)]


def _use_state_mismatch(conflict: ContextConflict, action: str, writer: _Writer) -> list[str]:
    if action == "use_a":
        return [resync_cache(conflict.task_a_id)]
    return [writer.change(conflict.task_a_id, _evidence_values(conflict)),
            resync_cache(conflict.task_a_id)]


def _use_data_inconsistency(conflict: ContextConflict, action: str,
                            writer: _Writer) -> list[str]:
    if action == "use_a":
        return [rewrite_file(conflict.task_a_id)]
    effect = writer.change(conflict.task_a_id, _evidence_values(conflict))
    _rewrite_file_after_commit(conflict.task_a_id)
    return [effect]


def _use_lock_collision(conflict: ContextConflict, action: str, writer: _Writer) -> list[str]:
    return [release_lock(conflict)]


def _use_version_divergence(conflict: ContextConflict, action: str,
                            writer: _Writer) -> list[str]:
    if action == "use_b":
        raise _fail("version_divergence concerns one task: use_a keeps its current state, "
                    "custom applies a corrected value")
    return [f"{conflict.task_a_id}: current state kept"]


def _use_spec_contradiction(conflict: ContextConflict, action: str,
                            writer: _Writer) -> list[str]:
    evidence = conflict.evidence or {}
    field = evidence.get("field")
    if field not in task_repr.FIELD_COLUMNS or not conflict.task_b_id:
        return ["decision recorded (evidence names no task field to change)"]
    if action == "use_a":
        return [writer.change(conflict.task_b_id, {field: evidence.get("expectedValue")})]
    return [writer.change(conflict.task_a_id, {field: evidence.get("actualValue")})]


USE_HANDLERS = {
    "file_conflict": _use_file_conflict,
    "state_mismatch": _use_state_mismatch,
    "data_inconsistency": _use_data_inconsistency,
    "lock_collision": _use_lock_collision,
    "version_divergence": _use_version_divergence,
    "spec_contradiction": _use_spec_contradiction,
}


def _apply_resolved_value(conflict: ContextConflict, value: Any, writer: _Writer) -> list[str]:
    tasks = [t for t in (conflict.task_a_id, conflict.task_b_id) if t]
    if not isinstance(value, dict) or not value:
        raise _fail("merge and custom need resolvedValue = {taskId: {field: value, ...}} for "
                    f"the conflict's task(s): {', '.join(tasks)}", tasks=tasks)
    unknown = [k for k in value if k not in tasks]
    bad = [k for k, v in value.items() if not isinstance(v, dict)]
    if unknown or bad:
        raise _fail("resolvedValue keys must be the conflict's task ids, each mapped to an "
                    "object of task changes", unknownTasks=unknown, notObjects=bad,
                    tasks=tasks)
    effects = [writer.change(task_id, value[task_id]) for task_id in tasks if task_id in value]
    if conflict.conflict_type == "state_mismatch":
        effects.append(resync_cache(conflict.task_a_id))
    elif conflict.conflict_type == "data_inconsistency":
        _rewrite_file_after_commit(conflict.task_a_id)
    elif conflict.conflict_type == "lock_collision":
        effects.append(release_lock(conflict))
    return effects


def apply(conflict: ContextConflict, action: str, resolved_value: Any, *,
          session_id: str | None, actor: str | None) -> list[str]:
    """Carry out ``action`` (not 'ignore'); returns a line per effect."""
    writer = _Writer(conflict, action, session_id, actor)
    if action in ("merge", "custom"):
        return _apply_resolved_value(conflict, resolved_value, writer)
    return USE_HANDLERS[conflict.conflict_type](conflict, action, writer)
