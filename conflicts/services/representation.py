"""camelCase shapes of a conflict row (detect_conflicts' answer, REST browsing, report_conflict)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from conflicts.models import ContextConflict
from foundation.core.stamps import iso

# The action the console and the detect_conflicts answer propose for each type.
SUGGESTIONS = {
    "file_conflict": "Decide which task owns the shared files: use_a keeps them in task A "
                     "and removes them from task B, use_b the reverse; merge/custom to set "
                     "both tasks' keyFiles yourself.",
    "lock_collision": "The session holding the lock is gone: resolve (use_a) to release it.",
    "state_mismatch": "use_a resyncs the Redis cache from Postgres (the source of truth); "
                      "use_b writes the cached values to Postgres.",
    "version_divergence": "Review the recovery versions; use_a keeps the current state, "
                          "custom applies a corrected value.",
    "data_inconsistency": "use_a rewrites the file backup from Postgres; use_b writes the "
                          "file's values to Postgres.",
    "spec_contradiction": "Decide which task's value stands (use_a / use_b) or apply a "
                          "merged value (merge / custom).",
}


def _strength(value: Decimal | float | None) -> float | None:
    return None if value is None else float(value)


def detected_item(conflict: ContextConflict) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": str(conflict.id),
        "taskAId": conflict.task_a_id,
        "conflictType": conflict.conflict_type,
        "severity": conflict.severity,
        "strength": _strength(conflict.strength),
        "description": conflict.description,
        "evidence": conflict.evidence or {},
    }
    if conflict.task_b_id:
        item["taskBId"] = conflict.task_b_id
    if conflict.conflict_type in SUGGESTIONS:
        item["suggestedResolution"] = SUGGESTIONS[conflict.conflict_type]
    return item


def existing_item(conflict: ContextConflict) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": str(conflict.id),
        "taskAId": conflict.task_a_id,
        "conflictType": conflict.conflict_type,
        "severity": conflict.severity,
        "description": conflict.description,
        "detectedAt": iso(conflict.detected_at),
        "resolutionStatus": conflict.resolution_status,
    }
    if conflict.task_b_id:
        item["taskBId"] = conflict.task_b_id
    return item


def conflict_dict(conflict: ContextConflict) -> dict[str, Any]:
    """The full record (REST browsing and report_conflict)."""
    return {
        "id": str(conflict.id),
        "taskAId": conflict.task_a_id,
        "taskBId": conflict.task_b_id,
        "conflictType": conflict.conflict_type,
        "description": conflict.description,
        "severity": conflict.severity,
        "strength": _strength(conflict.strength),
        "evidence": conflict.evidence,
        "resolutionStatus": conflict.resolution_status,
        "resolution": conflict.resolution,
        "resolvedBy": conflict.resolved_by,
        "detectedAt": iso(conflict.detected_at),
        "resolvedAt": iso(conflict.resolved_at),
        "detectedBy": conflict.detected_by,
        "detectionMethod": conflict.detection_method,
    }
