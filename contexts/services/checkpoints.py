"""create_checkpoint (spec 4.1.3) and reading checkpoint snapshots back safely.

A snapshot's content is ``{"global": row, "tasks": {taskId: row}}`` where rows are
``to_jsonb`` of the table rows (the same snake_case shape as context_versions.snapshot, so
one restore serves both targets). It is stored compressed (seed 003) in the spec's
``snapshot`` jsonb column as ``{"encoding": "zlib+base64", "data": ..., "checksum":
"sha256:...", "contentDigest": "sha256:...", "taskVersions": {taskId: version},
"originalSize": n, "compressedSize": m}``; rows written before compression (global and
tasks in clear) are still read. ``taskVersions`` stays in clear so that retention can
see which context versions a checkpoint needs without unpacking it.
``checksum`` covers global + tasks and is verified before any restore (E1624);
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
from django.db.models import Func, IntegerField, Q, TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from contexts.models import Checkpoint, TaskContext
from orchestrator.backends.files import check_safe_id
from orchestrator.core.db import qualified
from orchestrator.core.errors import (
    OrchestratorError,
    checkpoint_not_found,
    failure_reason,
    projects_differ,
    session_not_found,
    storage_quota_exceeded,
    task_not_found,
)
from orchestrator.core.projects import default_project, require_project
from orchestrator.core.stamps import iso, now_iso
from orchestrator.observability import metrics

logger = logging.getLogger("orchestrator.contexts")

SNAPSHOT_ENCODING = "zlib+base64"
COMPRESSION_LEVEL = 6
# Bookkeeping columns: updated_at, last_session_at, version and created_at change without the
# content changing (the versioning triggers ignore them too); id is the row's identity.
VOLATILE_KEYS = ("updated_at", "last_session_at", "version", "created_at", "id")


def canonical_sha256(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _content(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else {k: v for k, v in row.items() if k not in VOLATILE_KEYS}


def checksum_of(snapshot: dict[str, Any]) -> str:
    return canonical_sha256({"global": snapshot.get("global"), "tasks": snapshot.get("tasks")})


def content_digest(global_row: dict[str, Any] | None, tasks: dict[str, Any]) -> str:
    return canonical_sha256({"global": _content(global_row),
                             "tasks": {t: _content(row) for t, row in tasks.items()}})


def pack_snapshot(global_row: dict[str, Any] | None, tasks: dict[str, Any],
                  digest: str) -> dict[str, Any]:
    """The stored (compressed) form of a checkpoint's content."""
    content = {"global": global_row, "tasks": tasks}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str).encode()
    packed = base64.b64encode(zlib.compress(text, COMPRESSION_LEVEL)).decode("ascii")
    return {"encoding": SNAPSHOT_ENCODING, "data": packed, "checksum": checksum_of(content),
            "contentDigest": digest,
            "taskVersions": {t: row.get("version") for t, row in tasks.items()},
            "originalSize": len(text), "compressedSize": len(packed)}


def unpack_snapshot(stored: Any) -> dict[str, Any]:
    """``{"global", "tasks", "checksum", "contentDigest"}`` from either stored form.

    Raises ValueError when the stored data cannot be decoded (a corrupt checkpoint).
    """
    if not isinstance(stored, dict):
        raise ValueError("snapshot is not an object")
    if stored.get("encoding") is None:  # written before snapshots were compressed
        return stored
    if stored["encoding"] != SNAPSHOT_ENCODING:
        raise ValueError(f"unknown snapshot encoding {stored['encoding']!r}")
    try:
        content = json.loads(zlib.decompress(base64.b64decode(stored["data"], validate=True)))
    except (KeyError, TypeError, ValueError, zlib.error) as exc:
        raise ValueError(f"snapshot data cannot be decoded: {exc}") from exc
    if not isinstance(content, dict):
        raise ValueError("snapshot content is not an object")
    return {"global": content.get("global"), "tasks": content.get("tasks"),
            "checksum": stored.get("checksum"), "contentDigest": stored.get("contentDigest")}


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
    latest = Checkpoint.objects.filter(project_id=project_id, label=label, scope=scope,
                                       included_tasks=task_ids,
                                       task_id=task_ids[0] if task_ids else None)
    latest = latest.order_by("-created_at", "-checkpoint_id").first()
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
                      force: bool = False) -> dict[str, Any]:
    """Store a snapshot of a project's global context and the included tasks: the tasks'
    project, else ``project_id`` (default: the default project). E1610, E1607 (tasks of
    two projects), E1620."""
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
                snapshot = pack_snapshot(global_row, tasks, digest)
                checkpoint = Checkpoint.objects.create(
                    checkpoint_id=new_checkpoint_id(), project_id=project_id, label=label,
                    description=description,
                    checkpoint_type=checkpoint_type, task_id=task_ids[0] if task_ids else None,
                    scope=scope, included_tasks=task_ids, snapshot=snapshot,
                    created_by=actor or session_id, session_id=session_id)
                checkpoint.refresh_from_db(fields=["created_at"])
    except DatabaseError as exc:
        quota = storage_quota_exceeded(exc)
        if quota is not None:
            raise quota from None  # a refusal, not a database fault (no DatabaseError cause)
        logger.exception("checkpoint of %s not stored", task_ids or "global context")
        raise OrchestratorError("E1620", "Could not store the checkpoint",
                                {"reason": failure_reason(exc)}) from exc
    deduplicated = existing is not None
    if deduplicated:
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


