"""Claiming and releasing files: the check before an edit (``claim``, in one round
trip when nobody else holds the paths), ``release``, and the renewal a flush of edits
makes (``renew_from_activity``)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import OperationalError, connection, transaction

from claims.services.claimants import (
    CLAIMS_TABLE,
    Claimant,
    claimant,
    claimant_any,
    claimant_cache,
    live_seconds,
    repository_path,
    ttl_default,
)
from claims.services.holders import Holder, holders_from, other_holders_query
from claims.services.messages import blocked_text, record_event, warning_text
from claims.services.overlaps import overlap_writer, record_overlaps
from contexts.services.edit_policy import POLICY_KEY
from foundation.core import prepared
from foundation.core.db import (
    ASYNC_COMMIT,
    RETRIED_SQLSTATES,
    SYNC_COMMIT,
    async_commit_sql,
    in_callers_transaction,
    qualified,
    retried_statement,
    retried_transaction,
)
from foundation.core.errors import OrchestratorError
from foundation.core.stamps import now_iso
from foundation.observability import metrics
from sessions.models import SessionDetail
from sessions.services.notices import NOTICES_TABLE, add_notices, take_notices

logger = logging.getLogger("orchestrator.claims")


# -- claiming -------------------------------------------------------------------------------

@dataclass
class Outcome:
    claimed: list[str] = field(default_factory=list)
    warnings: list[Holder] = field(default_factory=list)
    # Held claims of other tasks this claim overlaps: file conflicts being recorded.
    recording: list[Holder] = field(default_factory=list)
    conflicts: list[dict[str, Any]] = field(default_factory=list)


_LOCK = ("SELECT count(pg_advisory_xact_lock(hashtextextended(%(project)s || '|' || p, 7))) "
         "FROM unnest(%(sorted)s::text[]) AS p")


_KNOWN = (f"SELECT path, known_sessions FROM {CLAIMS_TABLE} WHERE session_id = %(me)s "
          "AND path = ANY(%(paths)s::text[]) AND released_at IS NULL "
          "AND expires_at > now() - make_interval(secs => %(recent)s)")


def _lock_and_read(who: Claimant, paths: list[str]
                   ) -> tuple[list[Holder], dict[str, set[str]]]:
    """Take the paths' locks, then read who else holds them and, per path, the sessions
    this session was already told about (for its claims that still count, held or
    recently held: a claim that lapsed starts knowing no one again).

    The locks: one advisory lock per (project, path), taken in path order (no deadlock
    between two claimants of overlapping sets). The three statements go in one round
    trip (prepared.fetch_all_each), run in order in the caller's transaction: both reads
    start after the locks are held, as they did as separate queries. Prepared: Postgres
    planned each as long as it ran it."""
    _, holders, known = prepared.fetch_all_each((
        (_LOCK, {"project": who.project_id, "sorted": sorted(paths)}),
        other_holders_query(who, paths),
        (_KNOWN, {"me": who.session_id, "paths": paths,
                  "recent": settings.FILE_CLAIM_RECENT_SECONDS})))
    return holders_from(holders), {path: set(sessions or ()) for path, sessions in known}


# What an upsert of a claim the session already has sets, in both claim statements.
_RENEWED = """task_id = EXCLUDED.task_id, source = EXCLUDED.source, touched_at = now(),
  claimed_at = CASE WHEN c.released_at IS NOT NULL OR c.expires_at <= now()
                    THEN now() ELSE c.claimed_at END,
  expires_at = GREATEST(EXCLUDED.expires_at,
                        CASE WHEN c.released_at IS NULL THEN c.expires_at END),
  released_at = NULL"""

_UPSERT = f"""
INSERT INTO {CLAIMS_TABLE} AS c (project_id, path, session_id, task_id, source, claimed_at,
                                 touched_at, expires_at, known_sessions, overlaps_pending)
SELECT %(project)s, p.path, %(me)s, %(task)s, %(source)s, now(), now(),
       now() + make_interval(secs => %(ttl)s), p.known, p.pending
FROM jsonb_to_recordset(%(rows)s::jsonb) AS p(path text, known text[], pending text[])
ON CONFLICT (session_id, path) DO UPDATE SET
  overlaps_pending = ARRAY(SELECT DISTINCT unnest(c.overlaps_pending
                                                  || EXCLUDED.overlaps_pending)),
  {_RENEWED},
  known_sessions = EXCLUDED.known_sessions
