"""Live file claims: who is editing which file of a project now.

A session claims a path when it is about to edit it (the Claude Code hook's check before
Edit/Write/MultiEdit/NotebookEdit), when its activity reports an edit, or by calling
``claim_files``. Paths are relative to the repository's root, so two clones or worktrees
of one repository name a file the same way. A claim is *held* while its session is live
(status active or compacted and a heartbeat younger than CRASH_THRESHOLD_MINUTES: the
watchdog keeps a working Claude Code session beating), it is not released, and its TTL
since the session last touched the path has not run out; an expired claim of a live
session is *recently held* for FILE_CLAIM_RECENT_SECONDS more. A session that ends or
crashes holds nothing from that moment: every query joins the session's row.

Claiming a path that another live session on another task holds or recently held:

- policy ``warn`` (the project's, ``claims.policy``): the claim is made and the answer
  carries a warning (who, which task, how long ago, what that task is doing) for the
  claimant's model; said once per other session and path;
- policy ``block``: nothing is claimed and the answer is ``blocked`` with the reason;
- a *held* claim of another task is a file_conflict at once: both tasks list the path in
  keyFiles and the detector's own query stores what it finds for the pair (its rules,
  severity and de-duplication), and the other session gets a notice for its next hook
  answer (``sessions.services.notices``).

Sessions of the same task, and a session's own claims, never warn. Every warning, notice
and block is an event in the session's log and counts in file_claim_checks_total.

Two agents claiming one path at the same moment are serialised by a transaction-level
advisory lock per (project, path), so one of them always sees the other.
"""

from __future__ import annotations

import json
import logging
import posixpath
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import OperationalError, connection, transaction

from claims.models import FileClaim
from conflicts.models import ContextConflict
from conflicts.services.detection import Scope, detect_file_conflicts
from conflicts.services.store import OPEN_STATUSES, STORE_LOCK_KEY, store_candidates
from contexts.services.edit_policy import POLICY_KEY, EditPolicy, policy_from
from contexts.services.key_files import append_key_files
from foundation.backends import prepared
from foundation.backends.coalesce import CoalescingWriter
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
from foundation.core.errors import OrchestratorError, session_not_found, task_not_found
from foundation.core.stamps import iso, now_iso
from foundation.observability import metrics
from sessions.models import SessionDetail
from sessions.services.common import LIVE_STATUSES, refuse_for_status
from sessions.services.events import append_event
from sessions.services.notices import NOTICES_TABLE, add_notices, take_notices
from sessions.services.pause import paused_refusal

logger = logging.getLogger("orchestrator.claims")

CLAIMS_TABLE = FileClaim._meta.db_table
MAX_PATHS = 100
MAX_PATH_LENGTH = 1000
MIN_TTL_SECONDS, MAX_TTL_SECONDS = 30, 86400


def ttl_default() -> int:
    return settings.FILE_CLAIM_TTL_SECONDS


def _live_seconds() -> float:
    return float(settings.CRASH_THRESHOLD_MINUTES) * 60


# -- who is claiming ------------------------------------------------------------------------

@dataclass
class Claimant:
    session_id: str
    project_id: str
    task_id: str | None
    root: str
    agent_id: str | None
    policy: EditPolicy


# session id -> (project, repository root, the project's fileClaims as stored, its policy),
# as claimant() last read them: what the one-round-trip claim (_claim_at_once) needs to
# know before it is sent. A session's project and root never change; the policy can, so
# that statement checks it is still the one cached (else the claim takes the long way,
# which reads it again). Per process, bounded: cleared when full.
_claimants: dict[str, tuple[str, str, str | None, EditPolicy]] = {}
CACHED_CLAIMANTS = 20000


_CLAIMANT = ("SELECT s.status, s.project_id, s.task_id, s.project_dir, d.agent_id, "
             "g.orchestrator_context, d.paused_at, d.pause_reason, d.pause_resets_at "
             f"FROM {qualified('active_sessions')} s "
             f"LEFT JOIN {SessionDetail._meta.db_table} d ON d.session_id = s.session_id "
             f"LEFT JOIN {qualified('global_context')} g ON g.project_id = s.project_id "
             "WHERE s.session_id = %s")


