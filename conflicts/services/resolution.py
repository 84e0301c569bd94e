"""resolve_conflict and the investigate / escalate steps.

Statuses: unresolved -> investigating -> resolved | ignored | escalated; an escalated
conflict can still be resolved or ignored (by the person it was escalated to).

One transaction holds the conflict row (SELECT FOR UPDATE), the conditional status
UPDATE (``WHERE resolution_status IN resolvable``: of two resolvers one wins, the other
gets E1643) and every task change, made through the context write path (versioned, with
a change summary naming the conflict). Redis and file side effects that ARE the
resolution (resync a cache, release an abandoned lock, rewrite a file backup) run inside
that transaction before the commit: they are idempotent, and if one fails the whole
resolution is E1644 and nothing changed. Publishing changed tasks to Redis and files
happens after the commit, as for any save.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.db import transaction
from django.db.models.functions import Now

from conflicts.models import ContextConflict
from conflicts.services import side_effects
from foundation.core.errors import OrchestratorError, conflict_not_found
from foundation.core.stamps import now_iso
from foundation.observability import metrics

logger = logging.getLogger("orchestrator.conflicts")

RESOLVABLE = ("unresolved", "investigating", "escalated")
# status step -> statuses it may be taken from
STEPS = {"investigating": ("unresolved", "escalated"),
         "escalated": ("unresolved", "investigating")}
ACTIONS = ("use_a", "use_b", "merge", "custom", "ignore")


def parse_conflict_id(conflict_id: Any) -> uuid.UUID:
    try:
        return uuid.UUID(str(conflict_id))
    except ValueError:
        raise conflict_not_found(conflict_id) from None


def _locked_conflict(pk: uuid.UUID) -> ContextConflict:
    conflict = ContextConflict.objects.select_for_update().filter(pk=pk).first()
    if conflict is None:
        raise conflict_not_found(pk)
    return conflict


def _already(conflict: ContextConflict) -> OrchestratorError:
    return OrchestratorError(
        "E1643", f"Conflict {conflict.pk} is already {conflict.resolution_status}",
        {"conflictId": str(conflict.pk), "resolutionStatus": conflict.resolution_status,
         "resolvedBy": conflict.resolved_by})


def _history(conflict: ContextConflict) -> list[dict[str, Any]]:
    previous = conflict.resolution if isinstance(conflict.resolution, dict) else None
    if not previous:
        return []
    return [*previous.get("history", []), {k: v for k, v in previous.items() if k != "history"}]


def resolve_conflict(conflict_id: Any, resolution: dict[str, Any], *,
                     resolved_by: str | None = None,
                     session_id: str | None = None) -> dict[str, Any]:
    """Apply ``resolution`` ({action, resolvedValue?, notes?}); answers the resolved conflict
    and what the action changed."""
    pk = parse_conflict_id(conflict_id)
    action = resolution.get("action")
    if action not in ACTIONS:
        raise OrchestratorError("E1612", f"Unknown resolution action {action!r}",
                                {"field": "resolution.action", "allowed": list(ACTIONS)})
    new_status = "ignored" if action == "ignore" else "resolved"
    try:
        with transaction.atomic():
            conflict = _locked_conflict(pk)
            previous = conflict.resolution_status
            if previous not in RESOLVABLE:
                raise _already(conflict)
            effects: list[str] = []
            if action != "ignore":
                effects = side_effects.apply(conflict, action, resolution.get("resolvedValue"),
                                             session_id=session_id, actor=resolved_by)
            record = {"action": action, **{k: resolution[k] for k in ("resolvedValue", "notes")
                                           if k in resolution}, "effects": effects}
            history = _history(conflict)
            if history:
                record["history"] = history
            updated = ContextConflict.objects.filter(
                pk=pk, resolution_status__in=RESOLVABLE).update(
                resolution_status=new_status, resolution=record, resolved_by=resolved_by,
                resolved_at=Now())
            if updated != 1:  # someone else got there first
                conflict.refresh_from_db()
                raise _already(conflict)
    except OrchestratorError as exc:
        if exc.code in ("E1642", "E1643", "E1644"):
            raise
        raise OrchestratorError(
            "E1644", f"Resolution {action} of conflict {pk} failed: {exc.message}",
            {"conflictId": str(pk), "cause": {"code": exc.code, "message": exc.message,
                                              "details": exc.details}}) from exc
    metrics.conflicts_resolved_total.labels(action).inc()
    logger.info("Conflict resolved", extra={
        "conflictId": str(pk), "projectId": conflict.project_id, "action": action,
        "resolvedBy": resolved_by,
        "conflictType": conflict.conflict_type, "newStatus": new_status, "effects": effects,
        "session_id": session_id})
    answer: dict[str, Any] = {"action": action}
    if "notes" in resolution:
        answer["notes"] = resolution["notes"]
    return {"success": True, "conflictId": str(pk), "previousStatus": previous,
            "newStatus": new_status, "resolution": answer, "effects": effects,
            "resolvedBy": resolved_by, "timestamp": now_iso()}


def set_status(conflict_id: Any, status: str, *, by: str | None = None,
               notes: str | None = None) -> dict[str, Any]:
    """Move a conflict to investigating or escalated (conditional UPDATE; E1643 otherwise)."""
    pk = parse_conflict_id(conflict_id)
    allowed_from = STEPS.get(status)
    if allowed_from is None:
        raise OrchestratorError("E1612", f"Status {status!r} is not a step",
                                {"field": "status", "allowed": list(STEPS)})
    with transaction.atomic():
        conflict = _locked_conflict(pk)
        previous = conflict.resolution_status
        step: dict[str, Any] = {"action": "escalate" if status == "escalated" else "investigate",
                "by": by, "at": now_iso()}
        if notes:
            step["notes"] = notes
        history = _history(conflict)
        if history:
            step["history"] = history
        updated = ContextConflict.objects.filter(
            pk=pk, resolution_status__in=allowed_from).update(
            resolution_status=status, resolution=step)
        if updated != 1:  # already resolved, ignored, or already in this status
            raise _already(conflict)
    log = logger.warning if status == "escalated" else logger.info
    log("Conflict %s", status, extra={"conflictId": str(pk), "by": by,
                                     "conflictType": conflict.conflict_type,
                                     "severity": conflict.severity})
    return {"success": True, "conflictId": str(pk), "previousStatus": previous,
            "newStatus": status, "timestamp": now_iso()}
