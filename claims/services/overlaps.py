"""File conflicts recorded: the overlaps a claim left pending become file_conflicts
(the detector's rules) and notices for their holders, off the claim's path."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from typing import Any

from claims.services.claimants import CLAIMS_TABLE, Claimant
from claims.services.holders import Holder, other_holders
from claims.services.messages import holder_notice, record_events
from conflicts.services.detection import Scope, detect_file_conflicts
from conflicts.services.store import STORE_LOCK_KEY, open_file_conflicts, store_candidates
from contexts.services.edit_policy import EditPolicy
from contexts.services.key_files import append_key_files
from foundation.backends.coalesce import CoalescingWriter
from foundation.core import prepared
from foundation.core.db import retried_transaction
from sessions.models import SessionDetail
from sessions.services.notices import add_notices

# Pending overlaps recorded per transaction.
BATCH = 50

# Index file_claim_overlaps_pending (migration 0002) has this WHERE's predicate. Read
# without locking the rows (see record_overlaps).
_PENDING = f"""
SELECT c.id, c.project_id, c.path, c.session_id, c.task_id, c.overlaps_pending, d.agent_id
FROM {CLAIMS_TABLE} c LEFT JOIN {SessionDetail._meta.db_table} d ON d.session_id = c.session_id
WHERE cardinality(c.overlaps_pending) > 0 AND (%s::text IS NULL OR c.session_id = %s::text)
ORDER BY c.id LIMIT {BATCH}
"""
# The same claims' pending overlaps as they are now, read under the store's lock.
_STILL_PENDING = f"SELECT id, overlaps_pending FROM {CLAIMS_TABLE} WHERE id = ANY(%s::bigint[])"
# The overlaps a batch recorded, taken off their claims (locked in id order); any a claim
# added since stay pending for the next batch. The rows are found by ``ids`` (an index
# scan whatever the plan thinks of the JSON's row count).
_CLEARED = f"""
WITH done AS (SELECT * FROM jsonb_to_recordset(%(done)s::jsonb) AS d(id bigint, pending text[])),
locked AS (SELECT c.id FROM {CLAIMS_TABLE} c WHERE c.id = ANY(%(ids)s::bigint[])
           ORDER BY c.id FOR UPDATE)
UPDATE {CLAIMS_TABLE} c
SET overlaps_pending = ARRAY(SELECT p FROM unnest(c.overlaps_pending) AS p
                             WHERE p <> ALL(done.pending))
FROM done, locked
WHERE c.id = ANY(%(ids)s::bigint[]) AND c.id = locked.id AND done.id = c.id
"""


@dataclass(frozen=True)
class _Overlap:
    """A claim's pending overlaps as read: the claimant and the holders still holding."""

    claim_id: int
    who: Claimant
    pending: frozenset[str]
    holders: list[Holder]


def record_overlaps(session_id: str | None = None) -> list[dict[str, Any]]:
    """The file conflicts and holders' notices that claims left pending (of one claiming
    session, or all): each overlap whose holder still holds the file is a file_conflict
    by the detector's rules, and its holder gets a notice. Returns the conflicts.

    In two steps, so that no lock a hook call needs is held for long: the pending overlaps
    are read and their files listed in both tasks' keyFiles, each task's append its own
    statement; then, under the conflict store's lock (recorders take turns on it: 11 ms
    on average at 1,500 agents, up to 460 ms), those still pending are detected, stored,
    told to their holders and cleared, the claims' rows locked only to clear them. Held
    for a whole batch, a task's row held up its sessions' keyFiles appends and a claim's
    row its session's flushes (up to 410 ms)."""
    found: list[dict[str, Any]] = []
    while True:
        # Prepared: planning the pending claims' read cost Postgres ten times what running
        # it did (0.48 of 0.54 ms at 800 agents, pg_stat_statements).
        rows = prepared.fetch_all(_PENDING, [session_id, session_id])
        if not rows:
            break
        recorded = retried_transaction(partial(_store, [_listed(row) for row in rows]))
        found.extend(c for c in recorded if c not in found)
        if len(rows) < BATCH:
            break
    return found


def _listed(row: tuple) -> _Overlap:
    """One pending claim read: its holders still holding, and the contested file listed in
    the claimant's task and theirs."""
    claim_id, project_id, path, claimer, task_id, pending, agent_id = row
    who = Claimant(claimer, project_id, task_id, "", agent_id, EditPolicy())
    holders = [h for h in other_holders(who, [path])
               if h.held and h.task_id and h.session_id in pending] if task_id else []
    if holders:
        append_key_files(task_id, sorted({h.path for h in holders}), session_id=claimer,
                         summary="keyFiles from a claim")
        by_task: dict[str, list[str]] = {}
        for holder in holders:
            by_task.setdefault(holder.task_id, []).append(holder.path)
        for holder_task, paths in by_task.items():
            append_key_files(holder_task, paths, session_id=None,
                             summary="keyFiles from a claim")
    return _Overlap(claim_id, who, frozenset(pending), holders)


