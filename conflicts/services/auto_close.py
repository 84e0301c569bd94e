"""Closing open conflicts nobody has to resolve any more.

Two reasons, each recorded like a resolution (conflicts/services/resolution.py): status
``resolved``, ``resolution`` = {action, notes, effects: [], supersededBy?, history?} (the
investigate / escalate steps before it kept in ``history``), ``resolved_by`` = the label,
a ``Conflict resolved`` log line and ``conflicts_resolved_total{action}``:

- ``auto_superseded`` (resolved by ``auto: superseded by <id>``): a newer file_conflict of
  the same task pair lists every path the older one listed (``store.store_candidates``,
  in the transaction of the insert), or detection found the pair's overlap changed and
  an open conflict describing the current overlap exists (``detection``).
- ``auto_evidence_gone`` (resolved by ``auto: evidence gone``): detect_conflicts looked
  again and the evidence no longer holds (``detection.close_stale``).

Only conflicts the detectors made are closed: what an agent or a person reported
(report_conflict, detected_by ``agent`` / ``manual``) stays until someone resolves it.
The UPDATE is conditional on the conflict still being open, so a person resolving it at
the same moment wins and nothing is recorded twice.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from django.db import connection

from foundation.core.db import qualified
from foundation.observability import metrics

logger = logging.getLogger("orchestrator.conflicts")

# detected_by of conflicts reported by an agent or a person (reporting.REPORTERS): their
# evidence is what the reporter saw, which no detector can re-check.
REPORTED_BY = ("agent", "manual")
EVIDENCE_GONE = "auto_evidence_gone"
SUPERSEDED = "auto_superseded"
EVIDENCE_GONE_LABEL = "auto: evidence gone"
# Statuses an automatic closing may end (store.OPEN_STATUSES, not imported: store imports us).
_CLOSABLE = ("unresolved", "investigating", "escalated")


def superseded_label(conflict_id: Any) -> str:
    return f"auto: superseded by {conflict_id}"


@dataclass(frozen=True)
class Closure:
    conflict_id: str
    action: str  # EVIDENCE_GONE or SUPERSEDED
    reason: str  # why, in words, for the notes
    superseded_by: str | None = None

    @property
    def label(self) -> str:
        return (superseded_label(self.superseded_by) if self.action == SUPERSEDED
                else EVIDENCE_GONE_LABEL)


_CLOSE = """
UPDATE {table} t SET
  resolution_status = 'resolved', resolved_at = now(), resolved_by = c.label,
  resolution = jsonb_build_object('action', c.action, 'notes', c.notes,
                                  'effects', '[]'::jsonb)
    || CASE WHEN c.superseded_by IS NULL THEN '{{}}'::jsonb
            ELSE jsonb_build_object('supersededBy', c.superseded_by) END
    || CASE WHEN jsonb_typeof(t.resolution) = 'object' AND t.resolution <> '{{}}'::jsonb
            THEN jsonb_build_object('history',
                   CASE WHEN jsonb_typeof(t.resolution -> 'history') = 'array'
                        THEN t.resolution -> 'history' ELSE '[]'::jsonb END
                   || jsonb_build_array(t.resolution - 'history'))
            ELSE '{{}}'::jsonb END
FROM jsonb_to_recordset(%s::jsonb) AS c(id uuid, action text, label text, notes text,
                                        superseded_by text)
WHERE t.id = c.id AND t.resolution_status = ANY(%s)
RETURNING t.id, t.project_id, t.conflict_type, t.severity, t.task_a_id, t.task_b_id,
          c.action, c.label, c.notes
"""


def close(closures: list[Closure]) -> list[dict[str, Any]]:
    """Mark the conflicts resolved (those still open); the rows closed, for ``report``.

    Runs in the caller's transaction, if any: call ``report`` after it committed.
    """
    if not closures:
        return []
    payload = json.dumps([{"id": c.conflict_id, "action": c.action, "label": c.label,
                           "notes": f"{c.label}: {c.reason}",
                           "superseded_by": c.superseded_by} for c in closures])
    with connection.cursor() as cursor:
        cursor.execute(_CLOSE.format(table=qualified("context_conflicts")),
                       [payload, list(_CLOSABLE)])
        rows = cursor.fetchall()
    return [{"id": str(row[0]), "projectId": row[1], "conflictType": row[2],
             "severity": row[3], "taskAId": row[4], "taskBId": row[5], "action": row[6],
             "resolvedBy": row[7], "notes": row[8]} for row in rows]


def report(closed: list[dict[str, Any]]) -> None:
    """The ``Conflict resolved`` line and the counter of each closed conflict."""
    for row in closed:
        metrics.conflicts_resolved_total.labels(row["action"]).inc()
        logger.info("Conflict resolved", extra={
            "conflictId": row["id"], "projectId": row["projectId"], "action": row["action"],
            "resolvedBy": row["resolvedBy"], "conflictType": row["conflictType"],
            "newStatus": "resolved", "effects": [], "notes": row["notes"]})


def listed(closed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The closed conflicts as detect_conflicts lists them (``closed``)."""
    return [{k: v for k, v in row.items() if k not in ("projectId", "action")
             and v is not None} for row in closed]