def claimant(session_id: str, *, source: str = "tool") -> Claimant:
    """The session with its project's policy; E1600 unknown, E1602 / E1603 not live,
    E1633 paused (a paused session claims no new files; the claims a hook
    flush makes for edits already done are kept, ``source`` "activity")."""
    rows = prepared.fetch_all(_CLAIMANT, [session_id])  # prepared: planning cost the most
    row = rows[0] if rows else None
    if row is None:
        raise session_not_found(session_id)
    status = row[0] or "active"
    if status not in LIVE_STATUSES:
        raise refuse_for_status(session_id, status, action="claiming files")
    if row[6] is not None and source != "activity":
        raise paused_refusal(session_id, row[7], row[8], action="claiming files")
    stored = _json(row[5])
    who = Claimant(session_id, row[1], row[2], (row[3] or "").rstrip("/"), row[4],
                   policy_from(stored))
    if len(_claimants) >= CACHED_CLAIMANTS:
        _claimants.clear()
    raw = stored.get(POLICY_KEY) if isinstance(stored, dict) else None
    _claimants[session_id] = (who.project_id, who.root,
                              None if raw is None else json.dumps(raw), who.policy)
    return who


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def repository_path(path: str, root: str, *, field_name: str = "paths") -> str:
    """``path`` relative to the session's repository root when it is under it, normalised
    (``./a/../b`` is ``b``); E1612 for a relative path that leaves the repository."""
    text = path.strip().replace("\\", "/")
    if "\x00" in text:
        raise OrchestratorError("E1612", f"{field_name}: a path must not hold a NUL character",
                                {"field": field_name})
    if not text:
        raise OrchestratorError("E1612", f"{field_name}: a path must not be empty",
                                {"field": field_name})
    if text.startswith("/"):
        if root and (text == root or text.startswith(root + "/")):
            text = text[len(root) + 1:] or "."
        else:
            return posixpath.normpath(text)
    normal = posixpath.normpath(text)
    if normal == ".." or normal.startswith("../"):
        raise OrchestratorError("E1612", f"{field_name}: {path!r} leaves the repository",
                                {"field": field_name, "value": path[:200]})
    if normal == ".":
        raise OrchestratorError("E1612", f"{field_name}: {path!r} names the repository "
                                "itself, not a file", {"field": field_name,
                                                       "value": path[:200]})
    return normal


# -- who else holds a path ------------------------------------------------------------------

@dataclass
class Holder:
    project_id: str
    path: str
    session_id: str
    task_id: str | None
    agent_id: str | None
    task_name: str | None
    task_status: str | None
    doing: str | None
    claimed_at: datetime
    touched_at: datetime
    expires_at: datetime
    held: bool
    seconds_ago: float

    def as_dict(self) -> dict[str, Any]:
        return {"projectId": self.project_id, "path": self.path,
                "sessionId": self.session_id, "taskId": self.task_id,
                "taskName": self.task_name, "taskStatus": self.task_status,
                "agentId": self.agent_id, "doing": self.doing,
                "state": "held" if self.held else "recent",
                "claimedAt": iso(self.claimed_at), "lastEditAt": iso(self.touched_at),
                "expiresAt": iso(self.expires_at),
                "secondsSinceEdit": round(self.seconds_ago, 1)}


# Live claims with what a reader shows of their session and task. {where} narrows them.
_HOLDERS = """
SELECT c.project_id, c.path, c.session_id, c.task_id, d.agent_id, t.name, t.status,
       COALESCE(NULLIF(t.immediate_context->>'workingOn', ''), t.current_phase),
       c.claimed_at, c.touched_at, c.expires_at, c.expires_at > now() AS held,
       extract(epoch FROM now() - c.touched_at)
FROM {claims} c
JOIN {sessions} s ON s.session_id = c.session_id
LEFT JOIN {details} d ON d.session_id = c.session_id
LEFT JOIN {tasks} t ON t.task_id = c.task_id
WHERE c.released_at IS NULL
  AND c.expires_at > now() - make_interval(secs => %(recent)s)
  AND s.status IN ('active', 'compacted')
  AND s.last_heartbeat > now() - make_interval(secs => %(live)s)
  AND {where}
ORDER BY c.path, c.touched_at DESC
"""


def _holders(where: str, params: dict[str, Any], *, prepare: bool = False) -> list[Holder]:
    sql = _HOLDERS.format(claims=CLAIMS_TABLE, sessions=qualified("active_sessions"),
                          details=SessionDetail._meta.db_table,
                          tasks=qualified("task_contexts"), where=where)
    params = {"recent": settings.FILE_CLAIM_RECENT_SECONDS, "live": _live_seconds(), **params}
    if prepare:
        rows = prepared.fetch_all(sql, params)
    else:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
    return [Holder(*row[:11], bool(row[11]), float(row[12] or 0)) for row in rows]


_OTHERS = ("c.project_id = %(project)s AND c.path = ANY(%(paths)s::text[]) "
           "AND c.session_id <> %(me)s "
           "AND (%(task)s::text IS NULL OR c.task_id IS DISTINCT FROM %(task)s::text)")


def _others(who: Claimant, paths: list[str]) -> list[Holder]:
    """Claims on ``paths`` that concern ``who``: other sessions, other tasks. Prepared: every
    claim of a file someone else holds asks, and planning the join cost ~0.9 ms of
    Postgres time each, more than running it."""
    return _holders(_OTHERS, {"project": who.project_id, "paths": paths,
                              "me": who.session_id, "task": who.task_id}, prepare=True)


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


