"""File conflicts recorded: the overlaps a claim left pending become file_conflicts
(the detector's rules) and notices for their holders, off the claim's path."""

from __future__ import annotations

from typing import Any

from django.db import connection

from claims.services.claimants import CLAIMS_TABLE, Claimant
from claims.services.holders import Holder, other_holders
from claims.services.messages import holder_notice, record_event
from conflicts.models import ContextConflict
from conflicts.services.detection import Scope, detect_file_conflicts
from conflicts.services.store import OPEN_STATUSES, STORE_LOCK_KEY, store_candidates
from contexts.services.edit_policy import EditPolicy
from contexts.services.key_files import append_key_files
from foundation.backends.coalesce import CoalescingWriter
from foundation.core import prepared
from foundation.core.db import retried_transaction
from sessions.models import SessionDetail
from sessions.services.notices import add_notices

# Index file_claim_overlaps_pending (migration 0002) has this WHERE's predicate.
_PENDING = f"""
SELECT c.id, c.project_id, c.path, c.session_id, c.task_id, c.overlaps_pending, d.agent_id
FROM {CLAIMS_TABLE} c LEFT JOIN {SessionDetail._meta.db_table} d ON d.session_id = c.session_id
WHERE cardinality(c.overlaps_pending) > 0 AND (%s::text IS NULL OR c.session_id = %s::text)
ORDER BY c.id LIMIT 50 FOR UPDATE OF c SKIP LOCKED
"""


def record_overlaps(session_id: str | None = None) -> list[dict[str, Any]]:
    """The file conflicts and holders' notices that claims left pending (of one claiming
    session, or all): each overlap whose holder still holds the file is a file_conflict
    by the detector's rules, and its holder gets a notice. Returns the conflicts."""
    found: list[dict[str, Any]] = []

    def batch() -> int:
        # Prepared: planning the pending claims' read cost Postgres ten times what running
        # it did (0.48 of 0.54 ms at 800 agents, pg_stat_statements).
        rows = prepared.fetch_all(_PENDING, [session_id, session_id])
        if rows:
            # The conflict store's lock before any task's: each overlap locks its tasks
            # (keyFiles) and then stores under this lock, which the batch holds to its
            # end. Taken in that order row after row, two batches deadlocked (one holding
            # the store waiting for a task the other held while waiting for the store):
            # seen six times in two minutes at 2,000 agents.
            prepared.execute("SELECT pg_advisory_xact_lock(%s)", [STORE_LOCK_KEY])
        recorded = []
        for claim_id, project_id, path, claimer, task_id, pending, agent_id in rows:
            who = Claimant(claimer, project_id, task_id, "", agent_id, EditPolicy())
            holders = [h for h in other_holders(who, [path])
                       if h.held and h.task_id and h.session_id in pending]
            if holders and task_id:
                conflicts = _record_conflicts(who, holders)
                _notify_holders(who, holders, conflicts)
                recorded += [c for c in conflicts if c not in recorded]
            with connection.cursor() as cursor:
                cursor.execute(f"UPDATE {CLAIMS_TABLE} SET overlaps_pending = '{{}}' "
                               "WHERE id = %s", [claim_id])
        found.extend(c for c in recorded if c not in found)  # once the batch committed
        return len(rows)

    while retried_transaction(batch) == 50:
        pass
    return found


def _record_overlaps_in_background() -> bool:
    record_overlaps()
    return True


# Overlaps are recorded off the claim's path, once per burst and process.
overlap_writer = CoalescingWriter("claim-overlaps", _record_overlaps_in_background,
                                  delay_setting="FILE_CLAIM_OVERLAP_DELAY_MS")


def _record_conflicts(who: Claimant, contested: list[Holder]) -> list[dict[str, Any]]:
    """Both tasks list the contested paths, then the detector's own query decides and
    stores (its rules, severity and de-duplication) for this task and those tasks."""
    mine = sorted({h.path for h in contested})
    append_key_files(who.task_id, mine, session_id=who.session_id,
                     summary="keyFiles from a claim")
    by_task: dict[str, list[str]] = {}
    for holder in contested:
        by_task.setdefault(holder.task_id, []).append(holder.path)
    for task_id, paths in by_task.items():
        append_key_files(task_id, paths, session_id=None, summary="keyFiles from a claim")
    pairs = {tuple(sorted((who.task_id, t))) for t in by_task}
    candidates = [c for c in detect_file_conflicts(Scope([who.task_id], [who.project_id]))
                  if (c.task_a_id, c.task_b_id) in pairs]
    created = store_candidates(candidates, detected_by=f"claims:{who.session_id}")
    new_ids = {c.pk for c in created}
    rows = list(ContextConflict.objects.filter(
        project_id=who.project_id, conflict_type="file_conflict",
        resolution_status__in=OPEN_STATUSES, task_a_id__in=[p[0] for p in pairs],
        task_b_id__in=[p[1] for p in pairs]).order_by("-detected_at"))
    seen: set[tuple[str, str]] = set()
    found = []
    for row in rows:
        pair = (row.task_a_id, row.task_b_id)
        if pair not in pairs or pair in seen:
            continue
        seen.add(pair)
        found.append({"conflictId": str(row.id), "taskAId": row.task_a_id,
                      "taskBId": row.task_b_id, "severity": row.severity,
                      "description": row.description, "new": row.pk in new_ids})
    return found


def _notify_holders(who: Claimant, contested: list[Holder],
                    conflicts: list[dict[str, Any]]) -> None:
    notices = []
    for holder in contested:
        conflict = next((c for c in conflicts if holder.task_id in (c["taskAId"],
                                                                     c["taskBId"])), None)
        text = holder_notice(who, holder.path, conflict)
        notices.append((holder.session_id, who.project_id, "claim_overlap", text))
        record_event(holder.session_id, "claim_overlap", {
            "path": holder.path, "bySessionId": who.session_id, "byTaskId": who.task_id,
            "conflictId": conflict["conflictId"] if conflict else None})
    add_notices(notices)
