"""Helpers for the conflict tests: real tasks, real Redis keys, real files."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from locks import services as locks
from orchestrator.backends import redis_store


@pytest.fixture
def make_task(tools):
    def make(task_id: str, **fields):
        body = {"taskId": task_id, "name": fields.pop("name", f"Task {task_id}"), **fields}
        return tools.ok("create_task", body)
    return make


def write_lock(task_id: str, session_id: str, *, expires_in: int) -> dict:
    """Put a TaskLock straight into Redis, as a (possibly crashed) session left it."""
    now = timezone.now()
    lock = {"taskId": task_id, "sessionId": session_id,
            "lockedAt": (now - timedelta(seconds=600)).isoformat().replace("+00:00", "Z"),
            "expiresAt": (now + timedelta(seconds=expires_in)).isoformat().replace(
                "+00:00", "Z")}
    redis_store.set_json(locks.lock_key(task_id), lock, 3600)
    return lock


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    # admin_client creates a user; the default PBKDF2 costs ~2 s per hash on this machine.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
