"""``write_task``: the one door for every change to a task's content: Postgres first, then
Redis, then files.

save_context_snapshot, rollback_to, switch_task's save of the task it leaves, conflict
resolutions and the keyFiles an agent's edits add all call it, so a task write is done
one way whoever makes it (in the style of Zulip's ``do_*`` actions):

1. validate the changes (E1612, before anything is written);
2. lock the row (E1610 for an unknown task);
3. the lock rule (locks.check_write_allowed: E1613), unless ``enforce_locks`` is off;
4. hand who and why to the versioning trigger and UPDATE: the trigger writes a version
   only when content really changed;
5. when the version moved, ``task_changed`` once the transaction commits (the graph
   drains the outbox row its trigger queued in the same transaction);
6. after the commit: Redis, then the file backups; the registry file when the name or
   the status changed. A Redis or file failure is reported in ``saved_to``, never raised:
   Postgres holds the truth and the next sync repairs the copies.

When the lock rule cannot object (no locked elements, no current lock hint) and the
caller holds no transaction, steps 2-4 are one statement sent in autocommit: one
Postgres round trip per save. Inside a caller's transaction (switch_task,
resolve_conflict, the claim-overlap recorder) steps 2-5 join it and step 6 runs when it
commits (``saved_to`` is then None); a list append is one statement there too.
"""

from __future__ import annotations

import functools
import logging
import operator
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, transaction

from contexts import signals
from contexts.models import TaskContext
from contexts.services import backends, cache
from contexts.services.representation import FIELD_COLUMNS
from contexts.services.validation import LIST_LIMITS, validate_changes
from foundation.backends.files import check_safe_id
from foundation.core import prepared
from foundation.core.db import (
    CHANGE_CONTEXT_SQL,
    in_callers_transaction,
    qualified,
    retried_statement,
    set_change_context,
)
from foundation.core.errors import storage_quota_exceeded, task_not_found
from foundation.observability import metrics, tracing
from locks import services as locks
from locks.services import HINT_TABLE

logger = logging.getLogger("orchestrator.contexts")

# A change to these columns changes the registry file (``_registry.json``); others leave
# it as it is, which keeps a save from rewriting a 10k-task registry every time.
REGISTRY_COLUMNS = frozenset({"name", "status"})
# The columns the graph mirror shows: graph's outbox trigger (graph owns it and its
# column list) fires on these, and a write changing one of them queues a graph update.
# Restated here because contexts sits below graph and the save path decides at import
# which old values to return; tests/graph/test_outbox.py pins this set to the trigger's.
MIRRORED_COLUMNS = frozenset({"task_id", "name", "status", "current_phase", "priority",
                              "score", "agent_type"})
# The columns whose old values a write keeps, to tell what it changed.
WATCHED_COLUMNS = tuple(sorted(REGISTRY_COLUMNS | MIRRORED_COLUMNS | {"version"}))
_before_values = operator.itemgetter(*(f"before_{column}" for column in WATCHED_COLUMNS))
COLUMN_FIELDS = {column: name for name, column in FIELD_COLUMNS.items()}


@dataclass(frozen=True)
class TaskChanges:
    """A change to one task: ``fields`` (camelCase, what the lock rule judges) and the
    ``columns`` to write. Build it with ``validated`` from caller input; rollback builds
    it from stored values, which are written back as they were."""

    fields: dict[str, Any]
    columns: dict[str, Any]

    @classmethod
    def validated(cls, changes: Mapping[str, Any] | None) -> TaskChanges:
        """E1612 on the first invalid field."""
        return cls(dict(changes or {}), validate_changes(dict(changes or {})))

    @classmethod
    def restoring(cls, columns: Mapping[str, Any], *, changed: set[str]) -> TaskChanges:
        """Write ``columns`` back as stored; the lock rule judges only the ``changed``
        columns (a rollback that leaves a locked element as it is may go on)."""
        return cls({COLUMN_FIELDS[c]: columns[c] for c in changed}, dict(columns))


