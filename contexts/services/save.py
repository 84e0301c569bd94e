"""The one write path for a task's content (spec 4.1.2, 7.2.1).

Validate -> Postgres in one transaction (row locked, lock rule checked, change context
set for the versioning trigger) -> Redis -> files. Redis and file failures are reported in
``savedTo`` and repaired by the next sync; they never fail or undo the save. The graph
mirror is not on this path: a trigger queues its update in the same transaction.

When the lock rule cannot object (no locked elements, no recent lock on the task) the
transaction is one statement, sent in autocommit: one Postgres round trip per save.

Call it outside ``transaction.atomic()``: the caches are written right after the commit,
and ``task_changed`` is sent on commit. Code that must change a task inside its own
transaction uses ``apply_changes`` and publishes with ``publish_committed`` on commit.
"""

from __future__ import annotations

import functools
import logging
import time
from functools import partial
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from contexts import signals
from contexts.models import TaskContext
from contexts.services import backends, cache
from contexts.services.validation import validate_changes
from locks import services as locks
from locks.services import HINT_TABLE
from orchestrator.backends import prepared
from orchestrator.backends.files import check_safe_id
from orchestrator.core.db import qualified, set_change_context
from orchestrator.core.errors import OrchestratorError, now_iso
from orchestrator.observability import metrics, tracing

logger = logging.getLogger("orchestrator.contexts")

# A change to these columns changes the registry file (6.4.2); others leave it as it is,
# which keeps a save from rewriting a 10k-task registry every time.
REGISTRY_COLUMNS = {"name", "status"}
# The columns the graph mirror shows (its outbox trigger fires on these, migration
# graph/0003): a save changing one of them queues a graph update.
MIRRORED_COLUMNS = {"task_id", "name", "status", "current_phase", "priority", "score",
                    "agent_type"}


def lock_task(task_id: str, *, code: str = "E1610") -> TaskContext:
    """The task row, locked FOR UPDATE until the surrounding transaction ends.

    ``is_active`` (is it global_context.active_task_id?) and ``may_be_locked`` (is there
    a current TaskLockHint?) come along in the same query, so publishing the save and
    the lock rule need no second round trip.
    """
    # Raw SQL: on this hot path building the equivalent ORM query cost more than running it.
    rows = list(TaskContext.objects.raw(
        f"SELECT t.*, EXISTS (SELECT 1 FROM {qualified('global_context')} g "
        "WHERE g.project_id = %s AND g.active_task_id = t.task_id) AS is_active, "
        f"EXISTS (SELECT 1 FROM {HINT_TABLE} h WHERE h.task_id = t.task_id "
        "AND h.held_until > now()) AS may_be_locked "
        f"FROM {qualified('task_contexts')} t WHERE t.task_id = %s FOR UPDATE OF t",
        [settings.MCP_PROJECT_ID, task_id]))
    if not rows:
        raise OrchestratorError(code, f"Task {task_id!r} does not exist", {"taskId": task_id})
    return rows[0]


def apply_changes(task: TaskContext, values: dict[str, Any], *, change_type: str,
                  change_summary: str | None, session_id: str | None,
                  actor: str | None) -> TaskContext:
    """UPDATE a locked task with validated column values; returns it with the new version.

    Must run inside ``transaction.atomic()`` after ``lock_task``. The trigger versions the
    row only when content really changed, so an empty or no-op change makes no version.
    """
    set_change_context(change_type=change_type, change_summary=change_summary,
                       session_id=session_id, created_by=actor or session_id)
    if not values:
        return task
    # UPDATE ... RETURNING: the row as the triggers left it (version, updated_at) comes
    # back in the same round trip. Values are adapted by their model fields, as the ORM
    # would (JSON as jsonb, scores as numeric).
    fields = [TaskContext._meta.get_field(column) for column in values]
    assignments = ", ".join(f"{connection.ops.quote_name(f.column)} = %s" for f in fields)
    params = [f.get_db_prep_save(values[f.name], connection) for f in fields]
    updated = list(TaskContext.objects.raw(
        f"UPDATE {qualified('task_contexts')} SET {assignments} WHERE id = %s RETURNING *",
        [*params, task.pk]))[0]
    for field in TaskContext._meta.concrete_fields:
        setattr(task, field.attname, getattr(updated, field.attname))
    return task


def notify_changed(task_id: str, change_type: str) -> None:
    """Send ``task_changed`` once the surrounding transaction commits."""
    transaction.on_commit(partial(signals.task_changed.send, sender=TaskContext,
                                  task_id=task_id, change_type=change_type))


def publish_committed(task: TaskContext, *, to_file: bool = True,
                      registry: bool = False) -> dict[str, bool]:
    """Redis then files for a committed task state: {database, redis, file}."""
    active = getattr(task, "is_active", None)
    if active is None:
        active = cache.active_task_id() == task.task_id
    return {"database": True,
            **backends.publish_task(task, active=active, to_file=to_file, registry=registry)}