def get_checkpoint(checkpoint_id: str) -> Checkpoint:
    try:
        return Checkpoint.objects.get(checkpoint_id=checkpoint_id)
    except Checkpoint.DoesNotExist:
        raise checkpoint_not_found(checkpoint_id) from None


def verified_task_row(checkpoint: Checkpoint, task_id: str) -> dict[str, Any]:
    """The task's row from a checkpoint whose checksum holds; E1624 otherwise."""
    details = {"checkpointId": checkpoint.checkpoint_id, "taskId": task_id}
    try:
        snapshot = unpack_snapshot(checkpoint.snapshot)
    except ValueError:
        snapshot = None
    if snapshot is None or snapshot.get("checksum") != checksum_of(snapshot):
        logger.error("checkpoint %s failed its checksum; refusing to restore",
                     checkpoint.checkpoint_id)
        raise OrchestratorError("E1624", f"Checkpoint {checkpoint.checkpoint_id} is corrupt: "
                                "its snapshot does not match its checksum", details)
    row = (snapshot.get("tasks") or {}).get(task_id)
    if not isinstance(row, dict):
        raise OrchestratorError("E1624", f"Checkpoint {checkpoint.checkpoint_id} does not "
                                f"include task {task_id!r}", details)
    return row


# -- list_checkpoints (seed 003: checkpoint listing with pagination) -----------------------

LIST_LIMIT_DEFAULT = 20
LIST_LIMIT_MAX = 100
_LISTED_COLUMNS = ("checkpoint_id", "project_id", "label", "description", "checkpoint_type",
                   "task_id", "scope", "included_tasks", "created_by", "session_id",
                   "created_at", "size", "original_size")


def _listed(row: dict[str, Any]) -> dict[str, Any]:
    """One checkpoint as list_checkpoints shows it: the REST browsing shape (no snapshot)
    with ``size``, the bytes it stores (its snapshot's JSON text: what counts against the
    storage quota), and ``originalSize``, its content's size before compression (None for
    a checkpoint stored before compression)."""
    original = row["original_size"]
    return {"checkpointId": row["checkpoint_id"], "projectId": row["project_id"],
            "label": row["label"], "description": row["description"],
            "checkpointType": row["checkpoint_type"], "taskId": row["task_id"],
            "scope": row["scope"], "includedTasks": list(row["included_tasks"] or []),
            "createdBy": row["created_by"], "sessionId": row["session_id"],
            "createdAt": iso(row["created_at"]), "size": row["size"],
            "originalSize": int(original) if original and original.isdigit() else None}


def _session_exists(session_id: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {qualified('active_sessions')} WHERE session_id = %s",
                       [session_id])
        return cursor.fetchone() is not None


def list_checkpoints(*, task_id: str | None = None, session_id: str | None = None,
                     label: str | None = None, limit: int = LIST_LIMIT_DEFAULT,
                     offset: int = 0, project_ids: list[str] | None = None
                     ) -> dict[str, Any]:
    """Checkpoints newest first and how many match, filtered by task (its own checkpoints
    and those that include it), session (made in it), label (exact) and ``project_ids``
    (None: every project). ``latest`` is the newest match whatever the page: with
    ``session_id``, the session's last checkpoint (what to roll back to after a crash).

    E1610 for an unknown task; E1600 for a session that neither exists nor made a
    checkpoint (checkpoints outlive their session)."""
    limit = max(1, min(LIST_LIMIT_MAX, limit))
    offset = max(0, offset)
    found = Checkpoint.objects.all()
    if project_ids is not None:
        found = found.filter(project_id__in=project_ids)
    if task_id:
        check_safe_id(task_id)
        if not TaskContext.objects.filter(task_id=task_id).exists():
            raise task_not_found(task_id)
        found = found.filter(Q(task_id=task_id) | Q(included_tasks__contains=[task_id]))
    if session_id:
        found = found.filter(session_id=session_id)
    if label is not None:
        found = found.filter(label=label)
    rows = found.annotate(
        size=Func(Cast("snapshot", TextField()), function="octet_length",
                  output_field=IntegerField()),
        original_size=KeyTextTransform("originalSize", "snapshot"),
    ).order_by("-created_at", "-checkpoint_id").values(*_LISTED_COLUMNS)
    page = list(rows[offset:offset + limit])
    # A short page that starts within the results ends them: no count needed.
    total = offset + len(page) if len(page) < limit and (page or not offset) else found.count()
    if session_id and not total and not _session_exists(session_id):
        raise session_not_found(session_id)
    latest = page[0] if page and not offset else rows.first() if total else None
    return {"checkpoints": [_listed(row) for row in page], "total": total,
            "limit": limit, "offset": offset,
            "latest": None if latest is None else _listed(latest),
            "timestamp": now_iso()}
