"""Bounded storage, from below: the retention policy (the RETENTION_* settings) and the
pruners the apps register. Each app prunes its own rows (only the owner of a table writes
it); the retention job above the apps (orchestrator.ops.retention) runs the pruners in the
order they were registered and reports what each deleted. The helpers delete in batches,
each its own transaction through the immutability guards' deliberate pruning path."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction

logger = logging.getLogger("orchestrator.retention")


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


# An app's pruner: (policy, dry_run) -> what it deleted (or would), as fields of the
# retention report (orchestrator.ops.retention.PruneReport).
Pruner = Callable[[RetentionPolicy, bool], dict[str, Any]]
_pruners: dict[str, Pruner] = {}


def register_pruner(app: str, prune: Pruner) -> None:
    """List an app's pruner (each app registers its own, in its AppConfig.ready)."""
    _pruners[app] = prune


def pruners() -> dict[str, Pruner]:
    """The registered pruners by app, in the order they were registered."""
    return dict(_pruners)


def select(sql: str, params: list[Any]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def delete_in_batches(table: str, candidates_sql: str, params: list[Any],
                      batch_size: int) -> int:
    """Delete what ``candidates_sql`` (id, group) selects from the caller's own ``table``,
    ``batch_size`` rows per transaction through the immutability guard's pruning path;
    how many. Each DELETE re-applies the rules, so what became protected meanwhile stays."""
    deleted = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT set_config('orchestrator.allow_version_pruning', 'on', true)")
            cursor.execute(
                f"DELETE FROM {table} WHERE id IN (SELECT id FROM ({candidates_sql}) AS c "
                f"LIMIT %s) RETURNING id", [*params, batch_size])
            ids = [row[0] for row in cursor.fetchall()]
        if not ids:
            return deleted
        deleted += len(ids)


def delete_grouped(table: str, candidates_sql: str, params: list[Any],
                   batch_size: int) -> Counter:
    """``delete_in_batches`` reporting per group (task / session): the groups are read
    first, then the deletes re-check the rules, so the counts are exact."""
    groups = Counter(group for _, group in select(candidates_sql, params))
    if not groups:
        return groups
    counted = delete_in_batches(table, candidates_sql, params, batch_size)
    if counted != sum(groups.values()):  # rows protected or added while running
        logger.info("retention: %s changed while pruning (%s planned, %s deleted)",
                    table, sum(groups.values()), counted)
    return groups
