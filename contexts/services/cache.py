"""The Redis side of the read path: cache-aside reads and refreshes.

Writes of ``context:task:{id}`` and ``context:hot`` go through ``set_if_not_older``: a
Lua script that refuses to replace a cached copy of the same task with an OLDER version.
Two saves commit in order but may reach Redis in the opposite order, and a reader that
missed may populate the cache with what it read just before a save committed; either
would otherwise leave the older state cached after a write.
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any

from django.conf import settings

from contexts.models import TaskContext
from contexts.services import representation
from foundation.backends import redis_store
from foundation.core import prepared
from foundation.core.db import qualified
from foundation.core.errors import task_not_found
from foundation.core.projects import namespace
from foundation.observability import metrics

logger = logging.getLogger("orchestrator.contexts")

SET_IF_NOT_OLDER_LUA = """
local current = redis.call('GET', KEYS[1])
if current then
  local ok, doc = pcall(cjson.decode, current)
  if ok and type(doc) == 'table' and doc['taskId'] == ARGV[3]
     and tonumber(doc['version']) and tonumber(doc['version']) > tonumber(ARGV[2]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[4])
return 1
"""


_encode = json.JSONEncoder(default=str).encode  # json.dumps(..., default=str), built once


def task_cache_key(task_id: str) -> str:
    return redis_store.key("task", task_id)


def hot_cache_key(project_id: str) -> str:
    """``context:hot`` of the default project (the spec's key), ``context:project:<id>:hot``
    of any other."""
    space = namespace(project_id)
    return redis_store.key("project", space, "hot") if space else redis_store.key("hot")


def set_if_not_older(name: str, value: dict[str, Any], ttl: int) -> bool:
    """SET ``name`` unless it caches a newer version of the same task; raise RedisUnavailable."""
    payload = json.dumps(value, default=str)
    version = value.get("version") or 0
    return bool(redis_store.run(lambda r: r.eval(
        SET_IF_NOT_OLDER_LUA, 1, name, payload, version, value.get("taskId") or "", ttl)))


def write_task_cache(task: TaskContext, *, hot: bool) -> None:
    """Cache ``task`` (and the hot context when it is the active task) in one round trip;
    raises RedisUnavailable."""
    writes = [(task_cache_key(task.task_id), representation.task_part(task),
               settings.REDIS_TASK_CONTEXT_TTL)]
    if hot:
        writes.append((hot_cache_key(task.project_id), representation.hot_context(task),
                       settings.REDIS_HOT_CONTEXT_TTL))

    def pipelined(r) -> None:
        pipe = r.pipeline(transaction=False)
        for name, value, ttl in writes:
            pipe.eval(SET_IF_NOT_OLDER_LUA, 1, name, _encode(value),
                      value.get("version") or 0, value.get("taskId") or "", ttl)
        pipe.execute()

    redis_store.run(pipelined)


def read_cached_task(task_id: str) -> dict[str, Any] | None:
    """The cached task JSON, or None on a miss or while Redis is unreachable."""
    try:
        value = redis_store.get_json(task_cache_key(task_id))
    except redis_store.RedisUnavailable:
        return None
    return value if isinstance(value, dict) and value.get("taskId") == task_id else None


def active_task_id(project_id: str) -> str | None:
    """The project's active task (its global_context.active_task_id)."""
    # Prepared, not the ORM: every task write published after a caller's commit asks it
    # (the claim-overlap recorder, twice per overlap), and building the query cost more
    # than running it.
    row = prepared.fetch_one(f"SELECT active_task_id FROM {qualified('global_context')} "
                             "WHERE project_id = %s", [project_id])
    return row["active_task_id"] if row else None


def refresh_task_cache(task_id: str) -> bool:
    """Rewrite the task's cache (and the hot context if it is active) from Postgres.

    A task that no longer exists has its key removed. False when Redis is unreachable.
    """
    task = TaskContext.objects.filter(task_id=task_id).first()
    try:
        if task is None:
            redis_store.delete(task_cache_key(task_id))
            return False
        write_task_cache(task, hot=active_task_id(task.project_id) == task_id)
    except redis_store.RedisUnavailable as exc:
        metrics.backend_failures_total.labels("redis", "refresh_task").inc()
        logger.warning("redis refresh of task %s failed: %s", task_id, exc,
                       extra={"taskId": task_id})
        return False
    return True


def load_task_part(task_id: str) -> tuple[dict[str, Any], bool]:
    """Cache-aside read of the task part: (task JSON, came from the cache)."""
    cached = read_cached_task(task_id)
    if cached is not None:
        metrics.cache_hits_total.inc()
        logger.debug("Cache hit", extra={"taskId": task_id})  # cache operations log at DEBUG
        return cached, True
    metrics.cache_misses_total.inc()
    logger.debug("Cache miss", extra={"taskId": task_id})
    task = TaskContext.objects.filter(task_id=task_id).first()
    if task is None:
        raise task_not_found(task_id)
    data = representation.task_part(task)
    # If Redis is down the breaker has logged it; the answer from Postgres is still right.
    with contextlib.suppress(redis_store.RedisUnavailable):
        set_if_not_older(task_cache_key(task_id), data, settings.REDIS_TASK_CONTEXT_TTL)
    return data, False