@dataclass(frozen=True)
class ListAppend:
    """Append to the list ``field`` (camelCase, e.g. keyFiles) the ``items`` it does not
    hold yet, in their order, as many as its item limit leaves room for. Nothing to add:
    nothing written. ``write_task``'s ``appended`` says which were added."""

    field: str
    items: tuple[str, ...]

    @classmethod
    def of(cls, field: str, items: list[str]) -> ListAppend:
        return cls(field, tuple(dict.fromkeys(items)))

    @property
    def column(self) -> str:
        return FIELD_COLUMNS[self.field]

    def applied_to(self, listed: Any) -> tuple[list[str], list[str]]:
        """(the items added, the whole list after) for the stored value ``listed``."""
        current = listed if isinstance(listed, list) else []
        room = max(0, LIST_LIMITS[self.field][0] - len(current))
        added = [item for item in self.items if item not in current][:room]
        return added, [*current, *added]


# What a caller may pass: camelCase changes (validated here), TaskChanges it built, a
# ListAppend, or a function of the locked row that returns camelCase changes or
# TaskChanges (for changes that depend on what the task holds now), or None when, seeing
# the row, there is nothing to write (no version, no publish).
Changes = (Mapping[str, Any] | TaskChanges | ListAppend
           | Callable[[TaskContext], "TaskChanges | Mapping[str, Any] | None"])


@dataclass
class TaskWrite:
    """What ``write_task`` did."""

    task: TaskContext  # the row as written, with the trigger's version
    changed: bool  # a new version was written
    registry: bool  # the name or the status changed (the registry file is rewritten)
    graph: str  # the graph mirror: "queued", "unchanged" or "disabled"
    # {database, redis, file} after the publish; None while it waits for the caller's commit
    saved_to: dict[str, bool] | None = field(default=None)
    # a ListAppend's items that were added
    appended: list[str] = field(default_factory=list)

    @property
    def version(self) -> int:
        return self.task.version


def write_task(task_id: str, changes: Changes, *, change_type: str,
               summary: str | None = None, session_id: str | None = None,
               actor: str | None = None, enforce_locks: bool = True,
               sync_to_file: bool = True,
               before_update: Callable[[TaskContext], None] | None = None) -> TaskWrite:
    """Apply ``changes`` to task ``task_id``; see the module docstring for the recipe.

    ``before_update(task)`` runs with the row locked, after the lock rule and before the
    UPDATE, in the same transaction (rollback_to's backup checkpoint). E1612, E1610,
    E1613, E1617 (the project's storage quota: nothing written); any other database
    failure raises as it is (the registry answers E1654/E1699).
    """
    check_safe_id(task_id)
    appending = changes if isinstance(changes, ListAppend) else None
    if appending is not None:
        # Each item as the whole list would be judged (E1612 before anything is written).
        validate_changes({appending.field: list(appending.items)})
    elif not isinstance(changes, TaskChanges) and not callable(changes):
        changes = TaskChanges.validated(changes)
    started = time.perf_counter()
    with tracing.backend_span("postgres_update", "postgres", **{"task.id": task_id}):
        done = None
        one_statement = before_update is None and not connection.in_atomic_block
        try:
            # An append is one statement inside a caller's transaction too (the claim-
            # overlap recorder appends to two tasks per overlap): it joins that
            # transaction, and its publish waits for the commit as the full path's does.
            if appending is not None and before_update is None:
                done = _append_in_one_statement(task_id, appending, change_type=change_type,
                                                summary=summary, session_id=session_id,
                                                actor=actor, enforce_locks=enforce_locks)
            elif isinstance(changes, TaskChanges) and changes.columns and one_statement:
                done = _update_in_one_statement(task_id, changes, change_type=change_type,
                                                summary=summary, session_id=session_id,
                                                actor=actor, enforce_locks=enforce_locks)
            deferred = in_callers_transaction()
            if done is None:
                with transaction.atomic():
                    done = _update_locked_row(task_id, changes, change_type=change_type,
                                              summary=summary, session_id=session_id,
                                              actor=actor, enforce_locks=enforce_locks,
                                              before_update=before_update)
        except DatabaseError as exc:
            # The storage trigger refused the version (the project is at its quota): the
            # statement, and so the write, did nothing. E1617, not a database fault.
            quota = storage_quota_exceeded(exc)
            if quota is None:
                raise
            raise quota from None  # a refusal, not a database fault (no DatabaseError cause)
    task, before, appended = done
    if before is None:  # the derived change found nothing to write
        return TaskWrite(task=task, changed=False, registry=False, graph="unchanged")
    metrics.labelled(metrics.context_saves_total, "database").inc()
    metrics.labelled(metrics.context_save_duration_seconds, "database").observe(
        time.perf_counter() - started)
    result = TaskWrite(
        task=task, changed=task.version != before["version"],
        registry=any(getattr(task, c) != before[c] for c in REGISTRY_COLUMNS),
        graph=("disabled" if not settings.ENABLE_NEO4J else
               "queued" if any(getattr(task, c) != before[c] for c in MIRRORED_COLUMNS)
               else "unchanged"),
        appended=appended)
    if deferred:
        # Who is active may change before the caller commits (switch_task): ask then.
        task.is_active = None
        transaction.on_commit(partial(publish, task, to_file=sync_to_file,
                                      registry=result.registry), robust=True)
    else:
        result.saved_to = publish(task, to_file=sync_to_file, registry=result.registry)
    logger.info("Context saved", extra={
        "taskId": task_id, "projectId": task.project_id, "version": task.version,
        "changeType": change_type,
        "changed": result.changed, "graph": result.graph, "session_id": session_id,
        "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        "backends": (["database"] if result.saved_to is None else
                     [name for name, ok in result.saved_to.items() if ok])})
    return result


