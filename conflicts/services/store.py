"""Storing conflicts without duplicates.

The same open conflict (task pair, type, evidence) is stored once: every writer takes one
transaction-level advisory lock, then inserts only candidates with no matching row whose
status is unresolved, investigating, escalated or ignored (an ignored conflict stays
ignored; a resolved one that reappears is a new conflict). Two detection runs at the
same time therefore cannot both insert the same conflict.

A new file_conflict supersedes the older open file_conflicts of its task pair whose shared
paths it all lists (1, then 2, then 3 shared files is one open conflict, not three): they
are closed as ``auto: superseded by <new id>`` in the same transaction
(``auto_close``). Whoever stores, detection or a file claim, gets this.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction

from conflicts.models import ContextConflict
from conflicts.services import auto_close
from foundation.core import prepared
from foundation.core.db import qualified
from foundation.observability import metrics

logger = logging.getLogger("orchestrator.conflicts")

OPEN_STATUSES = ("unresolved", "investigating", "escalated")
# Statuses that make a re-detection of the same conflict a non-event.
KNOWN_STATUSES = (*OPEN_STATUSES, "ignored")
# pg_advisory_xact_lock key shared by every conflict writer ("conflict" in ASCII).
STORE_LOCK_KEY = 0x636F6E666C696374
# Candidates per INSERT statement (see store_candidates).
STORE_BATCH = 2000


@dataclass
class Candidate:
    project_id: str  # the project of the task(s): a conflict never pairs two projects
    task_a_id: str
    task_b_id: str | None
    conflict_type: str
    severity: str
    strength: float
    description: str
    evidence: dict[str, Any]
    detection_method: str
    extra: dict[str, Any] = field(default_factory=dict)
    # Who found it, when not the store call's ``detected_by`` (a batch of claims' overlaps
    # stored at once credits each pair to the session whose claim contested it).
    detected_by: str | None = None


_STORED_FIELDS = ("project_id", "task_a_id", "task_b_id", "conflict_type", "severity",
                  "strength", "description", "evidence", "detection_method", "detected_by")

_INSERT = """
INSERT INTO {table} (project_id, task_a_id, task_b_id, conflict_type, description, severity,
                     strength, evidence, detected_by, detection_method)
SELECT c.project_id, c.task_a_id, c.task_b_id, c.conflict_type, c.description, c.severity,
       c.strength, c.evidence, COALESCE(c.detected_by, %s), c.detection_method
FROM jsonb_to_recordset(%s::jsonb) AS c(project_id text, task_a_id text, task_b_id text,
     conflict_type text, description text, severity text, strength numeric, evidence jsonb,
     detection_method text, detected_by text)
WHERE NOT EXISTS (
  SELECT 1 FROM {table} x
  WHERE x.project_id = c.project_id AND x.task_a_id = c.task_a_id
    AND x.task_b_id IS NOT DISTINCT FROM c.task_b_id
    AND x.conflict_type = c.conflict_type AND x.evidence = c.evidence
    AND x.resolution_status = ANY(%s))
RETURNING id
"""

# Older open file_conflicts of the pair of a new one, all of whose paths the new one lists
# (jsonb @> on two arrays of strings: every element of the right is in the left). A
# reported conflict (detected_by agent / manual) is left to its reporter.
_SUPERSEDED = """
SELECT DISTINCT ON (o.id) o.id, n.id
FROM {table} n
JOIN {table} o ON o.project_id = n.project_id AND o.task_a_id = n.task_a_id
  AND o.task_b_id IS NOT DISTINCT FROM n.task_b_id AND o.conflict_type = 'file_conflict'
WHERE n.id = ANY(%s::uuid[]) AND n.conflict_type = 'file_conflict'
  AND o.id <> ALL(%s::uuid[]) AND o.resolution_status = ANY(%s)
  AND (o.detected_by IS NULL OR o.detected_by <> ALL(%s))
  AND jsonb_typeof(n.evidence -> 'actualValue') = 'array'
  AND jsonb_typeof(o.evidence -> 'actualValue') = 'array'
  AND jsonb_array_length(o.evidence -> 'actualValue') > 0
  AND (n.evidence -> 'actualValue') @> (o.evidence -> 'actualValue')
