"""Task locks: ``context:lock:{taskId}`` holding the TaskLock JSON, SET NX EX.

A lock is logically held until its ``expiresAt`` (REDIS_LOCK_TTL after it was taken or
last renewed). The Redis key itself lives LOCK_GRACE_SECONDS longer: a session that
crashed while holding a lock leaves a key whose ``expiresAt`` is past, and that is what
detect_conflicts reports as ``lock_collision``. An expired lock is NOT held:
another session may take it over (atomically, WATCH/MULTI), and writes are not refused.

``check_write_allowed`` is the rule every task write goes through (save, rollback,
conflict resolution): a task locked by another session, or a change to a locked element
from a session that does not hold the task's lock, is refused with E1613.

Every acquisition or renewal first commits a ``TaskLockHint`` (the task may be locked
until then), so the write path can skip the Redis lookup for the many tasks nobody has
locked lately. A lock key written straight into Redis by another program, without a
hint, is therefore not seen by saves: take locks through these functions (the
acquire/renew tools).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from operator import methodcaller
from typing import Any

import redis
from django.conf import settings
from django.db import connection
from django.utils import timezone

from foundation.backends import redis_store
from foundation.core.db import qualified
from foundation.core.errors import OrchestratorError
from foundation.core.stamps import iso
from locks import signals
from locks.models import TaskLockHint

# The rule in words, for tool descriptions and docs (save_context_snapshot, rollback_to, ...).
LOCK_RULE = (
    "Lock rule (E1613): while a session holds a task's lock, a save, rollback or conflict "
    "resolution of that task from any other session is refused with E1613. Independently, "
    "a change to one of the task's lockedElements (a field name such as 'keyFiles', or a "
    "key file path) is refused with E1613 unless it comes from the session holding the "
    "task lock. A lock whose expiresAt is past is not held: any session may take it over, "
    "and detect_conflicts reports it as a lock_collision."
)
HINT_TABLE = connection.ops.quote_name(TaskLockHint._meta.db_table)
# How long a lock key outlives its expiresAt, so an abandoned lock can still be detected.
LOCK_GRACE_SECONDS = 3600
_WATCH_ATTEMPTS = 5
# Sentinel for _watched: delete the key instead of writing a new value.
DELETE = object()


def lock_key(task_id: str) -> str:
    return redis_store.key("lock", task_id)


def _parse(raw: str | bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def expires_at(lock: dict[str, Any]) -> datetime | None:
    try:
        return datetime.fromisoformat(str(lock.get("expiresAt")))
    except ValueError:
        return None


def is_expired(lock: dict[str, Any], now: datetime | None = None) -> bool:
    """True when the lock's expiresAt is past (or unreadable: such a lock protects nothing)."""
    moment = expires_at(lock)
    return moment is None or moment <= (now or timezone.now())


def current_lock(task_id: str) -> dict[str, Any] | None:
    """The TaskLock in Redis, expired or not, or None (also None when Redis is unreachable)."""
    try:
        value = redis_store.get_json(lock_key(task_id))
    except redis_store.RedisUnavailable:
        return None
    return value if isinstance(value, dict) else None


def live_lock(task_id: str) -> dict[str, Any] | None:
    """The TaskLock only while it is held (expiresAt in the future)."""
    lock = current_lock(task_id)
    return lock if lock and not is_expired(lock) else None


def _stamp(moment: datetime) -> str:
    # TaskLock times are written to the millisecond, as every other client writes them.
    return iso(moment, timespec="milliseconds")


def _new_lock(task_id: str, session_id: str, ttl: int) -> dict[str, Any]:
    now = timezone.now()
    return {"taskId": task_id, "sessionId": session_id, "lockedAt": _stamp(now),
            "expiresAt": _stamp(now + timedelta(seconds=ttl))}


def _locked_error(task_id: str, lock: dict[str, Any] | None, verb: str) -> OrchestratorError:
    holder = lock.get("sessionId") if lock else None
    message = (f"Task {task_id!r} is locked by session {holder}" if holder
               else f"Task {task_id!r} is not locked")
    return OrchestratorError(
        "E1613", f"{message}; only the lock owner may {verb} it",
        {"taskId": task_id, "lockedBy": holder,
         "expiresAt": lock.get("expiresAt") if lock else None})


