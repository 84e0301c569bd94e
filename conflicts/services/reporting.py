"""report_conflict: an agent or a person records a conflict (detected_by 'agent' / 'manual').

This is how spec_contradiction enters the system (no detector can see it), and any other
type may be reported too. It goes through the same deduplicating store as detection.
"""

from __future__ import annotations

from typing import Any

from conflicts.models import ContextConflict
from conflicts.services import representation
from conflicts.services.store import KNOWN_STATUSES, Candidate, store_candidates
from contexts.models import TaskContext
from foundation.core.errors import OrchestratorError, projects_differ, task_not_found
from foundation.core.tools.schema import CONFLICT_TYPES

REPORTERS = ("agent", "manual")


def report_conflict(*, task_a_id: str, description: str, task_b_id: str | None = None,
                    conflict_type: str = "spec_contradiction", severity: str = "medium",
                    strength: float = 1.0, evidence: dict[str, Any] | None = None,
                    detection_method: str | None = None,
                    detected_by: str = "agent") -> dict[str, Any]:
    """Store the reported conflict unless the same one is already known: {created, conflict}."""
    if conflict_type not in CONFLICT_TYPES:
        raise OrchestratorError("E1641", f"Unknown conflict type {conflict_type!r}",
                                {"conflictType": conflict_type, "allowed": list(CONFLICT_TYPES)})
    if detected_by not in REPORTERS:
        raise OrchestratorError("E1612", f"detectedBy must be one of {', '.join(REPORTERS)}")
    task_a, task_b = task_a_id, task_b_id
    if task_a == task_b:
        raise OrchestratorError("E1612", "taskAId and taskBId must differ",
                                {"field": "taskBId"})
    known = dict(TaskContext.objects.filter(task_id__in=[t for t in (task_a, task_b) if t])
                 .values_list("task_id", "project_id"))
    for task_id in (task_a, task_b):
        if task_id and task_id not in known:
            raise task_not_found(task_id)
    if len(set(known.values())) > 1:
        raise projects_differ("A conflict is between tasks of one project", known)
    evidence = evidence or {}
    candidate = Candidate(
        project_id=known[task_a], task_a_id=task_a, task_b_id=task_b,
        conflict_type=conflict_type, severity=severity, strength=strength,
        description=description, evidence=evidence,
        detection_method=detection_method or "report_conflict")
    created = store_candidates([candidate], detected_by=detected_by)
    if created:
        return {"success": True, "created": True,
                "conflict": representation.conflict_dict(created[0])}
    same = (ContextConflict.objects.filter(
        project_id=known[task_a], task_a_id=task_a, task_b_id=task_b,
        conflict_type=conflict_type, evidence=evidence, resolution_status__in=KNOWN_STATUSES)
        .order_by("detected_at").first())
    return {"success": True, "created": False,
            "conflict": representation.conflict_dict(same) if same else None}
