"""Bounded storage: prune old context versions, checkpoints over a
per-task quota and the event logs of sessions long ended.

Run by the Celery beat job ``retention`` and by ``manage.py prune [--dry-run]``; the
policy comes from the RETENTION_* settings. What is kept, always:

- every context version, unless the operator chose to trim (RETENTION_KEEP_VERSIONS >= 1):
  the audit trail is the full history of a task, and STORAGE_QUOTA_BYTES already
  bounds storage. When trimming, per task the newest RETENTION_KEEP_VERSIONS versions and
  every version younger than RETENTION_KEEP_DAYS;
- every version a checkpoint needs (its snapshot's ``taskVersions``, or the versions of
  the rows of a snapshot stored in clear), so rolling back to it stays explainable;
- every version of a task with an open conflict (unresolved, investigating, escalated):
  resolving it may need the history;
- within the checkpoint quota, the newest checkpoints; beyond it automatic checkpoints
  (type ``auto``: rollback backups) go first, oldest first, and checkpoints a caller
  created only when RETENTION_PRUNE_LABELLED_CHECKPOINTS is set;
- events of sessions that are still running or still need recovery.

Task backup files (``task-agents/<taskId>.json`` of each project's CONTEXT_DIR)
of archived tasks, and of completed tasks not updated for RETENTION_TASK_FILE_DAYS, leave
``task-agents/``, so the directory holds the contexts still in play: appended to the project's
``archive/task-agents-<YYYY-MM>.jsonl.gz`` (one JSON line per file: taskId, reason,
archivedAt, the file) and removed, or only removed with RETENTION_TASK_FILE_ACTION=delete.
Postgres holds the task; a later save writes its file again, and conflict detection only
compares the files that exist, so a missing one is never reported.

Sessions over (ended or recovered, needing no recovery) for longer than
RETENTION_EVENT_DAYS go with their tool history, and handoff notes replaced that long
ago: the hourly stale-session sweep never deletes anything. It also drops the ownership
rows (foundation.core.models.SessionOwner) of sessions that no
longer exist, the file claims that count for no one any more (their session is over or
gone, or they lapsed longer than FILE_CLAIM_RECENT_SECONDS ago, with nothing left to
record), and the notices delivered (or left undelivered by a session that is over) longer
than RETENTION_EVENT_DAYS ago.

context_versions and the event log are immutable by trigger. Deleting goes through the
guard's deliberate path: each batch is its own transaction that sets
``orchestrator.allow_version_pruning = 'on'`` for that transaction only. Each DELETE
re-applies the rules, so a checkpoint taken during a run still protects its versions.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import connection, transaction

from foundation.backends import files
from foundation.core.db import qualified
from foundation.core.models import SessionOwner

logger = logging.getLogger("orchestrator.retention")

OPEN_CONFLICT_STATUSES = ("unresolved", "investigating", "escalated")
ENDED_SESSION_STATUSES = ("ended", "recovered")
# Task files retention archives: every archived task's, and completed tasks' once old.
FILE_ARCHIVED_STATUSES = ("archived",)
FILE_AGED_STATUSES = ("completed",)


@dataclass(frozen=True)
class RetentionPolicy:
    keep_versions: int | None  # None: keep every version (the default)
    keep_days: float
    checkpoints_per_task: int
    prune_labelled_checkpoints: bool
    event_days: float
    batch_size: int
    task_file_days: float = 30.0
    task_file_action: str = "archive"  # or "delete"

    @classmethod
    def from_settings(cls) -> RetentionPolicy:
        return cls(keep_versions=settings.RETENTION_KEEP_VERSIONS or None,
                   keep_days=settings.RETENTION_KEEP_DAYS,
                   checkpoints_per_task=max(0, settings.RETENTION_CHECKPOINTS_PER_TASK),
                   prune_labelled_checkpoints=settings.RETENTION_PRUNE_LABELLED_CHECKPOINTS,
                   event_days=settings.RETENTION_EVENT_DAYS,
                   batch_size=max(1, settings.RETENTION_BATCH_SIZE),
                   task_file_days=settings.RETENTION_TASK_FILE_DAYS,
                   task_file_action=settings.RETENTION_TASK_FILE_ACTION)


@dataclass
class PruneReport:
    dry_run: bool
    versions_by_task: Counter = field(default_factory=Counter)
    checkpoints: list[str] = field(default_factory=list)
    events_by_session: Counter = field(default_factory=Counter)
    session_owners: int = 0
    claims: int = 0
    notices: int = 0
    task_files: list[str] = field(default_factory=list)
    # Sessions over for longer than RETENTION_EVENT_DAYS, removed with their tool history;
    # handoff notes replaced that long ago.
    sessions: int = 0
    handoffs: int = 0

    def lines(self) -> list[str]:
        verb = "would delete" if self.dry_run else "deleted"
        versions = sum(self.versions_by_task.values())
        events = sum(self.events_by_session.values())
        lines = [f"{verb} {versions} context versions of {len(self.versions_by_task)} tasks"]
        lines += [f"  {task}: {count}" for task, count in sorted(self.versions_by_task.items())]
        lines.append(f"{verb} {len(self.checkpoints)} checkpoints")
        lines += [f"  {checkpoint_id}" for checkpoint_id in self.checkpoints]
        lines.append(f"{verb} {events} session events of {len(self.events_by_session)} "
                     "sessions")
        lines += [f"  {session}: {count}"
                  for session, count in sorted(self.events_by_session.items())]
        if not self.dry_run:
            lines.append(f"deleted {self.sessions} sessions long over (with their tool "
                         f"history) and {self.handoffs} replaced handoff notes")
        lines.append(f"{'would archive' if self.dry_run else 'archived'} "
                     f"{len(self.task_files)} task files")
        lines += [f"  {task_id}" for task_id in self.task_files]
        return lines

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> PruneReport:
        """The report back from the ``prune`` tool's answer (``as_dict``)."""
        return cls(dry_run=answer["dryRun"],
                   versions_by_task=Counter(answer.get("versionsByTask") or {}),
                   checkpoints=list(answer.get("checkpoints") or []),
                   events_by_session=Counter(answer.get("eventsBySession") or {}),
                   session_owners=answer.get("sessionOwners", 0),
                   claims=answer.get("claims", 0), notices=answer.get("notices", 0),
                   task_files=list(answer.get("taskFiles") or []),
                   sessions=answer.get("sessions", 0), handoffs=answer.get("handoffs", 0))

    def as_dict(self) -> dict[str, Any]:
        return {"dryRun": self.dry_run,
                "versions": sum(self.versions_by_task.values()),
                "versionsByTask": dict(self.versions_by_task),
                "checkpoints": list(self.checkpoints),
                "events": sum(self.events_by_session.values()),
                "eventsBySession": dict(self.events_by_session),
                "sessionOwners": self.session_owners,
                "claims": self.claims, "notices": self.notices,
                "taskFiles": list(self.task_files),
                "sessions": self.sessions, "handoffs": self.handoffs}


