"""Task lock tools: acquire_task_lock, renew_task_lock, release_task_lock, and the
console's release_session_locks (locks.services)."""

from __future__ import annotations

from typing import Any

from foundation.backends import redis_store
from foundation.core.errors import OrchestratorError
from foundation.core.stamps import now_iso
from foundation.core.tools import Tool, ToolContext, register
from foundation.core.tools.schema import (
    TIMESTAMP,
    array,
    boolean,
    integer,
    obj,
    safe_id,
    string,
)
from locks import services as locks
from locks import signals
from locks.services import LOCK_RULE

TASK_LOCK = obj({"taskId": string(), "sessionId": string(), "lockedAt": TIMESTAMP,
                 "expiresAt": TIMESTAMP}, ["taskId", "sessionId", "lockedAt", "expiresAt"],
                description="A task lock, stored as JSON at context:lock:{taskId}")


def _acquire(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    signals.lock_asked_for.send(sender=Tool, task_id=args["taskId"],
                                session_id=args["sessionId"])
    result = locks.acquire_lock(args["taskId"], args["sessionId"], args.get("ttlSeconds"))
    return {"success": True, **result, "timestamp": now_iso()}


def _renew(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    lock = locks.renew_lock(args["taskId"], args["sessionId"], args.get("ttlSeconds"))
    return {"success": True, "lock": lock, "timestamp": now_iso()}


def _release(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    released = locks.release_lock(args["taskId"], args["sessionId"])
    return {"success": True, "released": released, "timestamp": now_iso()}


LOCK_INPUT = obj({
    "taskId": safe_id("Task to lock"),
    "sessionId": safe_id("The session taking, renewing or releasing the lock"),
    "ttlSeconds": integer("Lock lifetime; default REDIS_LOCK_TTL (300)", minimum=1,
                          maximum=86400),
}, ["taskId", "sessionId"])

register(Tool(
    name="acquire_task_lock",
    description=(
        "Lock a task for one session (Redis SET NX EX at context:lock:{taskId}, "
        "TaskLock JSON, expiresAt = now + ttlSeconds). Re-acquiring your own lock extends "
        "it; an expired lock of another session is taken over atomically; a live lock of "
        "another session is E1613; an unknown task is E1610; Redis down is E1650; a "
        "paused session (pause_session) takes no new lock: E1633 with the pause's reason "
        "and resumeAt (renewing or releasing a lock it holds still works). " + LOCK_RULE
    ),
    input_schema=LOCK_INPUT,
    output_schema=obj({"success": boolean(), "lock": TASK_LOCK, "acquired": boolean(),
                       "tookOverExpired": boolean(), "timestamp": TIMESTAMP},
                      ["success", "lock", "acquired", "timestamp"]),
    handler=_acquire,
))

register(Tool(
    name="renew_task_lock",
    description=(
        "Extend a task lock to now + ttlSeconds. Only the owner session may renew (E1613 "
        "otherwise, also when the task is not locked). " + LOCK_RULE
    ),
    input_schema=LOCK_INPUT,
    output_schema=obj({"success": boolean(), "lock": TASK_LOCK, "timestamp": TIMESTAMP},
                      ["success", "lock", "timestamp"]),
    handler=_renew,
))

register(Tool(
    name="release_task_lock",
    description=(
        "Release a task lock. Only the owner session may release it (E1613 otherwise); "
        "releasing a task that is not locked answers released: false. " + LOCK_RULE
    ),
    input_schema=obj({"taskId": safe_id("Locked task"),
                      "sessionId": safe_id("The owner session")}, ["taskId", "sessionId"]),
    output_schema=obj({"success": boolean(), "released": boolean(), "timestamp": TIMESTAMP},
                      ["success", "released", "timestamp"]),
    handler=_release,
))




# -- operations for in-process callers only (the console) -----------------------------------

def _release_session_locks(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    try:
        released = locks.release_session_locks(args["sessionId"])
    except redis_store.RedisUnavailable as exc:
        raise OrchestratorError("E1650", "Redis is unreachable; the locks cannot be read",
                                {"reason": str(exc)[:200]}) from exc
    return {"success": True, "sessionId": args["sessionId"], "released": released,
            "timestamp": now_iso()}


register(Tool(
    name="release_session_locks",
    description=(
        "Release every task lock a session holds (the console's action for a session that "
        "will not come back): released lists the tasks freed. E1650 when Redis is down."
    ),
    input_schema=obj({"sessionId": safe_id("The session whose locks go")}, ["sessionId"]),
    output_schema=obj({"success": boolean(), "sessionId": string(),
                       "released": array(string(), "Tasks whose lock was released"),
                       "timestamp": TIMESTAMP},
                      ["success", "sessionId", "released", "timestamp"]),
    handler=_release_session_locks,
    internal=True,
))