def _lock_paths(project_id: str, paths: list[str]) -> None:
    """One advisory lock per (project, path), taken in path order (no deadlock between
    two claimants of overlapping sets)."""
    with connection.cursor() as cursor:
        cursor.execute(_LOCK, {"project": project_id, "sorted": sorted(paths)})


def _known(session_id: str, paths: list[str]) -> dict[str, set[str]]:
    """path -> sessions this session was already told about, for its claims that still
    count (held or recently held); a claim that lapsed starts knowing no one again."""
    rows = prepared.fetch_all(
        f"SELECT path, known_sessions FROM {CLAIMS_TABLE} WHERE session_id = %s "
        "AND path = ANY(%s::text[]) AND released_at IS NULL "
        "AND expires_at > now() - make_interval(secs => %s)",
        [session_id, paths, settings.FILE_CLAIM_RECENT_SECONDS])
    return {path: set(known or ()) for path, known in rows}


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
    with connection.cursor() as cursor:
        cursor.execute(_UPSERT, {"project": who.project_id, "me": who.session_id,
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
    cached = _claimants.get(session_id)
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
            "live": _live_seconds()})
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
        if counted:
            _lock_paths(who.project_id, counted)
        others = _others(who, counted) if counted else []
        known = _known(session_id, counted)
        if others and who.policy.mode == "block" and source != "activity":
            blocked_by = others
        else:
            outcome = _claim_locked(who, counted, others, known, ttl, source)
        if blocked_by:
            _record_event(who.session_id, "edit_blocked", {
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
    _record_event(who.session_id, "edit_warning", parts)
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
        with connection.cursor() as cursor:
            cursor.execute(_PENDING, [session_id, session_id])
            rows = cursor.fetchall()
            if rows:
                # The conflict store's lock before any task's: each overlap locks its
                # tasks (keyFiles) and then stores under this lock, which the batch holds
                # to its end. Taken in that order row after row, two batches deadlocked
                # (one holding the store waiting for a task the other held while waiting
                # for the store): seen six times in two minutes at 2,000 agents.
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [STORE_LOCK_KEY])
        recorded = []
        for claim_id, project_id, path, claimer, task_id, pending, agent_id in rows:
            who = Claimant(claimer, project_id, task_id, "", agent_id, EditPolicy())
            holders = [h for h in _others(who, [path])
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
        _record_event(holder.session_id, "claim_overlap", {
            "path": holder.path, "bySessionId": who.session_id, "byTaskId": who.task_id,
            "conflictId": conflict["conflictId"] if conflict else None})
    add_notices(notices)


def _record_event(session_id: str, content: str, parts: dict[str, Any]) -> None:
    try:
        with transaction.atomic():
            append_event(session_id, "system_event", "system", content, parts)
    except OrchestratorError as exc:  # the session closed meanwhile: nothing to tell it
        logger.info("claim event not recorded", extra={"sessionId": session_id,
                                                       "reason": exc.code})


def _count(blocked: list[Holder], outcome: Outcome, asked: bool) -> None:
    if not asked:
        return
    outcome_label = "blocked" if blocked else ("warned" if outcome.warnings else "clear")
    metrics.file_claim_checks_total.labels(outcome_label).inc()
    if blocked or outcome.warnings:
        logger.warning("file claim %s", outcome_label, extra={
            "paths": sorted({h.path for h in (blocked or outcome.warnings)})})


# -- what the agents are told ---------------------------------------------------------------

def ago(seconds: float) -> str:
    if seconds < 90:
        return f"{max(0, int(seconds))} s ago"
    if seconds < 5400:
        return f"{int(seconds // 60)} min ago"
    return f"{seconds / 3600:.1f} h ago"


def _who(holder: Holder) -> str:
    task = f"task `{holder.task_id}`" if holder.task_id else "no task"
    if holder.task_name and holder.task_name != holder.task_id:
        task += f" ({holder.task_name})"
    doing = f", working on: {holder.doing[:160]}" if holder.doing else ""
    agent = f"{holder.agent_id} " if holder.agent_id else ""
    state = "last edit" if holder.held else "held it until its claim lapsed, last edit"
    return (f"{agent}session `{holder.session_id}` on {task}{doing}; {state} "
            f"{ago(holder.seconds_ago)}")


def warning_text(holders: list[Holder], conflicts: list[dict[str, Any]],
                 recording: list[Holder] | None = None) -> str | None:
    if not holders:
        return None
    lines = ["Session orchestrator: another agent is editing the same file."]
    for holder in holders:
        lines.append(f"- `{holder.path}`: {_who(holder)}.")
    for conflict in conflicts:
        lines.append(f"Recorded as file_conflict {conflict['conflictId']} "
                     f"({conflict['severity']}) between `{conflict['taskAId']}` and "
                     f"`{conflict['taskBId']}`.")
    if recording and not conflicts:
        tasks = ", ".join(sorted({f"`{h.task_id}`" for h in recording}))
        lines.append(f"Recorded as a file_conflict with {tasks}.")
    lines.append("Keep your change to it small and say so in your context "
                 "(save_task_context), or leave the file to that task.")
    return "\n".join(lines)


def blocked_text(holders: list[Holder]) -> str:
    lines = ["Edit refused by the project's file policy (block): another agent's session "
             "holds this file."]
    for holder in holders:
        lines.append(f"- `{holder.path}`: {_who(holder)}.")
    lines.append("Work on other files, or wait until that session ends or releases it.")
    return "\n".join(lines)


def holder_notice(who: Claimant, path: str, conflict: dict[str, Any] | None) -> str:
    agent = f"{who.agent_id} " if who.agent_id else ""
    task = f"task `{who.task_id}`" if who.task_id else "no task"
    text = (f"Session orchestrator: another agent began editing `{path}`, which this "
            f"session is editing: {agent}session `{who.session_id}` on {task}.")
    if conflict:
        text += (f" Recorded as file_conflict {conflict['conflictId']} "
                 f"({conflict['severity']}).")
    return text + " Coordinate before changing it further."


# -- releasing and reading ------------------------------------------------------------------

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


def claimant_any(session_id: str) -> tuple[str, str]:
    """(project, root) of a session in any status (releasing is allowed after its end)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT project_id, project_dir FROM {qualified('active_sessions')} "
                       "WHERE session_id = %s", [session_id])
        row = cursor.fetchone()
    if row is None:
        raise session_not_found(session_id)
    return row[0], (row[1] or "").rstrip("/")


def file_claims(project_ids: list[str] | None, *, paths: list[str] | None = None,
                task_id: str | None = None, session_id: str | None = None,
                include_recent: bool = True) -> dict[str, Any]:
    """Who is editing what now, contested paths first (more than one task holds them)."""
    clauses, params = ["TRUE"], {}
    if project_ids is not None:
        clauses.append("c.project_id = ANY(%(projects)s)")
        params["projects"] = project_ids
    task_project = None
    if task_id is not None:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT project_id FROM {qualified('task_contexts')} "
                           "WHERE task_id = %s", [task_id])
            row = cursor.fetchone()
        if row is None:
            raise task_not_found(task_id)
        task_project = row[0]
        clauses.append("c.task_id = %(task)s")
        params["task"] = task_id
    if session_id is not None:
        clauses.append("c.session_id = %(session)s")
        params["session"] = session_id
    if paths is not None:
        clauses.append("c.path = ANY(%(paths)s)")
        params["paths"] = [repository_path(p, "") for p in paths]
    if not include_recent:
        clauses.append("c.expires_at > now()")
    holders = _holders(" AND ".join(clauses), params)
    if task_project is not None:
        # The other tasks' claims on the task's paths: who it contends with.
        mine = sorted({h.path for h in holders})
        if mine:
            holders += _holders(
                "c.project_id = %(project)s AND c.path = ANY(%(mine)s) "
                "AND c.task_id IS DISTINCT FROM %(task)s" + (
                    "" if include_recent else " AND c.expires_at > now()"),
                {"project": task_project, "mine": mine, "task": task_id})
    return listing(holders)


def listing(holders: list[Holder]) -> dict[str, Any]:
    """A file is one path of one project: the same path in two repositories is two files."""
    tasks_by_file: dict[tuple[str, str], set[str | None]] = {}
    for holder in holders:
        if holder.held:
            tasks_by_file.setdefault((holder.project_id, holder.path), set()).add(
                holder.task_id or holder.session_id)
    contested = {f for f, tasks in tasks_by_file.items() if len(tasks) > 1}
    ordered = sorted(holders, key=lambda h: ((h.project_id, h.path) not in contested,
                                             h.project_id, h.path, not h.held, h.seconds_ago))
    return {"success": True,
            "claims": [{**h.as_dict(), "contested": (h.project_id, h.path) in contested}
                       for h in ordered],
            "contested": sorted({path for _, path in contested}),
            "total": len(ordered), "timestamp": now_iso()}


def live_claim_counts(project_ids: list[str] | None) -> dict[str, int]:
    """For the overview: held claims, files held, and files contested by two tasks."""
    listed = file_claims(project_ids, include_recent=False)
    return {"claims": listed["total"],
            "files": len({(c["projectId"], c["path"]) for c in listed["claims"]}),
            "contested": len({(c["projectId"], c["path"]) for c in listed["claims"]
                              if c["contested"]})}


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