def _events_table() -> str:
    return connection.ops.quote_name(apps.get_model("agent_sessions",
                                                    "SessionEvent")._meta.db_table)


def _prunable_versions_sql() -> str:
    """SELECT id, task_id of the versions the rules allow deleting (parameters: keep,
    seconds)."""
    versions, checkpoints = qualified("context_versions"), qualified("checkpoints")
    conflicts = qualified("context_conflicts")
    open_statuses = ", ".join(f"'{s}'" for s in OPEN_CONFLICT_STATUSES)
    return f"""
        WITH ranked AS (
            SELECT v.id, v.task_id, v.version, v.created_at,
                   max(v.version) OVER (PARTITION BY v.task_id) AS latest
            FROM {versions} v
        ), needed AS (
            SELECT tv.key AS task_id, NULLIF(tv.value, '')::int AS version
            FROM {checkpoints} c, jsonb_each_text(CASE WHEN jsonb_typeof(
                c.snapshot->'taskVersions') = 'object' THEN c.snapshot->'taskVersions'
                ELSE '{{}}'::jsonb END) tv
            UNION
            SELECT t.key, NULLIF(t.value->>'version', '')::int
            FROM {checkpoints} c, jsonb_each(CASE WHEN jsonb_typeof(c.snapshot->'tasks')
                = 'object' THEN c.snapshot->'tasks' ELSE '{{}}'::jsonb END) t
            WHERE jsonb_typeof(t.value) = 'object'
        )
        SELECT r.id, r.task_id FROM ranked r
        WHERE r.version <= r.latest - %s
          AND r.created_at < now() - make_interval(secs => %s)
          AND NOT EXISTS (SELECT 1 FROM needed n
                          WHERE n.task_id = r.task_id AND n.version = r.version)
          AND NOT EXISTS (SELECT 1 FROM {conflicts} k
                          WHERE k.resolution_status IN ({open_statuses})
                            AND r.task_id IN (k.task_a_id, k.task_b_id))
    """