def _store(overlaps: list[_Overlap]) -> list[dict[str, Any]]:
    """Under the conflict store's lock: the overlaps read that are still pending (another
    recorder may have taken them meanwhile) become conflicts and notices, then are
    cleared. Returns the conflicts."""
    _, still = prepared.fetch_all_each((
        ("SELECT pg_advisory_xact_lock(%s)", [STORE_LOCK_KEY]),
        (_STILL_PENDING, [[o.claim_id for o in overlaps]])))
    now = {claim_id: set(pending) for claim_id, pending in still}
    contested: list[tuple[Claimant, list[Holder]]] = []
    done = []
    for overlap in overlaps:
        taken = overlap.pending & now.get(overlap.claim_id, set())
        if not taken:
            continue
        holders = [h for h in overlap.holders if h.session_id in taken]
        if holders:
            contested.append((overlap.who, holders))
        done.append({"id": overlap.claim_id, "pending": sorted(taken)})
    recorded: list[dict[str, Any]] = []
    if contested:
        conflicts = _record_conflicts(contested)
        _notify_holders(contested, conflicts)
        pairs = dict.fromkeys(_pair(who, h) for who, holders in contested for h in holders)
        recorded = [conflicts[pair] for pair in pairs if pair in conflicts]
    if done:
        prepared.execute(_CLEARED, {"ids": [d["id"] for d in done], "done": json.dumps(done)})
    return recorded


def _record_overlaps_in_background() -> bool:
    record_overlaps()
    return True


# Overlaps are recorded off the claim's path, once per burst and process, and under load
# in batches at most every FILE_CLAIM_OVERLAP_INTERVAL_MS.
overlap_writer = CoalescingWriter("claim-overlaps", _record_overlaps_in_background,
                                  delay_setting="FILE_CLAIM_OVERLAP_DELAY_MS",
                                  interval_setting="FILE_CLAIM_OVERLAP_INTERVAL_MS")


def _pair(who: Claimant, holder: Holder) -> tuple[str, str]:
    """The task pair a conflict between a claimant and a holder is stored under."""
    first, second = sorted((who.task_id, holder.task_id))
    return first, second


def _record_conflicts(contested: list[tuple[Claimant, list[Holder]]]
                      ) -> dict[tuple[str, str], dict[str, Any]]:
    """The detector's own query decides and stores (its rules, severity and
    de-duplication) for the claimants' tasks and their holders' (both list the contested
    paths): one detection, one store and one read for a whole batch of overlaps, each pair
    credited to the first claimant contesting it. Returns the open conflict of each pair
    (the latest), as answered."""
    claimant_of: dict[tuple[str, str], Claimant] = {}
    for who, holders in contested:
        for holder in holders:
            claimant_of.setdefault(_pair(who, holder), who)
    projects = sorted({who.project_id for who, _ in contested})
    tasks = sorted({task for pair in claimant_of for task in pair})
    candidates = [c for c in detect_file_conflicts(
                      Scope(sorted({who.task_id for who, _ in contested}), projects),
                      among=tasks)
                  if (c.task_a_id, c.task_b_id) in claimant_of]
    for candidate in candidates:
        claimant = claimant_of[candidate.task_a_id, candidate.task_b_id]
        candidate.detected_by = f"claims:{claimant.session_id}"
    new_ids = {c.pk for c in store_candidates(candidates, detected_by="claims")}
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for conflict_id, task_a, task_b, severity, description in open_file_conflicts(
            projects, list(claimant_of)):
        pair = (task_a, task_b)
        if pair in claimant_of and pair not in found:
            found[pair] = {"conflictId": str(conflict_id), "taskAId": task_a,
                           "taskBId": task_b, "severity": severity,
                           "description": description, "new": conflict_id in new_ids}
    return found


def _notify_holders(contested: list[tuple[Claimant, list[Holder]]],
                    conflicts: dict[tuple[str, str], dict[str, Any]]) -> None:
    notices, events = [], []
    for who, holders in contested:
        for holder in holders:
            conflict = conflicts.get(_pair(who, holder))
            text = holder_notice(who, holder.path, conflict)
            notices.append((holder.session_id, who.project_id, "claim_overlap", text))
            events.append((holder.session_id, "claim_overlap", {
                "path": holder.path, "bySessionId": who.session_id, "byTaskId": who.task_id,
                "conflictId": conflict["conflictId"] if conflict else None}))
    record_events(events)
    add_notices(notices)
