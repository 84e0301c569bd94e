"""create_checkpoint and reading checkpoint snapshots back safely.

A snapshot's content is ``{"global": row, "tasks": {taskId: row}}`` where rows are
``to_jsonb`` of the table rows (the same snake_case shape as context_versions.snapshot, so
one restore serves both targets). It is stored as plain JSON in the spec's ``snapshot``
jsonb column (CONTRACT.md: other programs read it with ``->>``); Postgres compresses large
values itself (TOAST, lz4 where the server has it: contexts migration 0007). Beside the
content the snapshot holds ``checksum`` ("sha256:..." over global + tasks),
``contentDigest``, ``taskVersions`` ({taskId: version}, what retention reads),
``originalSize`` (bytes of the content's canonical JSON) and, for a checkpoint of a task,
that task's ``taskId`` and ``currentPhase`` at the top level (``snapshot->>'currentPhase'``).

The checksum lives inside the snapshot rather than in a column: the spec's table keeps its
columns (other programs read them), and a copied or dumped snapshot carries the proof of
its own content. It is verified before any restore (E1624) and by the periodic check
(``checkpoint_check``). Rows written by older servers (``{"encoding": "zlib+base64",
"data": ...}``, migration 0002) are still read until migration 0007 converted them.
``contentDigest`` covers only content columns and drives deduplication: a checkpoint whose
label and content equal the latest one with that label for the same task(s) is not stored
again unless forced (a retried call). A new label is always a new checkpoint: labels are
what people roll back to, so one must never be silently dropped.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import secrets
import time
import zlib
from typing import Any

from django.db import DatabaseError, connection, transaction

from contexts.models import Checkpoint, CheckpointDetails, TaskContext
from contexts.signals import agent_of_session
from foundation.backends.files import check_safe_id
from foundation.core.db import qualified
from foundation.core.errors import (
    OrchestratorError,
    checkpoint_not_found,
    failure_reason,
    projects_differ,
    storage_quota_exceeded,
    task_not_found,
)
from foundation.core.projects import default_project, require_project
from foundation.core.stamps import iso
from foundation.observability import metrics

logger = logging.getLogger("orchestrator.contexts")

# The compressed form written before contexts migration 0007; read, never written.
LEGACY_ENCODING = "zlib+base64"
# Bookkeeping columns: updated_at, last_session_at, version and created_at change without the
# content changing (the versioning triggers ignore them too); id is the row's identity.
VOLATILE_KEYS = ("updated_at", "last_session_at", "version", "created_at", "id")


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def canonical_sha256(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(value).encode()).hexdigest()


def _content(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else {k: v for k, v in row.items() if k not in VOLATILE_KEYS}


def checksum_of(snapshot: dict[str, Any]) -> str:
    return canonical_sha256({"global": snapshot.get("global"), "tasks": snapshot.get("tasks")})


def content_digest(global_row: dict[str, Any] | None, tasks: dict[str, Any]) -> str:
    return canonical_sha256({"global": _content(global_row),
                             "tasks": {t: _content(row) for t, row in tasks.items()}})


def pack_snapshot(global_row: dict[str, Any] | None, tasks: dict[str, Any],
                  digest: str, task_id: str | None = None) -> dict[str, Any]:
    """The stored (plain JSON) form of a checkpoint's content; ``task_id``: the task the
    checkpoint is of, whose phase is repeated at the top level for SQL readers."""
    text = canonical_json({"global": global_row, "tasks": tasks})
    snapshot: dict[str, Any] = {
        "global": global_row, "tasks": tasks,
        "checksum": "sha256:" + hashlib.sha256(text.encode()).hexdigest(),
        "contentDigest": digest,
        "taskVersions": {t: row.get("version") for t, row in tasks.items()},
        "originalSize": len(text.encode())}
    if task_id and isinstance(tasks.get(task_id), dict):
        snapshot["taskId"] = task_id
        snapshot["currentPhase"] = tasks[task_id].get("current_phase")
    return snapshot


def unpack_snapshot(stored: Any) -> dict[str, Any]:
    """``{"global", "tasks", "checksum", "contentDigest", ...}`` from the plain form, or
    from the compressed form older servers wrote (until migration 0007 converted it).

    Raises ValueError when the stored data cannot be decoded (a corrupt checkpoint).
    """
    if not isinstance(stored, dict):
        raise ValueError("snapshot is not an object")
    if stored.get("encoding") is None:  # plain JSON
        return stored
    if stored["encoding"] != LEGACY_ENCODING:
        raise ValueError(f"unknown snapshot encoding {stored['encoding']!r}")
    try:
        content = json.loads(zlib.decompress(base64.b64decode(stored["data"], validate=True)))
    except (KeyError, TypeError, ValueError, zlib.error) as exc:
        raise ValueError(f"snapshot data cannot be decoded: {exc}") from exc
    if not isinstance(content, dict):
        raise ValueError("snapshot content is not an object")
    return {"global": content.get("global"), "tasks": content.get("tasks"),
            "checksum": stored.get("checksum"), "contentDigest": stored.get("contentDigest")}


def integrity_problem(stored: Any) -> str | None:
    """Why a stored snapshot cannot be trusted (undecodable, or its content no longer
    matches its checksum); None when it holds."""
    try:
        snapshot = unpack_snapshot(stored)
    except ValueError as exc:
        return str(exc)
    if not snapshot.get("checksum"):
        return "snapshot has no checksum"
    if snapshot["checksum"] != checksum_of(snapshot):
        return "snapshot content does not match its checksum"
    return None


def snapshot_for_display(checkpoint: Checkpoint) -> dict[str, Any]:
    """The checkpoint's content for people and the API (an error note if undecodable)."""
    try:
        return unpack_snapshot(checkpoint.snapshot)
    except ValueError as exc:
        return {"error": f"corrupt snapshot: {exc}"}