def _prunable_events_sql() -> str:
    """SELECT id, session_id of events of long-ended or removed sessions (parameter:
    seconds, twice)."""
    sessions = qualified("active_sessions")
    ended = ", ".join(f"'{s}'" for s in ENDED_SESSION_STATUSES)
    return f"""
        SELECT e.id, e.session_id FROM {_events_table()} e
        LEFT JOIN {sessions} s ON s.session_id = e.session_id
        WHERE (s.session_id IS NULL AND e.created_at < now() - make_interval(secs => %s))
           OR (s.status IN ({ended}) AND s.recovery_needed IS NOT TRUE
               AND COALESCE(s.ended_at, s.last_heartbeat, s.started_at)
                   < now() - make_interval(secs => %s))
    """


def _select(sql: str, params: list[Any]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _delete_in_batches(table: str, candidates_sql: str, params: list[Any],
                       batch_size: int) -> Counter:
    """Delete what ``candidates_sql`` (id, group) selects, ``batch_size`` rows per
    transaction through the immutability guard's pruning path; counts per group."""
    deleted: Counter = Counter()
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT set_config('orchestrator.allow_version_pruning', 'on', true)")
            cursor.execute(
                f"DELETE FROM {table} WHERE id IN (SELECT id FROM ({candidates_sql}) AS c "
                f"LIMIT %s) RETURNING id", [*params, batch_size])
            ids = [row[0] for row in cursor.fetchall()]
        if not ids:
            return deleted
        deleted.update({"rows": len(ids)})


def _delete_grouped(table: str, candidates_sql: str, params: list[Any],
                    batch_size: int) -> Counter:
    """``_delete_in_batches`` reporting per group (task / session): the groups are read
    first, then the deletes re-check the rules, so the counts are exact."""
    groups = Counter(group for _, group in _select(candidates_sql, params))
    if not groups:
        return groups
    counted = _delete_in_batches(table, candidates_sql, params, batch_size)["rows"]
    if counted != sum(groups.values()):  # rows protected or added while running
        logger.info("retention: %s changed while pruning (%s planned, %s deleted)",
                    table, sum(groups.values()), counted)
    return groups


def _checkpoints_over_quota(policy: RetentionPolicy) -> list[str]:
    """Ids of the checkpoints beyond each task's quota, automatic ones first."""
    rows = _select(
        f"SELECT checkpoint_id, task_id, checkpoint_type FROM {qualified('checkpoints')} "
        f"WHERE task_id IN (SELECT task_id FROM {qualified('checkpoints')} "
        "WHERE task_id IS NOT NULL GROUP BY task_id HAVING count(*) > %s) "
        "ORDER BY task_id, created_at, checkpoint_id", [policy.checkpoints_per_task])
    by_task: dict[str, list[tuple[str, str]]] = {}
    for checkpoint_id, task_id, checkpoint_type in rows:
        by_task.setdefault(task_id, []).append((checkpoint_id, checkpoint_type))
    doomed: list[str] = []
    for oldest_first in by_task.values():
        excess = len(oldest_first) - policy.checkpoints_per_task
        automatic = [cid for cid, kind in oldest_first if kind == "auto"]
        chosen = automatic[:excess]
        if policy.prune_labelled_checkpoints and len(chosen) < excess:
            labelled = [cid for cid, kind in oldest_first if kind != "auto"]
            chosen += labelled[:excess - len(chosen)]
        doomed += chosen
    return doomed


def prune(policy: RetentionPolicy | None = None, *, dry_run: bool = False) -> PruneReport:
    """Apply the retention policy (or only report what it would delete)."""
    policy = policy or RetentionPolicy.from_settings()
    report = PruneReport(dry_run=dry_run)
    # Checkpoints first: the versions only they needed become prunable in the same run.
    report.checkpoints = _checkpoints_over_quota(policy)
    if not dry_run:
        for start in range(0, len(report.checkpoints), policy.batch_size):
            batch = report.checkpoints[start:start + policy.batch_size]
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"DELETE FROM {qualified('checkpoints')} "
                               "WHERE checkpoint_id = ANY(%s)", [batch])
    # Versions only when the operator chose to trim them: by default history is whole.
    if policy.keep_versions is not None:
        version_params = [policy.keep_versions, policy.keep_days * 86400]
        report.versions_by_task = Counter(
            task for _, task in _select(_prunable_versions_sql(), version_params)
        ) if dry_run else _delete_grouped(qualified("context_versions"),
                                          _prunable_versions_sql(), version_params,
                                          policy.batch_size)
    event_params = [policy.event_days * 86400] * 2
    if dry_run:
        report.events_by_session = Counter(
            session for _, session in _select(_prunable_events_sql(), event_params))
    else:
        report.events_by_session = _delete_grouped(
            _events_table(), _prunable_events_sql(), event_params, policy.batch_size)
        report.session_owners = _forget_owners_of_removed_sessions()
        report.sessions = _remove_sessions_long_over(policy.event_days * 86400,
                                                     policy.batch_size)
        report.handoffs = _forget_replaced_handoffs(policy.event_days * 86400)
        report.claims = _forget_spent_claims()
        report.notices = _forget_old_notices(policy.event_days * 86400)
    report.task_files = archive_task_files(policy, dry_run=dry_run)
    logger.info("retention %s", "dry run" if dry_run else "run", extra=report.as_dict())
    return report


