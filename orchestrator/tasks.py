"""Periodic jobs of the orchestrator itself (scheduled in orchestrator/celery.py)."""

from __future__ import annotations

from typing import Any

from orchestrator import retention
from orchestrator.celery import app


@app.task(name="orchestrator.retention")
def retention_task() -> dict[str, Any]:
    return retention.prune().as_dict()
