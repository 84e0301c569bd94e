"""Periodic jobs of the orchestrator itself (scheduled in orchestrator/celery.py): storage
retention, and a backup when BACKUP_DIR is set; tool calls through the registry."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings

from foundation.core.errors import OrchestratorError
from foundation.core.jobruns import run_job
from foundation.core.tools import ToolContext, call_tool
from foundation.observability import metrics

logger = logging.getLogger("orchestrator.backup")


def summarize_prune(result: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in result.items()
                     if isinstance(v, int | float) and not isinstance(v, bool))


@shared_task(name="orchestrator.retention")
def retention_task(transport: str = "task") -> dict[str, Any]:
    return run_job("retention", "prune", transport=transport, summarize=summarize_prune)


@shared_task(name="orchestrator.backup")
def backup_task() -> dict[str, Any]:
    """A backup into BACKUP_DIR, keeping its newest BACKUP_KEEP archives. Not a recorded
    job run: the job gauge going stale is what raises the alarm."""
    try:
        result = call_tool("backup", {"target": settings.BACKUP_DIR,
                                      "keep": settings.BACKUP_KEEP},
                           ToolContext("task", actor="celery-beat"))
    except OrchestratorError as exc:
        # The next beat tries again.
        logger.error("Scheduled backup failed: %s", exc)
        return exc.to_dict()
    metrics.mark_job_success("backup")
    logger.info("Backup written", extra={"path": result["path"], "bytes": result["bytes"],
                                         "removed": result["removed"]})
    return result