def _forget_owners_of_removed_sessions() -> int:
    """Owner rows of sessions that no longer exist (the stale-session sweep removed them)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {SessionOwner._meta.db_table} o WHERE NOT EXISTS (SELECT 1 FROM "
            f"{qualified('active_sessions')} s WHERE s.session_id = o.session_id)")
        return cursor.rowcount


def _remove_sessions_long_over(seconds: float, batch_size: int) -> int:
    """Sessions ended (or recovered) longer than ``seconds`` ago and needing no recovery:
    their events went above; the rows, tool history and detail go now. The stale-session
    sweep only closes sessions: retention is the one that deletes history."""
    from sessions.services.recovery import remove_sessions

    ended = ", ".join(f"'{s}'" for s in ENDED_SESSION_STATUSES)
    removed = 0
    while True:
        ids = [row[0] for row in _select(
            f"SELECT session_id FROM {qualified('active_sessions')} "
            f"WHERE status IN ({ended}) AND recovery_needed IS NOT TRUE "
            "AND COALESCE(ended_at, last_heartbeat, started_at) "
            "< now() - make_interval(secs => %s) LIMIT %s", [seconds, batch_size])]
        if not ids:
            return removed
        removed += len(remove_sessions(ids))


def _forget_replaced_handoffs(seconds: float) -> int:
    """Handoff notes replaced (no longer the project's active one) that long ago."""
    handoffs = apps.get_model("agent_sessions", "SessionHandoff")._meta.db_table
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {handoffs} WHERE active IS NOT TRUE "
                       "AND created_at < now() - make_interval(secs => %s)", [seconds])
        return cursor.rowcount


def _forget_spent_claims() -> int:
    """File claims that warn no one any more and have no overlap left to record."""
    claims = apps.get_model("claims", "FileClaim")._meta.db_table
    live = "'active', 'compacted'"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {claims} c WHERE cardinality(c.overlaps_pending) = 0 AND ("
            "c.released_at IS NOT NULL "
            "OR c.expires_at < now() - make_interval(secs => %s) "
            f"OR NOT EXISTS (SELECT 1 FROM {qualified('active_sessions')} s "
            f"WHERE s.session_id = c.session_id AND s.status IN ({live})))",
            [settings.FILE_CLAIM_RECENT_SECONDS])
        return cursor.rowcount