def new_checkpoint_id() -> str:
    return f"cp-{int(time.time() * 1000)}-{secrets.token_hex(4)}"


def scope_for(task_ids: list[str]) -> str:
    return "global" if not task_ids else "task" if len(task_ids) == 1 else "multi_task"


def _read_rows(project_id: str, task_ids: list[str]
               ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """to_jsonb of the project's global row and of every listed task, read in one statement
    each."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT to_jsonb(g) FROM {qualified('global_context')} g "
                       "WHERE project_id = %s", [project_id])
        row = cursor.fetchone()
        global_row = row[0] if row else None
        tasks: dict[str, Any] = {}
        if task_ids:
            cursor.execute(f"SELECT task_id, to_jsonb(t) FROM {qualified('task_contexts')} t "
                           "WHERE task_id = ANY(%s)", [task_ids])
            tasks = {task_id: data for task_id, data in cursor.fetchall()}
    if isinstance(global_row, str):
        global_row = json.loads(global_row)
    tasks = {k: json.loads(v) if isinstance(v, str) else v for k, v in tasks.items()}
    return global_row, tasks


def _duplicate_of(project_id: str, label: str, scope: str, task_ids: list[str],
                  digest: str) -> Checkpoint | None:
    """The latest checkpoint with this label for the same task(s), if its content equals
    ``digest``."""
    same = Checkpoint.objects.filter(project_id=project_id, label=label, scope=scope,
                                     included_tasks=task_ids,
                                     task_id=task_ids[0] if task_ids else None)
    latest = same.order_by("-created_at", "-checkpoint_id").first()
    if latest and isinstance(latest.snapshot, dict) and \
            latest.snapshot.get("contentDigest") == digest:
        return latest
    return None


def _checkpoint_project(task_ids: list[str], project_id: str | None) -> str:
    """The one project a checkpoint is of: its tasks' (E1607 when they are in two), else
    ``project_id`` or the default project (E1605 when unknown)."""
    owners = dict(TaskContext.objects.filter(task_id__in=task_ids)
                  .values_list("task_id", "project_id"))
    projects = set(owners.values())
    if len(projects) > 1:
        raise projects_differ("A checkpoint holds tasks of one project", owners)
    if projects:
        return projects.pop()
    return require_project(project_id or default_project())


def create_checkpoint(label: str, *, task_id: str | None = None,
                      include_tasks: list[str] | None = None, project_id: str | None = None,
                      description: str | None = None, checkpoint_type: str = "manual",
                      session_id: str | None = None, actor: str | None = None,
                      force: bool = False, tags: list[str] | None = None,
                      agent_id: str | None = None) -> dict[str, Any]:
    """Store a snapshot of a project's global context and the included tasks: the tasks'
    project, else ``project_id`` (default: the default project), with its ``tags`` and
    agent (``agent_id``, else the agent the session runs as). E1610, E1607 (tasks of two
    projects), E1620."""
    task_ids = list(dict.fromkeys(([task_id] if task_id else []) + list(include_tasks or [])))
    for tid in task_ids:
        check_safe_id(tid)
    scope = scope_for(task_ids)
    try:
        with transaction.atomic():
            project_id = _checkpoint_project(task_ids, project_id)
            global_row, tasks = _read_rows(project_id, task_ids)
            missing = [t for t in task_ids if t not in tasks]
            if missing:
                raise task_not_found(missing[0], missing=missing)
            digest = content_digest(global_row, tasks)
            existing = None if force else _duplicate_of(project_id, label, scope, task_ids,
                                                        digest)
            if existing is None:
                snapshot = pack_snapshot(global_row, tasks, digest,
                                         task_ids[0] if task_ids else None)
                checkpoint = Checkpoint.objects.create(
                    checkpoint_id=new_checkpoint_id(), project_id=project_id, label=label,
                    description=description,
                    checkpoint_type=checkpoint_type, task_id=task_ids[0] if task_ids else None,
                    scope=scope, included_tasks=task_ids, snapshot=snapshot,
                    created_by=actor or session_id, session_id=session_id)
                checkpoint.refresh_from_db(fields=["created_at"])
                CheckpointDetails.objects.create(
                    checkpoint_id=checkpoint.checkpoint_id, project_id=project_id,
                    tags=list(dict.fromkeys(tags or [])),
                    agent_id=agent_id or _agent_of(session_id))
    except DatabaseError as exc:
        quota = storage_quota_exceeded(exc)
        if quota is not None:
            raise quota from None  # a refusal, not a database fault (no DatabaseError cause)
        logger.exception("checkpoint of %s not stored", task_ids or "global context")
        raise OrchestratorError("E1620", "Could not store the checkpoint",
                                {"reason": failure_reason(exc)}) from exc
    deduplicated = existing is not None
    if existing is not None:
        checkpoint = existing
    else:
        metrics.checkpoints_total.labels(checkpoint_type, scope).inc()
    logger.info("Checkpoint created", extra={
        "checkpointId": checkpoint.checkpoint_id, "projectId": checkpoint.project_id,
        "scope": scope, "includedTasks": task_ids,
        "deduplicated": deduplicated, "session_id": session_id})
    return {
        "success": True,
        "checkpointId": checkpoint.checkpoint_id,
        "projectId": checkpoint.project_id,
        "label": checkpoint.label,
        "scope": checkpoint.scope,
        "includedTasks": list(checkpoint.included_tasks or []),
        "createdAt": iso(checkpoint.created_at),
        "deduplicated": deduplicated,
    }


def _agent_of(session_id: str | None) -> str | None:
    """The agent a session runs as, from whichever app knows (contexts.signals)."""
    if not session_id:
        return None
    for _, agent in agent_of_session.send(sender=Checkpoint, session_id=session_id):
        if agent:
            return agent
    return None


def get_checkpoint(checkpoint_id: str) -> Checkpoint:
    try:
        return Checkpoint.objects.get(checkpoint_id=checkpoint_id)
    except Checkpoint.DoesNotExist:
        raise checkpoint_not_found(checkpoint_id) from None


def verified_task_row(checkpoint: Checkpoint, task_id: str) -> dict[str, Any]:
    """The task's row from a checkpoint that is not marked corrupt and whose checksum holds
    now; E1624 (409) otherwise, with ``details.status`` "corrupt" and the reason."""
    details = {"checkpointId": checkpoint.checkpoint_id, "taskId": task_id}
    marked = (CheckpointDetails.objects.filter(checkpoint_id=checkpoint.checkpoint_id,
                                               status=CheckpointDetails.CORRUPT)
              .values_list("status_reason", flat=True).first())
    problem = integrity_problem(checkpoint.snapshot)
    if marked is not None and problem is None:
        problem = (f"marked corrupt by the checkpoint check ({marked}); "
                   "run manage.py check_checkpoints to verify it again")
    if problem is not None:
        logger.error("checkpoint %s is corrupt (%s); refusing to restore",
                     checkpoint.checkpoint_id, problem)
        raise OrchestratorError("E1624", f"Checkpoint {checkpoint.checkpoint_id} is corrupt: "
                                f"{problem}. It cannot be restored.",
                                {**details, "status": CheckpointDetails.CORRUPT,
                                 "reason": problem})
    row = (unpack_snapshot(checkpoint.snapshot).get("tasks") or {}).get(task_id)
    if not isinstance(row, dict):
        raise OrchestratorError("E1624", f"Checkpoint {checkpoint.checkpoint_id} does not "
                                f"include task {task_id!r}", details)
    return row
