"""Secondary backends of the write path, written after Postgres commits: the Redis cache
and the file backups.

Each function reports success as a bool and never raises: a Redis or file failure must
not fail or undo a save that Postgres already committed. Failures are logged and counted
(``backend_failures_total``) and the next sync repairs them.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection

from contexts.models import TaskContext
from contexts.services import cache, representation
from foundation.backends import files, redis_store
from foundation.backends.coalesce import CoalescingWriters
from foundation.core.db import qualified
from foundation.core.stamps import now_iso
from foundation.observability import metrics, tracing

logger = logging.getLogger("orchestrator.contexts")


def cache_task(task: TaskContext, *, hot: bool) -> bool:
    """Write ``context:task:{id}`` (and ``context:hot`` when the task is the active one)."""
    started = time.perf_counter()
    try:
        cache.write_task_cache(task, hot=hot)
    except redis_store.RedisUnavailable as exc:
        metrics.backend_failures_total.labels("redis", "cache_task").inc()
        logger.warning("redis cache of task %s failed: %s", task.task_id, exc,
                       extra={"taskId": task.task_id})
        return False
    finally:
        metrics.labelled(metrics.context_save_duration_seconds, "redis").observe(
            time.perf_counter() - started)
    metrics.labelled(metrics.context_saves_total, "redis").inc()
    return True


def _file_backup(operation: str, write: Callable[[], None], task_id: str | None = None) -> bool:
    """Run one file write of the write path; an OSError is reported (log, metric), not raised."""
    if not settings.ENABLE_FILE_SYNC:
        return False
    try:
        write()
    except OSError as exc:
        metrics.backend_failures_total.labels("file", operation).inc()
        logger.warning("file backup %s failed: %s", operation, exc,
                       extra={"taskId": task_id} if task_id else {})
        return False
    return True


def write_task_file(task: TaskContext) -> bool:
    def write() -> None:
        path = files.task_file(task.task_id, task.project_id)
        # A concurrent save of a newer version may have written the file first; the lock
        # keeps its check and our write from interleaving with another writer's.
        with files.exclusive(path):
            existing = files.read_json(path)
            if isinstance(existing, dict) and isinstance(existing.get("version"), int) \
                    and existing["version"] > (task.version or 0):
                return
            wanted = representation.task_file(task)
            # A file that says exactly this already is left alone: the periodic hot sync
            # passes every active task, and rewriting (and fsyncing) thousands of
            # unchanged files every five minutes was an I/O and CPU burst under load.
            if existing != wanted:
                files.write_json_atomic(path, wanted, fsync_now=False)

    if not settings.ENABLE_FILE_SYNC:
        return False  # no file written: no file save timed either
    started = time.perf_counter()
    ok = _file_backup("task_file", write, task.task_id)
    metrics.labelled(metrics.context_save_duration_seconds, "file").observe(
        time.perf_counter() - started)
    if ok:
        metrics.labelled(metrics.context_saves_total, "file").inc()
    return ok


def write_hot_file(task: TaskContext) -> bool:
    return _file_backup("hot_file", lambda: files.write_json_atomic(
        files.hot_context_file(task.project_id),
        representation.hot_context(task),
        fsync_now=False), task.task_id)


# Postgres builds the registry's task map (and reads the active task) as JSON text in one
# query: at 10,000 tasks this is ~10x faster than loading the rows into Python and
# encoding them again.
_REGISTRY_SQL = """
SELECT COALESCE(json_object_agg(task_id, json_build_object(
         'name', name, 'status', status,
         'contextFile', 'task-agents/' || task_id || '.json',
         'lastModified', to_char(updated_at AT TIME ZONE 'UTC',
                                 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
       ORDER BY task_id), '{{}}')::text,
       (SELECT to_json(active_task_id)::text FROM {global_context} WHERE project_id = %s)
FROM {tasks} WHERE project_id = %s
"""


def write_registry(project_id: str) -> bool:
    """Rewrite the project's ``_registry.json`` (each task's name, status, file and last
    change, and the active task) from Postgres, now.

    Reading and writing happen under the file's lock, so of two writers (threads or
    processes) the one that writes last also read last: the file never goes back to an
    older state.
    """
    if not settings.ENABLE_FILE_SYNC:
        return False
    path = files.context_dir(project_id) / "_registry.json"

    def write() -> None:
        with files.exclusive(path):
            with connection.cursor() as cursor:
                cursor.execute(_REGISTRY_SQL.format(global_context=qualified("global_context"),
                                                    tasks=qualified("task_contexts")),
                               [project_id, project_id])
                tasks_json, active = cursor.fetchone()
            header = json.dumps({"version": 1, "updatedAt": now_iso()})[:-1]
            files.write_text_atomic(
                path, f'{header}, "tasks": {tasks_json}, "activeTask": {active or "null"}}}')

    return _file_backup("registry", write)


# Saves, switches and task creation ask for a rewrite of their project's registry; it
# happens off the request path.
registry_writers = CoalescingWriters("registry", write_registry)


def publish_task(task: TaskContext, *, active: bool, to_file: bool = True,
                 registry: bool = False) -> dict[str, bool]:
    """After a commit: Redis, then files. Returns what really happened ({redis, file})."""
    with tracing.backend_span("redis_update", "redis", **{"task.id": task.task_id}):
        redis_ok = cache_task(task, hot=active)
    file_ok = False
    if to_file:
        with tracing.backend_span("file_sync", "file", **{"task.id": task.task_id}):
            file_ok = write_task_file(task)
            if active:
                file_ok = write_hot_file(task) and file_ok
            if registry:
                # None: scheduled, reported when it runs
                written = registry_writers.request(task.project_id)
                file_ok = file_ok if written is None else written and file_ok
    return {"redis": redis_ok, "file": file_ok}
