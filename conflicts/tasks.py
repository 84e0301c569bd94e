"""Periodic conflict detection on Celery beat (spec 3.2.4), when ENABLE_CONFLICT_DETECTION.

Each new conflict is logged at WARN ("Conflict detected") and counted by the detection
service; overlapping runs are harmless because storing is deduplicated under a lock.
"""

from __future__ import annotations

import logging
from typing import Any

from conflicts.services.detection import detect_conflicts
from orchestrator import metrics
from orchestrator.celery import app
from orchestrator.errors import OrchestratorError

logger = logging.getLogger("orchestrator.conflicts")


@app.task(name="conflicts.detect_conflicts")
def detect_conflicts_task() -> dict[str, Any]:
    try:
        result = detect_conflicts()
    except OrchestratorError as exc:
        # The next beat tries again; report it, do not crash the worker.
        logger.error("periodic conflict detection failed: %s", exc)
        return exc.to_dict()
    metrics.mark_job_success("detect_conflicts")
    return {"summary": result["summary"], "skipped": result.get("skipped", [])}

