"""A task's lock as the console shows it, on the task page and the
rollback confirmation: the holder session (a link to its page), its agent when known,
since when and until when, whether it is still held, and the task's lockedElements.

The lock is read from Redis (``context:lock:{taskId}``, locks/services.py) as the write
path reads it: a lock whose expiresAt is past is shown, but as expired (it protects
nothing). Releasing it is the registry's ``release_task_lock`` with the holder's session id
(``run_tool``, so it is audited as ``admin:<user>``): only that lock goes, and if another
session took the task over since, E1613 says so and nothing is released.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import reverse

from contexts.models import TaskContext
from foundation.backends import redis_store
from locks import services as locks
from sessions.models import ActiveSession, SessionDetail, SessionWork

# Who may release another session's task lock from the console: a person who may change
# tasks (superusers have every permission). Everyone else sees the lock, not the action.
RELEASE_PERMISSION = "contexts.change_taskcontext"


def can_release(request: HttpRequest) -> bool:
    user = request.user
    return bool(user.is_active and user.is_staff and user.has_perm(RELEASE_PERMISSION))


def _agent(session_id: str, task_id: str) -> str | None:
    agent = (SessionDetail.objects.filter(session_id=session_id)
             .values_list("agent_id", flat=True).first())
    if agent:
        return agent
    return (SessionWork.objects.filter(session_id=session_id, task_id=task_id)
            .exclude(agent_id=None).values_list("agent_id", flat=True).first())


def task_lock(task: TaskContext) -> dict[str, Any] | None:
    """What the pages show about the lock of ``task``; None when there is nothing to say.

    {unknown: True} when Redis is unreachable. Otherwise, if a lock key exists: sessionId,
    agent, sessionStatus, sessionUrl, lockedAt, expiresAt (datetimes), held; and
    lockedElements when the task has any.
    """
    elements = list(task.locked_elements or [])
    try:
        lock = next(iter(locks.scan_locks([task.task_id])), None)
    except redis_store.RedisUnavailable:
        return {"unknown": True, "lockedElements": elements}
    if lock is None:
        return {"lockedElements": elements} if elements else None
    holder = str(lock.get("sessionId") or "")
    session = ActiveSession.objects.filter(session_id=holder).only("id", "status").first() \
        if holder else None
    locked_at = lock.get("lockedAt")
    return {
        "sessionId": holder,
        "agent": _agent(holder, task.task_id) if holder else None,
        "sessionStatus": session.status if session else None,
        "sessionUrl": reverse("admin:agent_sessions_activesession_change", args=[session.pk])
        if session else None,
        "lockedAt": locks.expires_at({"expiresAt": locked_at}) if locked_at else None,
        "expiresAt": locks.expires_at(lock),
        "held": not locks.is_expired(lock),
        "lockedElements": elements,
    }