def lock_task(task_id: str) -> TaskContext:
    """The task row, locked FOR UPDATE until the surrounding transaction ends (E1610).

    ``is_active`` (is it global_context.active_task_id?) and ``may_be_locked`` (is there
    a current TaskLockHint?) come along in the same query, so publishing the write and
    the lock rule need no second round trip.
    """
    # Prepared SQL: on this hot path building the equivalent ORM query cost more than
    # running it, and planning the statement each time cost Postgres more than running it
    # (0.16 of 0.20 ms at 800 agents: the claim-overlap recorder locks a task per overlap).
    row = prepared.fetch_one(_lock_task_sql(), [task_id])
    if row is None:
        raise task_not_found(task_id)
    task = _task_from_row(row)
    task.may_be_locked = row["may_be_locked"]
    return task


def _task_from_row(row: dict[str, Any]) -> TaskContext:
    """The task a statement returned (``t.*`` and ``is_active``)."""
    task = prepared.model_from_row(TaskContext, row)
    task.is_active = row["is_active"]
    return task


def _lock_task_sql() -> str:
    return (f"SELECT t.*, EXISTS (SELECT 1 FROM {qualified('global_context')} g "
            "WHERE g.project_id = t.project_id AND g.active_task_id = t.task_id) AS is_active, "
            f"EXISTS (SELECT 1 FROM {HINT_TABLE} h WHERE h.task_id = t.task_id "
            "AND h.held_until > now()) AS may_be_locked "
            f"FROM {qualified('task_contexts')} t WHERE t.task_id = %s FOR UPDATE OF t")


def publish(task: TaskContext, *, to_file: bool = True,
            registry: bool = False) -> dict[str, bool]:
    """Redis then files for a committed task state: {database, redis, file}."""
    active = getattr(task, "is_active", None)
    if active is None:
        active = cache.active_task_id(task.project_id) == task.task_id
    return {"database": True,
            **backends.publish_task(task, active=active, to_file=to_file, registry=registry)}


def notify_changed(task_id: str, change_type: str) -> None:
    """Send ``task_changed`` once the surrounding transaction commits (at once in
    autocommit)."""
    transaction.on_commit(partial(signals.task_changed.send, sender=TaskContext,
                                  task_id=task_id, change_type=change_type))


Done = tuple[TaskContext, dict[str, Any] | None, list[str]]


def _update_locked_row(task_id: str, changes: TaskChanges | ListAppend | Callable, *,
                       change_type: str, summary: str | None, session_id: str | None,
                       actor: str | None, enforce_locks: bool,
                       before_update: Callable[[TaskContext], None] | None) -> Done:
    """Steps 2-5 inside a transaction: (the updated task, its watched columns before, the
    items a ListAppend added); (the task, None, []) when a derived change or an append has
    nothing to write."""
    task = lock_task(task_id)
    appended: list[str] = []
    if isinstance(changes, ListAppend):
        appended, extended = changes.applied_to(getattr(task, changes.column))
        if not appended:
            return task, None, []
        changes = TaskChanges.validated({changes.field: extended})
    elif callable(changes):
        derived = changes(task)
        if derived is None:
            return task, None, []
        changes = derived if isinstance(derived, TaskChanges) else \
            TaskChanges.validated(derived)
    if enforce_locks:
        locks.check_write_allowed(task, changes.fields, session_id)
    if before_update is not None:
        before_update(task)
    before = {column: getattr(task, column) for column in WATCHED_COLUMNS}
    set_change_context(change_type=change_type, change_summary=summary,
                       session_id=session_id, created_by=actor or session_id)
    if changes.columns:
        _apply(task, changes.columns)
    if task.version != before["version"]:
        notify_changed(task_id, change_type)
    return task, before, appended