def _redis_down(exc: Exception) -> OrchestratorError:
    return OrchestratorError("E1650", "Redis is unreachable; task locks are unavailable",
                             {"reason": str(exc)[:200]})


def _watched(task_id: str, decide) -> Any:
    """Run ``decide(current_lock) -> (new_value | None | DELETE, result)`` atomically.

    WATCH the key, read it, and commit the decision in MULTI/EXEC; if another client
    changed the key in between, EXEC fails and we decide again on the fresh value, so of
    two sessions racing for the same lock exactly one wins.
    """
    name = lock_key(task_id)

    def operation(r: redis.Redis) -> Any:
        with r.pipeline() as pipe:
            for _ in range(_WATCH_ATTEMPTS):
                try:
                    pipe.watch(name)
                    raw = pipe.get(name)
                    write, result = decide(_parse(raw), raw)
                    if write is None:
                        pipe.unwatch()
                        return result
                    pipe.multi()
                    if write is DELETE:
                        pipe.delete(name)
                    else:
                        pipe.set(name, json.dumps(write), ex=write_ttl(write))
                    pipe.execute()
                    return result
                except redis.WatchError:
                    continue
        raise redis_store.RedisUnavailable("lock key kept changing; try again")

    try:
        return redis_store.run(operation)
    except redis_store.RedisUnavailable as exc:
        raise _redis_down(exc) from exc


def write_ttl(lock: dict[str, Any]) -> int:
    """Key TTL: until expiresAt plus the grace period in which it is reported as abandoned."""
    moment = expires_at(lock) or timezone.now()
    remaining = int((moment - timezone.now()).total_seconds())
    return max(remaining, 1) + LOCK_GRACE_SECONDS


# How much longer than the lock a hint lasts: covers clock drift between this host and
# the database's.
HINT_MARGIN_SECONDS = 60


def hint_lock(task_id: str, ttl: int) -> None:
    """Commit "``task_id`` may be locked for ``ttl`` seconds" before the Redis key is set.

    Runs in autocommit (or the caller's transaction): the hint must be visible to every
    save before the lock it announces exists. Never shortens an existing hint.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {HINT_TABLE} (task_id, project_id, held_until) "
            f"SELECT %s, COALESCE((SELECT project_id FROM {qualified('task_contexts')} "
            "WHERE task_id = %s), %s), now() + make_interval(secs => %s) "
            f"ON CONFLICT (task_id) DO UPDATE SET held_until = "
            f"GREATEST({HINT_TABLE}.held_until, EXCLUDED.held_until)",
            [task_id, task_id, settings.MCP_PROJECT_ID, ttl + HINT_MARGIN_SECONDS])


def acquire_lock(task_id: str, session_id: str, ttl: int | None = None) -> dict[str, Any]:
    """Take the task lock for ``session_id``: {lock, acquired, tookOverExpired}.

    Free key: SET NX EX. A lock this session already holds is extended. A lock whose
    expiresAt is past is taken over. A live lock of another session: E1613. A receiver
    of ``lock_requested`` may refuse first (a paused session: E1633), nothing written.
    """
    signals.lock_requested.send(sender=TaskLockHint, task_id=task_id, session_id=session_id)
    ttl = ttl or settings.REDIS_LOCK_TTL
    hint_lock(task_id, ttl)
    lock = _new_lock(task_id, session_id, ttl)
    try:
        taken = redis_store.run(lambda r: r.set(lock_key(task_id), json.dumps(lock),
                                                nx=True, ex=ttl + LOCK_GRACE_SECONDS))
    except redis_store.RedisUnavailable as exc:
        raise _redis_down(exc) from exc
    if taken:
        return {"lock": lock, "acquired": True, "tookOverExpired": False}

    def decide(current, raw):
        mine = bool(current) and current.get("sessionId") == session_id
        if current and not mine and not is_expired(current):
            return None, (current, False)
        fresh = _new_lock(task_id, session_id, ttl)
        if mine and not is_expired(current):
            fresh["lockedAt"] = current.get("lockedAt", fresh["lockedAt"])
        return fresh, (fresh, bool(current) and not mine)

    result, took_over = _watched(task_id, decide)
    if result.get("sessionId") != session_id:
        raise _locked_error(task_id, result, "take")
    return {"lock": result, "acquired": True, "tookOverExpired": took_over}


def renew_lock(task_id: str, session_id: str, ttl: int | None = None) -> dict[str, Any]:
    """Push the owner's expiresAt to now + ttl; E1613 for anyone else or a missing lock.

    An owner may renew a lock that expired as long as nobody took it over meanwhile.
    """
    ttl = ttl or settings.REDIS_LOCK_TTL
    hint_lock(task_id, ttl)

    def decide(current, raw):
        if not current or current.get("sessionId") != session_id:
            return None, current
        fresh = {**_new_lock(task_id, session_id, ttl),
                 "lockedAt": current.get("lockedAt") or _stamp(timezone.now())}
        return fresh, fresh

    result = _watched(task_id, decide)
    if not result or result.get("sessionId") != session_id:
        raise _locked_error(task_id, result, "renew")
    return result


def release_lock(task_id: str, session_id: str) -> bool:
    """Delete the owner's lock; False if there was none; E1613 if another session holds it."""

    def decide(current, raw):
        if current is None:
            return None, False
        if current.get("sessionId") != session_id:
            return None, current
        return DELETE, True

    result = _watched(task_id, decide)
    if isinstance(result, dict):
        raise _locked_error(task_id, result, "release")
    return result


