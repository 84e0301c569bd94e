"""What retention prunes of the contexts app (registered in ContextsConfig.ready; the
rules are on orchestrator.ops.retention's page): checkpoints over each task's quota,
context versions when the operator chose to trim them, and the backup files of archived
and long-completed tasks."""

from __future__ import annotations

import contextlib
import gzip
import json
import logging
import os
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from foundation.backends import files
from foundation.core.db import qualified
from foundation.core.retention import RetentionPolicy, delete_grouped, select

logger = logging.getLogger("orchestrator.retention")

# Conflicts still open protect the versions of their tasks: resolving may need them.
OPEN_CONFLICT_STATUSES = ("unresolved", "investigating", "escalated")
FILE_ARCHIVED_STATUSES = ("archived",)
FILE_AGED_STATUSES = ("completed",)


def prune(policy: RetentionPolicy, dry_run: bool) -> dict[str, Any]:
    # Checkpoints first: the versions only they needed become prunable in the same run.
    checkpoints = _checkpoints_over_quota(policy)
    if not dry_run:
        for start in range(0, len(checkpoints), policy.batch_size):
            batch = checkpoints[start:start + policy.batch_size]
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"DELETE FROM {qualified('checkpoints')} "
                               "WHERE checkpoint_id = ANY(%s)", [batch])
    versions: Counter = Counter()
    # Versions only when the operator chose to trim them: by default history is whole.
    if policy.keep_versions is not None:
        params = [policy.keep_versions, policy.keep_days * 86400]
        versions = Counter(
            task for _, task in select(_prunable_versions_sql(), params)
        ) if dry_run else delete_grouped(qualified("context_versions"),
                                         _prunable_versions_sql(), params, policy.batch_size)
    return {"checkpoints": checkpoints, "versions_by_task": versions,
            "task_files": archive_task_files(policy, dry_run=dry_run)}


def _prunable_versions_sql() -> str:
    """SELECT id, task_id of the versions the rules allow deleting (parameters: keep,
    seconds). Reads the conflicts app's table in the same statement: each batch's DELETE
    re-applies the rule, so a conflict opened during a run still protects its versions."""
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


def _checkpoints_over_quota(policy: RetentionPolicy) -> list[str]:
    """Ids of the checkpoints beyond each task's quota, automatic ones first."""
    rows = select(
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


def _stale_task_files(policy: RetentionPolicy) -> dict[str, dict[str, str]]:
    """{project: {taskId: reason}} of the tasks whose backup file retention takes away:
    archived ones, and completed ones not updated for ``task_file_days``."""
    archived = ", ".join(f"'{s}'" for s in FILE_ARCHIVED_STATUSES)
    aged = ", ".join(f"'{s}'" for s in FILE_AGED_STATUSES)
    rows = select(
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