"""


def _upsert(who: Claimant, known: dict[str, set[str]], ttl: int, source: str,
            pending: dict[str, set[str]]) -> None:
    rows = [{"path": path, "known": sorted(sessions),
             "pending": sorted(pending.get(path, ()))} for path, sessions in known.items()]
    prepared.execute(_UPSERT, {"project": who.project_id, "me": who.session_id,
                               "task": who.task_id, "source": source, "ttl": ttl,
                               "rows": json.dumps(rows)})


def _mark_known(session_ids_by_path: dict[tuple[str, str], None], claimant_id: str) -> None:
    """The holders' claims now know ``claimant_id`` (their notice is on its way)."""
    if not session_ids_by_path:
        return
    holders = [s for s, _ in session_ids_by_path]
    paths = [p for _, p in session_ids_by_path]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {CLAIMS_TABLE} c SET known_sessions = "
            "array_append(array_remove(c.known_sessions, %s), %s) "
            "FROM unnest(%s::text[], %s::text[]) AS h(session_id, path) "
            "WHERE c.session_id = h.session_id AND c.path = h.path",
            [claimant_id, claimant_id, holders, paths])


# The commonest claim, in one round trip: the path locks, then the upsert of the
# session's claims only if no other session on another task holds or recently held one of
# the paths (nothing to warn, record or block: what the long way would do then). The two
# statements are one transaction (prepared.fetch_one_after), and under read committed the
# upsert reads what committed before it started: a claim another claimant committed while
# this one waited for the lock, as the long way's separate read does. Prepared: planning
# the upsert cost more Postgres time than running it (1.1 ms a claim, pg_stat_statements).
_AT_ONCE = f"""
WITH s AS (
  SELECT s.session_id, s.task_id FROM {qualified('active_sessions')} s
  LEFT JOIN {qualified('global_context')} g ON g.project_id = s.project_id
  WHERE s.session_id = %(me)s AND s.project_id = %(project)s
    AND rtrim(coalesce(s.project_dir, ''), '/') = %(root)s
    AND s.status IN ('active', 'compacted')
    -- a paused session takes the long way, which refuses it (claimant, E1633)
    AND NOT EXISTS (SELECT 1 FROM {SessionDetail._meta.db_table} d
                    WHERE d.session_id = s.session_id AND d.paused_at IS NOT NULL)
    AND (g.orchestrator_context -> '{POLICY_KEY}') IS NOT DISTINCT FROM %(policy)s::jsonb),
others AS (
  SELECT 1 FROM {CLAIMS_TABLE} c
  JOIN {qualified('active_sessions')} o ON o.session_id = c.session_id, s
  WHERE c.project_id = %(project)s AND c.path = ANY(%(paths)s::text[])
    AND c.session_id <> s.session_id
    AND (s.task_id IS NULL OR c.task_id IS DISTINCT FROM s.task_id)
    AND c.released_at IS NULL AND c.expires_at > now() - make_interval(secs => %(recent)s)
    AND o.status IN ('active', 'compacted')
    AND o.last_heartbeat > now() - make_interval(secs => %(live)s)),
claimed AS (
  INSERT INTO {CLAIMS_TABLE} AS c (project_id, path, session_id, task_id, source,
                                   claimed_at, touched_at, expires_at, known_sessions,
                                   overlaps_pending)
  SELECT %(project)s, p, s.session_id, s.task_id, %(source)s, now(), now(),
         now() + make_interval(secs => %(ttl)s), '{{}}', '{{}}'
  FROM s, unnest(%(paths)s::text[]) AS p WHERE NOT EXISTS (SELECT 1 FROM others)
  ON CONFLICT (session_id, path) DO UPDATE SET
    {_RENEWED},
    -- as _known reads them: a claim that lapsed starts knowing no one again
    known_sessions = CASE WHEN c.released_at IS NULL
                          AND c.expires_at > now() - make_interval(secs => %(recent)s)
                          THEN c.known_sessions ELSE '{{}}' END
  RETURNING 1)
SELECT s.task_id, (SELECT count(*) FROM claimed) AS claimed,
       EXISTS (SELECT 1 FROM {NOTICES_TABLE} n WHERE n.session_id = s.session_id
               AND n.delivered_at IS NULL) AS notices_waiting
FROM s, @COMMIT@ AS commit_mode
"""
# set_config(..., true) in the upsert decides how the two statements' transaction commits
# (db.ASYNC_COMMIT: a claim is coordination state, renewed by every edit). Inside a
# caller's transaction they are part of it: its commit is never weakened.
_AT_ONCE_SQL = {commit: _AT_ONCE.replace("@COMMIT@", commit)
                for commit in (ASYNC_COMMIT, SYNC_COMMIT)}