def _forget_old_notices(seconds: float) -> int:
    """Notices delivered long ago, or never taken by a session that is over or gone."""
    notices = apps.get_model("agent_sessions", "SessionNotice")._meta.db_table
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {notices} n WHERE n.created_at < now() - make_interval(secs => %s) "
            "AND (n.delivered_at IS NOT NULL OR NOT EXISTS (SELECT 1 FROM "
            f"{qualified('active_sessions')} s WHERE s.session_id = n.session_id "
            "AND s.status IN ('active', 'compacted')))", [seconds])
        return cursor.rowcount


def _stale_task_files(policy: RetentionPolicy) -> dict[str, dict[str, str]]:
    """{project: {taskId: reason}} of the tasks whose backup file retention takes away:
    archived ones, and completed ones not updated for ``task_file_days``."""
    archived = ", ".join(f"'{s}'" for s in FILE_ARCHIVED_STATUSES)
    aged = ", ".join(f"'{s}'" for s in FILE_AGED_STATUSES)
    rows = _select(
        f"SELECT project_id, task_id, status FROM {qualified('task_contexts')} "
        f"WHERE status IN ({archived}) OR (status IN ({aged}) "
        "AND COALESCE(updated_at, created_at) < now() - make_interval(secs => %s))",
        [policy.task_file_days * 86400])
    found: dict[str, dict[str, str]] = {}
    for project_id, task_id, status in rows:
        found.setdefault(project_id, {})[task_id] = status
    return found


def _on_disk(directory) -> set[str]:
    try:
        return {e.name[:-5] for e in os.scandir(directory)
                if e.name.endswith(".json") and not e.name.startswith(".")}
    except FileNotFoundError:
        return set()


def archive_task_files(policy: RetentionPolicy, *, dry_run: bool = False) -> list[str]:
    """Archive (or delete) the backup files of archived and long-completed tasks; the ids
    of the tasks whose file went (or would go), sorted.

    Each file is re-read under its lock (the one the save path's file writer takes): one a
    save rewrote meanwhile for a task that is live again (any other status) stays. The
    archive is fsynced once per project; a crash before that loses at most copies of
    what Postgres holds."""
    if not settings.ENABLE_FILE_SYNC:
        return []
    done: list[str] = []
    month = datetime.now(UTC).strftime("%Y-%m")
    for project_id, statuses in _stale_task_files(policy).items():
        directory = files.context_dir(project_id) / "task-agents"
        present = sorted(_on_disk(directory) & set(statuses))
        if dry_run or not present:
            done += present
            continue
        archive = None
        if policy.task_file_action != "delete":
            target = files.context_dir(project_id) / "archive" / f"task-agents-{month}.jsonl.gz"
            target.parent.mkdir(parents=True, exist_ok=True)
            archive = target
        with contextlib.ExitStack() as stack:
            sink = None
            if archive is not None:
                stack.enter_context(files.exclusive(archive))
                raw = stack.enter_context(open(archive, "ab"))
                sink = stack.enter_context(gzip.GzipFile(fileobj=raw, mode="wb"))
            for task_id in present:
                path = files.task_file(task_id, project_id)
                with files.exclusive(path):
                    content = files.read_json(path)
                    if content is None and not path.exists():
                        continue
                    if isinstance(content, dict) and content.get("status") not in (
                            *FILE_ARCHIVED_STATUSES, *FILE_AGED_STATUSES):
                        continue  # saved again since, live once more
                    if sink is not None:
                        sink.write(json.dumps({
                            "taskId": task_id, "projectId": project_id,
                            "reason": statuses[task_id],
                            "archivedAt": datetime.now(UTC).isoformat(),
                            "file": content}, default=str).encode() + b"\n")
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                done.append(task_id)
            if sink is not None:
                sink.close()
                raw.flush()
                os.fsync(raw.fileno())
    if done and not dry_run:
        logger.info("retention: %s task files %sd", len(done),
                    "delete" if policy.task_file_action == "delete" else "archive")
    return sorted(done)