ORDER BY o.id, n.detected_at DESC
"""


def store_candidates(candidates: list[Candidate], *, detected_by: str) -> list[ContextConflict]:
    """Insert the candidates not already known, each as found by ``detected_by`` unless it
    names its own; returns the new rows (then logs and counts).

    Sent in batches inside one transaction: a single jsonb array of every candidate hits
    Postgres's 256 MB jsonb limit at a few hundred thousand pairs (a shared file listed by
    thousands of tasks), and one huge parameter also holds the whole payload in memory twice.
    """
    if not candidates:
        return []
    ids: list[int] = []
    # No savepoint inside a caller's transaction (the claim-overlap recorder's, which took
    # the same lock): a failure here fails that transaction as a whole anyway.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [STORE_LOCK_KEY])
        insert = _INSERT.format(table=qualified("context_conflicts"))
        for start in range(0, len(candidates), STORE_BATCH):
            # A shallow dict per candidate: dataclasses.asdict deep-copies every evidence
            # value, which cost ~0.3 s for the few thousand candidates of a 10k-task run.
            payload = json.dumps([{name: getattr(c, name) for name in _STORED_FIELDS}
                                  for c in candidates[start:start + STORE_BATCH]], default=str)
            cursor.execute(insert, [detected_by, payload, list(KNOWN_STATUSES)])
            ids += [row[0] for row in cursor.fetchall()]
        closed = _supersede(cursor, ids) if any(
            c.conflict_type == "file_conflict" for c in candidates) else []
    created: list[ContextConflict] = []
    for start in range(0, len(ids), STORE_BATCH):
        created += ContextConflict.objects.filter(pk__in=ids[start:start + STORE_BATCH])
    for conflict in created:
        announce(conflict)
    auto_close.report(closed)
    return created


def _supersede(cursor, ids: list[Any]) -> list[dict[str, Any]]:
    """Close the open file_conflicts the new rows ``ids`` supersede (see _SUPERSEDED)."""
    if not ids:
        return []
    query = _SUPERSEDED.format(table=qualified("context_conflicts"))
    closures = []
    for start in range(0, len(ids), STORE_BATCH):
        cursor.execute(query, [ids[start:start + STORE_BATCH], ids, list(OPEN_STATUSES),
                               list(auto_close.REPORTED_BY)])
        closures += [auto_close.Closure(
            str(old), auto_close.SUPERSEDED, superseded_by=str(new),
            reason=f"conflict {new} lists every shared path this one listed")
            for old, new in cursor.fetchall()]
    return auto_close.close(closures)


# The open file conflicts of some task pairs (a pair may match another's tasks crosswise:
# the caller keeps the pairs it asked for), latest first.
_OPEN_FILE_CONFLICTS = """
SELECT id, task_a_id, task_b_id, severity, description FROM {table}
WHERE project_id = ANY(%(projects)s::text[]) AND conflict_type = 'file_conflict'
  AND resolution_status = ANY(%(statuses)s::text[]) AND task_a_id = ANY(%(a)s::text[])
  AND task_b_id = ANY(%(b)s::text[])
ORDER BY detected_at DESC
"""


def open_file_conflicts(project_ids: list[str], pairs: list[tuple[str, str]]
                        ) -> list[tuple[Any, str, str, str, str]]:
    """(id, task a, task b, severity, description) of the open file conflicts among the
    task ``pairs`` (task a before task b, as stored), latest first. Prepared: the claim-
    overlap recorder reads them for every batch, and the ORM's query cost it more than the
    read did."""
    sql = _OPEN_FILE_CONFLICTS.format(table=qualified("context_conflicts"))
    return prepared.fetch_all(sql, {
        "projects": project_ids, "statuses": list(OPEN_STATUSES),
        "a": [pair[0] for pair in pairs], "b": [pair[1] for pair in pairs]})


def announce(conflict: ContextConflict) -> None:
    """The "Conflict detected" WARN line and the conflicts_detected_total counter for a new
    conflict."""
    metrics.conflicts_detected_total.labels(conflict.conflict_type, conflict.severity).inc()
    tasks = [t for t in (conflict.task_a_id, conflict.task_b_id) if t]
    logger.warning("Conflict detected", extra={
        "conflictId": str(conflict.id), "projectId": conflict.project_id,
        "conflictType": conflict.conflict_type,
        "severity": conflict.severity, "tasks": tasks,
        "detectedBy": conflict.detected_by, "detectionMethod": conflict.detection_method})
