"""Bounded storage: prune old context versions, checkpoints over a
per-task quota and the event logs of sessions long ended.

Each app prunes its own rows (only the owner of a table writes it): the apps register
their pruners (foundation.core.retention.register_pruner, in their AppConfig.ready:
contexts, sessions, claims); this job runs them in that order and reports what each
deleted.

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

import logging
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

from foundation.core.retention import RetentionPolicy, pruners

logger = logging.getLogger("orchestrator.retention")

__all__ = ["PruneReport", "RetentionPolicy", "prune"]


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
    # What each app's pruner reported, by app, in the order they ran.
    by_app: dict[str, dict[str, Any]] = field(default_factory=dict)

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


def prune(policy: RetentionPolicy | None = None, *, dry_run: bool = False) -> PruneReport:
    """Apply the retention policy (or only report what it would delete): each app's pruner
    deletes its own rows; the report gathers their answers."""
    policy = policy or RetentionPolicy.from_settings()
    report = PruneReport(dry_run=dry_run)
    names = {f.name for f in fields(PruneReport)} - {"dry_run", "by_app"}
    for app, pruner in pruners().items():
        answer = pruner(policy, dry_run)
        unknown = set(answer) - names
        if unknown:
            raise ValueError(f"retention: the {app} pruner reported {sorted(unknown)}")
        for name, value in answer.items():
            setattr(report, name, value)
        report.by_app[app] = {name: (sum(value.values()) if isinstance(value, Counter)
                                     else len(value) if isinstance(value, list) else value)
                              for name, value in answer.items()}
    logger.info("retention %s", "dry run" if dry_run else "run",
                extra={**report.as_dict(), "byApp": report.by_app})
    return report
