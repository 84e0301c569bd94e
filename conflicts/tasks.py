"""Periodic conflict detection on Celery beat (spec 3.2.4), when ENABLE_CONFLICT_DETECTION.

Each new conflict is logged at WARN ("Conflict detected") and counted by the detection
service; overlapping runs are harmless because storing is deduplicated under a lock.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from conflicts.services.detection import detect_conflicts
from orchestrator.core.errors import OrchestratorError
from orchestrator.core.jobruns import record_job_run

logger = logging.getLogger("orchestrator.conflicts")


@shared_task(name="conflicts.detect_conflicts")
def detect_conflicts_task() -> dict[str, Any]:
    with record_job_run("conflict detection") as run:
        try:
            result = detect_conflicts()
        except OrchestratorError as exc:
            # The next beat tries again; report it, do not crash the worker.
            logger.error("periodic conflict detection failed: %s", exc)
            run.fail(f"{exc.code}: {exc.message}")
            return exc.to_dict()
        run.ok(", ".join(f"{key} {value}" for key, value in result["summary"].items()))
        return {"summary": result["summary"], "skipped": result.get("skipped", [])}