def _apply(task: TaskContext, values: dict[str, Any]) -> None:
    """UPDATE the locked row; the task gets the row as the triggers left it."""
    # UPDATE ... RETURNING: the new version and updated_at come back in the same round
    # trip. Values are adapted by their model fields, as the ORM would (JSON as jsonb,
    # scores as numeric).
    fields = [TaskContext._meta.get_field(column) for column in values]
    assignments = ", ".join(f"{connection.ops.quote_name(f.column)} = %s" for f in fields)
    params = [f.get_db_prep_save(values[f.name], connection) for f in fields]
    with tracing.version_save_span(task.task_id) as span:
        updated = list(TaskContext.objects.raw(
            f"UPDATE {qualified('task_contexts')} SET {assignments} WHERE id = %s RETURNING *",
            [*params, task.pk]))[0]
        tracing.set_version(span, updated.version)
    for model_field in TaskContext._meta.concrete_fields:
        setattr(task, model_field.attname, getattr(updated, model_field.attname))


# The fast path's one statement: lock the row, pass who and why to the versioning trigger,
# update, and bring back the new row, the columns it had before and whether it is the
# active task. The FOR UPDATE subquery reads the latest committed row (waiting for a
# concurrent writer), so "before" is the version this update replaced. With
# ``{guard}`` the row is only touched when the lock rule cannot object: no locked
# elements and no current TaskLockHint; otherwise nothing happens and the caller takes
# the full path. Autocommit makes it its own transaction: one round trip in all.
_IS_ACTIVE = """EXISTS (SELECT 1 FROM {global_context} g
                  WHERE g.project_id = t.project_id AND g.active_task_id = t.task_id)
          AS is_active"""
_UPDATE_SQL = """
UPDATE {tasks} t SET {assignments}
FROM (SELECT o.id, {before}, {change_context}
      FROM {tasks} o WHERE o.task_id = %s{guard} FOR UPDATE OF o) old
WHERE t.id = old.id
RETURNING t.*, {before_aliases}, {is_active}
"""
# A ListAppend's statement: the same, with the items the list does not hold yet (in their
# order, as many as the limit leaves room for) worked out from the locked row, so two
# appends to one task at once add each item once. Nothing to add: no row is touched, and
# the row comes back as it is with an empty ``appended``, so that the answer "nothing to
# add" needs no second statement (no row at all: the full path decides).
_APPEND_SQL = """
WITH old AS (
  SELECT o.id, {before}, {change_context}, l.listed,
         ARRAY(SELECT u.item FROM unnest(%s::text[]) WITH ORDINALITY AS u(item, n)
               WHERE NOT jsonb_exists(l.listed, u.item) ORDER BY u.n
               LIMIT greatest(0, %s - jsonb_array_length(l.listed))) AS added
  FROM {tasks} o,
       LATERAL (SELECT CASE WHEN jsonb_typeof(o.{column}) = 'array' THEN o.{column}
                            ELSE '[]'::jsonb END AS listed) l
  WHERE o.task_id = %s{guard} FOR UPDATE OF o),
written AS (
  UPDATE {tasks} t SET {column} = old.listed || to_jsonb(old.added) FROM old
  WHERE t.id = old.id AND cardinality(old.added) > 0
  RETURNING t.*, {before_aliases}, {is_active}, old.added AS appended)
SELECT * FROM written
UNION ALL
SELECT t.*, {before_aliases}, {is_active}, old.added AS appended
FROM {tasks} t JOIN old ON t.id = old.id WHERE cardinality(old.added) = 0
"""
_LOCK_RULE_GUARD = (
    " AND (o.locked_elements IS NULL OR o.locked_elements = '[]'::jsonb)"
    " AND NOT EXISTS (SELECT 1 FROM {hints} h WHERE h.task_id = o.task_id"
    " AND h.held_until > now())")