def release_session_locks(session_id: str) -> list[str]:
    """Release every task lock ``session_id`` holds (console action); the task ids freed.

    Raises RedisUnavailable when the locks cannot be read.
    """
    freed = []
    for lock in list(scan_locks()):
        if lock.get("sessionId") == session_id and release_abandoned_lock(lock["taskId"], lock):
            freed.append(lock["taskId"])
    return sorted(freed)


def release_abandoned_lock(task_id: str, seen: dict[str, Any]) -> bool:
    """Delete the lock only if it is still exactly ``seen`` (the one reported as abandoned).

    A session that took the task over since holds a different lock, which stays.
    """

    def decide(current, raw):
        return (DELETE, True) if current == seen else (None, False)

    return _watched(task_id, decide)


def scan_locks(task_ids: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Every TaskLock in Redis (expired ones included); raises RedisUnavailable."""
    if task_ids is not None:
        names = [lock_key(t) for t in task_ids]
    else:
        pattern = lock_key("*")
        names = redis_store.run(lambda r: list(r.scan_iter(match=pattern, count=1000)))
    for start in range(0, len(names), 1000):
        chunk = names[start:start + 1000]
        values = redis_store.run(methodcaller("mget", chunk))
        for raw in values:
            lock = _parse(raw)
            if lock and isinstance(lock.get("taskId"), str):
                yield lock


def _touches_locked_element(locked: list[str], changes: dict[str, Any],
                            current_key_files: list[str]) -> list[str]:
    """Locked elements that ``changes`` (camelCase field -> new value) would modify."""
    hits = [field for field in changes if field in locked]
    if "keyFiles" in changes and "keyFiles" not in hits:
        before, after = set(current_key_files or []), set(changes["keyFiles"] or [])
        hits += sorted(path for path in before ^ after if path in locked)
    return hits


def check_write_allowed(task, changes: dict[str, Any], session_id: str | None) -> None:
    """Raise E1613 if ``session_id`` may not apply ``changes`` to ``task`` (a TaskContext).

    Only a live lock counts: one whose expiresAt is past protects nothing (its session
    is presumed gone; detect_conflicts reports it as a lock_collision). A task loaded
    with ``may_be_locked`` False (no current TaskLockHint) has no live lock to look up.
    """
    lock = live_lock(task.task_id) if getattr(task, "may_be_locked", True) else None
    holder = lock.get("sessionId") if lock else None
    if lock and holder and holder != session_id:
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