# The fast path's one statement: lock the row, pass who and why to the versioning trigger,
# update, and bring back the new row, the columns it had before and whether it is the
# active task. The FOR UPDATE subquery reads the latest committed row (waiting for a
# concurrent writer), so "before" is the version this update replaced. With
# ``{guard}`` the row is only touched when the lock rule cannot object: no locked
# elements and no current TaskLockHint; otherwise nothing happens and the caller takes
# the full path. Autocommit makes it its own transaction: one round trip in all.
_UPDATE_SQL = """
UPDATE {tasks} t SET {assignments}
FROM (SELECT o.id, {before},
             set_config('orchestrator.change_type', %s, true)
             || set_config('orchestrator.change_summary', %s, true)
             || set_config('orchestrator.session_id', %s, true)
             || set_config('orchestrator.created_by', %s, true) AS change_context
      FROM {tasks} o WHERE o.task_id = %s{guard} FOR UPDATE OF o) old
WHERE t.id = old.id
RETURNING t.*, {before_aliases},
          EXISTS (SELECT 1 FROM {global_context} g
                  WHERE g.project_id = %s AND g.active_task_id = t.task_id) AS is_active
"""
_LOCK_RULE_GUARD = (
    " AND (o.locked_elements IS NULL OR o.locked_elements = '[]'::jsonb)"
    " AND NOT EXISTS (SELECT 1 FROM {hints} h WHERE h.task_id = o.task_id"
    " AND h.held_until > now())")


def _update_in_one_statement(task_id: str, values: dict[str, Any], *, change_type: str,
                             change_summary: str | None, session_id: str | None,
                             actor: str | None, enforce_locks: bool
                             ) -> tuple[TaskContext, dict[str, Any]] | None:
    """(updated task, its columns before) or None when the full path must decide."""
    fields = [TaskContext._meta.get_field(column) for column in values]
    sql = _update_sql(tuple(f.column for f in fields), enforce_locks)
    params = [f.get_db_prep_save(values[f.name], connection) for f in fields]
    params += [change_type or "", change_summary or "", session_id or "",
               actor or session_id or "", task_id, settings.MCP_PROJECT_ID]
    row = prepared.fetch_one(sql, params)
    if row is None:
        return None
    task = prepared.model_from_row(TaskContext, row)
    task.is_active = row["is_active"]
    return task, {column: row[f"before_{column}"] for column in _WATCHED}


# The columns whose old values the statement returns (registry, graph mirror, version).
_WATCHED = tuple(sorted(REGISTRY_COLUMNS | MIRRORED_COLUMNS | {"version"}))


@functools.cache
def _update_sql(columns: tuple[str, ...], enforce_locks: bool) -> str:
    """The statement for one set of updated columns: the same text each time, so that
    Postgres plans it once per connection (prepared) rather than on every save."""
    return _UPDATE_SQL.format(
        tasks=qualified("task_contexts"), global_context=qualified("global_context"),
        assignments=", ".join(f"{connection.ops.quote_name(c)} = %s" for c in columns),
        before=", ".join(f"o.{column} AS before_{column}" for column in _WATCHED),
        before_aliases=", ".join(f"old.before_{column}" for column in _WATCHED),
        guard=_LOCK_RULE_GUARD.format(hints=HINT_TABLE) if enforce_locks else "")


def save_task_changes(task_id: str, changes: dict[str, Any], *, change_type: str = "manual",
                      change_summary: str | None = None, session_id: str | None = None,
                      actor: str | None = None, sync_to_file: bool = True,
                      enforce_locks: bool = True) -> dict[str, Any]:
    """Apply camelCase ``changes`` to a task; the save_context_snapshot answer.

    E1612 for an unsafe id or invalid changes (nothing written), E1610 for an unknown
    task, E1613 when the lock rule refuses the change. ``graph`` in the answer says what
    the change means for the graph mirror: "queued" (the outbox row committed with the
    save; the mirror applies it off the request path), "unchanged" (nothing it shows
    changed) or "disabled".
    """
    check_safe_id(task_id)
    values = validate_changes(changes or {})
    started = time.perf_counter()
    with tracing.backend_span("postgres_update", "postgres", **{"task.id": task_id}):
        done = None
        if values and not connection.in_atomic_block:
            done = _update_in_one_statement(
                task_id, values, change_type=change_type, change_summary=change_summary,
                session_id=session_id, actor=actor, enforce_locks=enforce_locks)
        if done is not None:
            task, before = done
            changed = task.version != before["version"]
            if changed:
                notify_changed(task_id, change_type)  # autocommit: sent right away
        else:
            with transaction.atomic():
                task = lock_task(task_id)
                if enforce_locks:
                    locks.check_write_allowed(task, changes or {}, session_id)
                before = {column: getattr(task, column)
                          for column in REGISTRY_COLUMNS | MIRRORED_COLUMNS | {"version"}}
                apply_changes(task, values, change_type=change_type,
                              change_summary=change_summary, session_id=session_id,
                              actor=actor)
                changed = task.version != before["version"]
                if changed:
                    notify_changed(task_id, change_type)
    db_seconds = time.perf_counter() - started
    metrics.context_saves_total.labels("database").inc()
    metrics.context_save_duration_seconds.labels("database").observe(db_seconds)
    registry = any(getattr(task, column) != before[column] for column in REGISTRY_COLUMNS)
    saved_to = publish_committed(task, to_file=sync_to_file, registry=registry)
    graph = "disabled"
    if settings.ENABLE_NEO4J:
        graph = ("queued" if any(getattr(task, column) != before[column]
                                 for column in MIRRORED_COLUMNS) else "unchanged")
    duration_ms = round((time.perf_counter() - started) * 1000, 1)
    logger.info("Context saved", extra={
        "taskId": task_id, "version": task.version, "duration_ms": duration_ms,
        "backends": [name for name, ok in saved_to.items() if ok], "graph": graph,
        "session_id": session_id, "changeType": change_type, "changed": changed})
    return {
        "success": True,
        "taskId": task_id,
        "version": task.version,
        "savedTo": saved_to,
        "graph": graph,
        "timestamp": now_iso(),
    }