def _update_in_one_statement(task_id: str, changes: TaskChanges, *, change_type: str,
                             summary: str | None, session_id: str | None,
                             actor: str | None, enforce_locks: bool) -> Done | None:
    """(updated task, its watched columns before, []), or None when the full path must
    decide (an unknown task, or the lock rule might object)."""
    db = connections[DEFAULT_DB_ALIAS]  # once, rather than a lookup per use of `connection`
    sql, fields = _update_plan(tuple(changes.columns), enforce_locks)
    params = [field.get_db_prep_save(value, db)
              for field, value in zip(fields, changes.columns.values(), strict=True)]
    params += [change_type or "", summary or "", session_id or "",
               actor or session_id or "", task_id]
    return _written(_one_statement(sql, params, task_id), task_id, change_type)


def _append_in_one_statement(task_id: str, appending: ListAppend, *, change_type: str,
                             summary: str | None, session_id: str | None,
                             actor: str | None, enforce_locks: bool) -> Done | None:
    """(updated task, its watched columns before, the items added); (the task, None, [])
    when it lists them all already; None when the full path must decide (an unknown task,
    or the lock rule might object)."""
    row = _one_statement(_append_sql(appending.column, enforce_locks), [
        change_type or "", summary or "", session_id or "", actor or session_id or "",
        list(appending.items), LIST_LIMITS[appending.field][0], task_id], task_id)
    if row is not None and not row["appended"]:
        return _task_from_row(row), None, []
    return _written(row, task_id, change_type)


def _one_statement(sql: str, params: list[Any], task_id: str) -> dict[str, Any] | None:
    """Run a one-statement write, again if Postgres aborts it to break a deadlock: in
    autocommit it is its own transaction, so running it again is the whole write (inside
    a caller's transaction the caller's is what runs again). The cycle it meets: its
    version row adds to the project's storage count (a row per backend pid modulo 16,
    migration contexts/0005), so it holds the task and waits for that count row, while a
    transaction that wrote another task of the project first (an overlap batch listing a
    contested file in both tasks' keyFiles) holds the count row and waits for this task.
    Seen at 3,000 agents: one record_activity in two minutes answered E1654."""
    with tracing.version_save_span(task_id) as span:
        row = retried_statement(lambda: prepared.fetch_one(sql, params))
        tracing.set_version(span, row and row["version"])
    return row


def _written(row: dict[str, Any] | None, task_id: str, change_type: str) -> Done | None:
    """A one-statement write's returned row as (task, before, appended); sends
    ``task_changed`` when the version moved, once it is committed."""
    if row is None:
        return None
    task = _task_from_row(row)
    before = dict(zip(WATCHED_COLUMNS, _before_values(row), strict=True))
    if task.version != before["version"]:
        notify_changed(task_id, change_type)
    return task, before, list(row.get("appended") or [])


@functools.cache
def _update_plan(names: tuple[str, ...], enforce_locks: bool) -> tuple[str, tuple[Any, ...]]:
    """(the statement, the model fields) for one set of updated fields, in their order."""
    fields = tuple(TaskContext._meta.get_field(name) for name in names)
    return _update_sql(tuple(field.column for field in fields), enforce_locks), fields


@functools.cache
def _update_sql(columns: tuple[str, ...], enforce_locks: bool) -> str:
    """The statement for one set of updated columns: the same text each time, so that
    Postgres plans it once per connection (prepared) rather than on every save."""
    return _statement(_UPDATE_SQL, enforce_locks, assignments=", ".join(
        f"{connection.ops.quote_name(c)} = %s" for c in columns))


@functools.cache
def _append_sql(column: str, enforce_locks: bool) -> str:
    return _statement(_APPEND_SQL, enforce_locks, column=connection.ops.quote_name(column))


def _statement(template: str, enforce_locks: bool, **parts: str) -> str:
    """A one-statement write's text (the same each time for one shape: prepared once per
    connection)."""
    return template.format(
        tasks=qualified("task_contexts"),
        before=", ".join(f"o.{column} AS before_{column}" for column in WATCHED_COLUMNS),
        before_aliases=", ".join(f"old.before_{column}" for column in WATCHED_COLUMNS),
        change_context=CHANGE_CONTEXT_SQL,
        is_active=_IS_ACTIVE.format(global_context=qualified("global_context")),
        guard=_LOCK_RULE_GUARD.format(hints=HINT_TABLE) if enforce_locks else "", **parts)
