"""Task locks (spec 8.2): ``context:lock:{taskId}`` holding the TaskLock JSON, SET NX EX.

``check_write_allowed`` is the rule every task write goes through (save, rollback,
conflict resolution): a task locked by another session, or a change to a locked element
from a session that does not hold the task's lock, is refused with E1613.
"""

from __future__ import annotations

from typing import Any

from orchestrator.backends import redis_store
from orchestrator.errors import OrchestratorError


def lock_key(task_id: str) -> str:
    return redis_store.key("lock", task_id)


def current_lock(task_id: str) -> dict[str, Any] | None:
    """The TaskLock in Redis, or None (also None when Redis is unreachable)."""
    try:
        value = redis_store.get_json(lock_key(task_id))
    except redis_store.RedisUnavailable:
        return None
    return value if isinstance(value, dict) else None


def _touches_locked_element(locked: list[str], changes: dict[str, Any],
                            current_key_files: list[str]) -> list[str]:
    """Locked elements that ``changes`` (camelCase field -> new value) would modify."""
    hits = [field for field in changes if field in locked]
    if "keyFiles" in changes and "keyFiles" not in hits:
        before, after = set(current_key_files or []), set(changes["keyFiles"] or [])
        hits += sorted(path for path in before ^ after if path in locked)
    return hits


def check_write_allowed(task, changes: dict[str, Any], session_id: str | None) -> None:
    """Raise E1613 if ``session_id`` may not apply ``changes`` to ``task`` (a TaskContext)."""
    lock = current_lock(task.task_id)
    holder = lock.get("sessionId") if lock else None
    if holder and holder != session_id:
        raise OrchestratorError(
            "E1613", f"Task {task.task_id!r} is locked by session {holder}",
            {"taskId": task.task_id, "lockedBy": holder, "expiresAt": lock.get("expiresAt")})
    locked = list(task.locked_elements or [])
    if not locked or (holder and holder == session_id):
        return
    hits = _touches_locked_element(locked, changes, list(task.key_files or []))
    if hits:
        raise OrchestratorError(
            "E1613",
            f"{', '.join(hits)} of task {task.task_id!r} "
            f"{'is a locked element' if len(hits) == 1 else 'are locked elements'}; "
            "acquire the task lock first",
            {"taskId": task.task_id, "lockedElements": hits})
