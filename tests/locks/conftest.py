"""Helpers for the lock tests: real tasks, lock keys written straight into Redis."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from foundation.backends import redis_store
from locks import services as locks


def write_lock(task_id: str, session_id: str, *, expires_in: int) -> dict:
    """Put a TaskLock straight into Redis, as a (possibly crashed) session left it."""
    now = timezone.now()
    lock = {"taskId": task_id, "sessionId": session_id,
            "lockedAt": (now - timedelta(seconds=600)).isoformat().replace("+00:00", "Z"),
            "expiresAt": (now + timedelta(seconds=expires_in)).isoformat().replace(
                "+00:00", "Z")}
    redis_store.set_json(locks.lock_key(task_id), lock, 3600)
    return lock
