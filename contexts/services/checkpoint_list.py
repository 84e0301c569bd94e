"""list_checkpoints: checkpoints a page at a time, with what an operator needs to
trust one before rolling back to it: newest first, with each checkpoint's size, hash,
status (active / archived / corrupt), tags and agent."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import F, Func, IntegerField, OuterRef, Q, Subquery, TextField, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Coalesce

from contexts.models import Checkpoint, CheckpointDetails, TaskContext
from foundation.backends.files import check_safe_id
from foundation.core.db import qualified
from foundation.core.errors import session_not_found, task_not_found
from foundation.core.stamps import iso, now_iso

LIST_LIMIT_DEFAULT = 20
LIST_LIMIT_MAX = 100
_LISTED_COLUMNS = ("checkpoint_id", "project_id", "label", "description", "checkpoint_type",
                   "task_id", "scope", "included_tasks", "created_by", "session_id",
                   "created_at", "size", "original_size", "stored_bytes", "hash",
                   "status", "tags", "agent_id")


def _listed(row: dict[str, Any]) -> dict[str, Any]:
    """One checkpoint as list_checkpoints shows it: the REST browsing shape (no snapshot)
    with ``size``, the bytes of its snapshot's JSON text (what counts against the storage
    quota), ``storedBytes``, what Postgres stores for it (after its own compression),
    ``originalSize``, its content's canonical JSON, ``hash``, the snapshot's checksum, and
    ``status``, ``tags``, ``agentId`` (checkpoint details; active, none, unknown for a
    checkpoint made before them)."""
    original = row["original_size"]
    return {"checkpointId": row["checkpoint_id"], "projectId": row["project_id"],
            "label": row["label"], "description": row["description"],
            "checkpointType": row["checkpoint_type"], "taskId": row["task_id"],
            "scope": row["scope"], "includedTasks": list(row["included_tasks"] or []),
            "createdBy": row["created_by"], "sessionId": row["session_id"],
            "createdAt": iso(row["created_at"]), "size": row["size"],
            "originalSize": int(original) if original and original.isdigit() else None,
            "storedBytes": row["stored_bytes"], "hash": row["hash"],
            "status": row["status"], "tags": list(row["tags"] or []),
            "agentId": row["agent_id"]}


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
    details = CheckpointDetails.objects.filter(checkpoint_id=OuterRef("checkpoint_id"))
    rows = found.annotate(
        size=Func(Cast("snapshot", TextField()), function="octet_length",
                  output_field=IntegerField()),
        stored_bytes=Func(F("snapshot"), function="pg_column_size",
                          output_field=IntegerField()),
        original_size=KeyTextTransform("originalSize", "snapshot"),
        hash=KeyTextTransform("checksum", "snapshot"),
        status=Coalesce(Subquery(details.values("status")[:1]),
                        Value(CheckpointDetails.ACTIVE)),
        tags=Subquery(details.values("tags")[:1]),
        agent_id=Subquery(details.values("agent_id")[:1]),
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
