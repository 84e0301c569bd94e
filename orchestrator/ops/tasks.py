"""Periodic jobs of the orchestrator itself (scheduled in orchestrator/celery.py): storage
retention, and a backup when BACKUP_DIR is set (see orchestrator.backup)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from orchestrator.core.errors import OrchestratorError
from orchestrator.core.jobruns import record_job_run
from orchestrator.observability import metrics
from orchestrator.ops import backup, retention

logger = logging.getLogger("orchestrator.backup")


@shared_task(name="orchestrator.retention")
def retention_task() -> dict[str, Any]:
    with record_job_run("retention") as run:
        result = retention.prune().as_dict()
        run.ok(", ".join(f"{k}: {v}" for k, v in result.items()
                         if isinstance(v, int | float))[:500])
    return result


@shared_task(name="orchestrator.backup")
def backup_task() -> dict[str, Any]:
    try:
        result = backup.scheduled_backup()
    except (OrchestratorError, OSError) as exc:
        # The next beat tries again; the job gauge going stale is what raises the alarm.
        logger.error("Scheduled backup failed: %s", exc)
        return {"success": False, "error": str(exc)}
    metrics.mark_job_success("backup")
    logger.info("Backup written", extra={"path": result["path"], "bytes": result["bytes"],
                                         "removed": result["removed"]})
    return {"success": True, **result}
