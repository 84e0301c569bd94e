"""sync_hot_context: rewrite Redis and the file backups from Postgres.

This is how a Redis or file failure on the write path gets repaired. Cache writes use the
same version guard as saves, so a sync racing a save never puts the older state back.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings

from contexts.models import GlobalContext, TaskContext
from contexts.services import backends, cache, representation
from foundation.backends import files, redis_store
from foundation.backends.files import check_safe_id
from foundation.core.errors import OrchestratorError, task_not_found
from foundation.core.projects import is_default
from foundation.core.stamps import iso, now_iso
from foundation.observability import metrics

logger = logging.getLogger("orchestrator.contexts")
CHUNK = 100
# "All active" tasks when no taskIds are given: those still being worked on.
ACTIVE_STATUSES = ("pending", "in_progress", "blocked")
Progress = Callable[[int, int], None]


def _chunks(queryset, size: int) -> Iterator[list[TaskContext]]:
    chunk: list[TaskContext] = []
    for task in queryset.iterator(chunk_size=size):
        chunk.append(task)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _cache_chunk(tasks: list[TaskContext]) -> None:
    """One round trip for a hundred version-guarded cache writes; may raise."""
    def write(r):
        pipe = r.pipeline(transaction=False)
        for task in tasks:
            data = representation.task_part(task)
            pipe.eval(cache.SET_IF_NOT_OLDER_LUA, 1, cache.task_cache_key(task.task_id),
                      json.dumps(data, default=str), task.version or 0, task.task_id,
                      settings.REDIS_TASK_CONTEXT_TTL)
        pipe.execute()
    redis_store.run(write)


def write_project_constants(project: GlobalContext) -> None:
    files.write_json_atomic(
        files.context_dir(project.project_id) / "shared" / "project-constants.json", {
            "projectId": project.project_id, "projectName": project.project_name,
            "description": project.description, **representation.global_part(project),
            "updatedAt": iso(project.updated_at)})


def sync_hot_context(*, sync_redis: bool = True, sync_files: bool = True,
                     task_ids: list[str] | None = None, update_registry: bool = True,
                     project_ids: list[str] | None = None,
                     progress: Progress | None = None) -> dict[str, Any]:
    """The sync's answer; when some target failed, E1650 (only Redis failed), E1651
    (only files failed) or E1653 (both), details = that answer.

    Every project's tasks, hot context, registry and constants (``project_ids``: only
    these projects'); with ``task_ids``, those tasks and their projects' files.
    """
    started = time.perf_counter()
    sync_files = sync_files and settings.ENABLE_FILE_SYNC
    tasks = TaskContext.objects.all()
    if task_ids is not None:
        for task_id in task_ids:
            check_safe_id(task_id)
        tasks = tasks.filter(task_id__in=task_ids)
        if project_ids is not None:
            tasks = tasks.filter(project_id__in=project_ids)
        found = set(tasks.values_list("task_id", flat=True))
        missing = [t for t in task_ids if t not in found]
        if missing:
            raise task_not_found(missing[0], missing=missing)
    else:
        tasks = tasks.filter(status__in=ACTIVE_STATUSES)
        if project_ids is not None:
            tasks = tasks.filter(project_id__in=project_ids)
    projects = GlobalContext.objects.order_by("project_id")
    if task_ids is not None:
        projects = projects.filter(project_id__in=tasks.values("project_id"))
    elif project_ids is not None:
        projects = projects.filter(project_id__in=project_ids)
        known = set(projects.values_list("project_id", flat=True))
        if set(project_ids) - known:
            raise OrchestratorError("E1611", "Global context is missing",
                                    {"projectIds": sorted(set(project_ids) - known)})
    tasks = tasks.order_by("task_id")
    total = tasks.count()
    synced = {"redis": {"hotContext": False, "taskContexts": 0},
              "files": {"registry": False, "taskContexts": 0, "hotContext": False}}
    errors: list[str] = []
    done = 0
    for chunk in _chunks(tasks, CHUNK):
        if sync_redis:
            try:
                _cache_chunk(chunk)
                synced["redis"]["taskContexts"] += len(chunk)
            except redis_store.RedisUnavailable as exc:
                errors.append(f"redis: task contexts {chunk[0].task_id}..{chunk[-1].task_id}: "
                              f"{exc}")
        if sync_files:
            written = sum(1 for task in chunk if backends.write_task_file(task))
            synced["files"]["taskContexts"] += written
            if written < len(chunk):
                errors.append(f"file: {len(chunk) - written} task context file(s) failed")
        done += len(chunk)
        if progress:
            progress(done, total)
    for project in projects:
        _sync_project_files(project, sync_redis=sync_redis, sync_files=sync_files,
                            update_registry=update_registry, synced=synced, errors=errors)
    duration = time.perf_counter() - started
    metrics.cache_sync_duration_seconds.observe(duration)
    result = {"success": not errors, "synced": synced, "errors": errors,
              "timestamp": now_iso()}
    logger.info("Hot context synced", extra={
        "tasks": total, "errors": len(errors), "duration_ms": round(duration * 1000, 1)})
    if errors:
        raise OrchestratorError(failure_code(errors), f"Sync failed: {len(errors)} "
                                f"target(s) failed: {errors[0]}", result)
    return result


# The backend a failed target belongs to (each error starts with it), and its spec code.
BACKEND_CODES = {"redis": "E1650", "file": "E1651"}


def failure_code(errors: list[str]) -> str:
    """The code for a sync with these failed targets: the failing backend's own (E1650
    REDIS_SYNC_FAILED, E1651 FILE_SYNC_FAILED) when only one failed, E1653 PARTIAL_SYNC
    ("some backends failed") when both did."""
    failed = {error.split(":", 1)[0] for error in errors}
    return BACKEND_CODES[failed.pop()] if len(failed) == 1 else "E1653"


def _sync_project_files(project: GlobalContext, *, sync_redis: bool, sync_files: bool,
                        update_registry: bool, synced: dict[str, Any],
                        errors: list[str]) -> None:
    """One project's hot context (Redis, file), registry and constants file. ``synced``
    reports the hot context and registry as written when they were, in every project."""
    where = "" if is_default(project.project_id) else f" of {project.project_id}"
    active = (TaskContext.objects.filter(task_id=project.active_task_id).first()
              if project.active_task_id else None)
    if active is not None and sync_redis:
        try:
            cache.write_task_cache(active, hot=True)
            synced["redis"]["hotContext"] = True
        except redis_store.RedisUnavailable as exc:
            errors.append(f"redis: hot context{where}: {exc}")
    if not sync_files:
        return
    if active is not None:
        if backends.write_hot_file(active):
            synced["files"]["hotContext"] = True
        else:
            errors.append(f"file: _hot_context.json{where} failed")
    if update_registry:
        if backends.write_registry(project.project_id):
            synced["files"]["registry"] = True
        else:
            errors.append(f"file: _registry.json{where} failed")
    try:
        write_project_constants(project)
    except OSError as exc:
        errors.append(f"file: shared/project-constants.json{where}: {exc}")