def _claim_at_once(session_id: str, paths: list[str], ttl: int,
                   source: str) -> dict[str, Any] | None:
    """The claim in one round trip when it is the common case (_AT_ONCE); None when it is
    not (the session not cached, not live, its policy changed, another session holds a
    path), having written nothing: the caller takes the long way."""
    cached = claimant_cache.get(session_id)
    if cached is None:
        return None
    project_id, root, stored_policy, policy = cached
    wanted = list(dict.fromkeys(repository_path(p, root) for p in paths))
    ignored = [p for p in wanted if policy.ignores(p)]
    counted = [p for p in wanted if p not in ignored]
    if not counted:
        return None
    try:
        row = prepared.fetch_one_after((_LOCK, _AT_ONCE_SQL[async_commit_sql()]), {
            "me": session_id, "project": project_id, "root": root,
            "policy": stored_policy, "paths": counted, "sorted": sorted(counted),
            "source": source, "ttl": ttl, "recent": settings.FILE_CLAIM_RECENT_SECONDS,
            "live": live_seconds()})
    except OperationalError as exc:
        # A deadlock's victim wrote nothing (its transaction was the query's): the long
        # way runs it again. Inside a caller's transaction, that transaction is lost.
        if getattr(exc.__cause__, "sqlstate", None) in RETRIED_SQLSTATES \
                and not in_callers_transaction():
            return None
        raise
    if row is None or row["claimed"] != len(counted):
        return None
    task_id, notices_waiting = row["task_id"], row["notices_waiting"]
    outcome = Outcome(claimed=counted)
    _count([], outcome, True)
    notices = take_notices(session_id) if notices_waiting and source != "activity" else []
    return _answer(session_id, task_id, project_id, policy.mode, [], outcome, ignored, [],
                   notices, ttl)


def claim(session_id: str, paths: list[str], *, ttl_seconds: int | None = None,
          source: str = "tool") -> dict[str, Any]:
    """Claim ``paths`` for ``session_id``'s task; the answer says who else holds them,
    whether the policy blocked the claim, and what was recorded (module docstring)."""
    ttl = ttl_seconds or ttl_default()
    quick = _claim_at_once(session_id, paths, ttl, source)
    if quick is not None:
        return quick
    who = claimant(session_id, source=source)
    wanted = list(dict.fromkeys(repository_path(p, who.root) for p in paths))
    ignored = [p for p in wanted if who.policy.ignores(p)]
    counted = [p for p in wanted if p not in ignored]

    def locked() -> tuple[Outcome, list[Holder], list[Holder], list[dict[str, Any]]]:
        outcome, blocked_by = Outcome(), []
        others, known = _lock_and_read(who, counted) if counted else ([], {})
        if others and who.policy.mode == "block" and source != "activity":
            blocked_by = others
        else:
            outcome = _claim_locked(who, counted, others, known, ttl, source)
        if blocked_by:
            record_event(who.session_id, "edit_blocked", {
                "paths": sorted({h.path for h in blocked_by}),
                "holders": [h.as_dict() for h in blocked_by]})
        # A flush takes its notices itself (record_activity's notices argument).
        notices = take_notices(session_id) if source != "activity" else []
        return outcome, blocked_by, others, notices

    # Agents editing the same files lock each other's claim rows (told marks): Postgres
    # may pick this claim as a deadlock's victim, and it is run again.
    outcome, blocked_by, others, notices = retried_transaction(locked)
    if outcome.recording:
        outcome.conflicts = _after_claim(session_id)
    _count(blocked_by, outcome, bool(counted))
    return _answer(session_id, who.task_id, who.project_id, who.policy.mode, blocked_by,
                   outcome, ignored, others, notices, ttl)


def _answer(session_id: str, task_id: str | None, project_id: str, policy: str,
            blocked_by: list[Holder], outcome: Outcome, ignored: list[str],
            others: list[Holder], notices: list[str], ttl: int) -> dict[str, Any]:
    return {
        "success": True, "sessionId": session_id, "taskId": task_id,
        "projectId": project_id, "policy": policy,
        "blocked": bool(blocked_by), "claimed": outcome.claimed, "ignored": ignored,
        "holders": [h.as_dict() for h in (blocked_by or others)],
        "warnings": [h.as_dict() for h in outcome.warnings],
        "conflicts": outcome.conflicts, "notices": notices,
        "expiresInSeconds": ttl, "timestamp": now_iso(),
        "message": (blocked_text(blocked_by) if blocked_by
                    else warning_text(outcome.warnings, outcome.conflicts,
                                      outcome.recording))}


def _claim_locked(who: Claimant, paths: list[str], others: list[Holder],
                  known: dict[str, set[str]], ttl: int, source: str) -> Outcome:
    outcome = Outcome(claimed=list(paths))
    if not paths:
        return outcome
    fresh = [h for h in others if h.session_id not in known.get(h.path, set())]
    told = {path: set(sessions) for path, sessions in known.items()}
    for path in paths:
        told.setdefault(path, set())
    for holder in fresh:
        told[holder.path].add(holder.session_id)
    # A held claim of another task and this one is a file conflict, its holder told:
    # recorded just after this answer (record_overlaps), so the edit does not wait for it.
    contested = [h for h in fresh if h.held and h.task_id and who.task_id]
    pending: dict[str, set[str]] = {}
    for holder in contested:
        pending.setdefault(holder.path, set()).add(holder.session_id)
    _upsert(who, told, ttl, source, pending)
    if not fresh:
        return outcome
    outcome.warnings, outcome.recording = fresh, contested
    # Marked now, in this transaction: a claim racing this one does not tell them twice.
    _mark_known({(h.session_id, h.path): None for h in contested}, who.session_id)
    parts = {"paths": sorted({h.path for h in fresh}),
             "holders": [h.as_dict() for h in fresh], "source": source}
    if source == "activity":
        # No answer reaches the model from a flush of past edits: its next hook says it.
        add_notices([(who.session_id, who.project_id, "claim_warning",
                      warning_text(fresh, [], contested))])
    record_event(who.session_id, "edit_warning", parts)
    return outcome


def _after_claim(session_id: str) -> list[dict[str, Any]]:
    """Record the claim's overlaps now (FILE_CLAIM_OVERLAP_DELAY_MS 0: the tests) and
    answer them, or ask the background writer to (answering none)."""
    if settings.FILE_CLAIM_OVERLAP_DELAY_MS <= 0 and not in_callers_transaction():
        return record_overlaps(session_id)
    if in_callers_transaction():
        transaction.on_commit(overlap_writer.request, robust=True)
    else:
        overlap_writer.request()
    return []


def _count(blocked: list[Holder], outcome: Outcome, asked: bool) -> None:
    if not asked:
        return
    outcome_label = "blocked" if blocked else ("warned" if outcome.warnings else "clear")
    metrics.file_claim_checks_total.labels(outcome_label).inc()
    if blocked or outcome.warnings:
        logger.warning("file claim %s", outcome_label, extra={
            "paths": sorted({h.path for h in (blocked or outcome.warnings)})})


# -- releasing ------------------------------------------------------------------------------

def release(session_id: str, paths: list[str] | None = None) -> dict[str, Any]:
    """End the session's claims on ``paths`` (None: all of them); they warn no one."""
    who = claimant_any(session_id)
    wanted = None if paths is None else list(dict.fromkeys(
        repository_path(p, who[1]) for p in paths))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {CLAIMS_TABLE} SET released_at = now() WHERE session_id = %s "
            "AND released_at IS NULL AND (%s::text[] IS NULL OR path = ANY(%s::text[])) "
            "RETURNING path", [session_id, wanted, wanted])
        released = sorted(row[0] for row in cursor.fetchall())
    return {"success": True, "sessionId": session_id, "released": released,
            "timestamp": now_iso()}


# The flush of edits the check before them claimed already: one statement renews them.
_RENEW = f"""
WITH s AS (SELECT session_id, task_id, rtrim(coalesce(project_dir, ''), '/') AS root
           FROM {qualified('active_sessions')} WHERE session_id = %(me)s),
wanted AS (SELECT DISTINCT CASE WHEN s.root <> '' AND starts_with(p, s.root || '/')
                           THEN substr(p, length(s.root) + 2) ELSE p END AS path
           FROM unnest(%(paths)s::text[]) AS p, s),
renewed AS (
  UPDATE {CLAIMS_TABLE} c SET touched_at = now(),
         expires_at = GREATEST(c.expires_at, now() + make_interval(secs => %(ttl)s))
  FROM s WHERE c.session_id = s.session_id AND c.task_id IS NOT DISTINCT FROM s.task_id
    AND c.path IN (SELECT path FROM wanted) AND c.released_at IS NULL
    AND c.expires_at > now()
  RETURNING 1)
SELECT (SELECT count(*) FROM wanted) AS wanted, (SELECT count(*) FROM renewed) AS renewed
FROM @COMMIT@ AS commit_mode
"""
_RENEW_SQL = {commit: _RENEW.replace("@COMMIT@", commit) for commit in (ASYNC_COMMIT, SYNC_COMMIT)}


def renew_from_activity(session_id: str, paths: list[str]) -> bool:
    """Edits a flush reported: the session holds those paths. Usually the check before
    the edit claimed them and one statement renews them; a path it did not claim (the
    check did not reach the service, or a client without it) is claimed now, with what
    a claim does (warning as a notice, conflict, the holder's notice). True when it
    claimed (the session may have a notice now)."""
    row = retried_statement(lambda: prepared.fetch_one(
        _RENEW_SQL[async_commit_sql()],
        {"me": session_id, "paths": paths, "ttl": ttl_default()}))
    if row["wanted"] == row["renewed"]:
        return False
    try:
        claim(session_id, paths, source="activity")
    except OrchestratorError as exc:
        logger.info("claims not renewed", extra={"sessionId": session_id,
                                                  "reason": exc.code})
    return True
