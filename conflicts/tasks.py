"""Periodic conflict detection on Celery beat, when ENABLE_CONFLICT_DETECTION:
the detect_conflicts tool through the registry.

Each new conflict is logged at WARN ("Conflict detected") and counted by the detection
service; overlapping runs are harmless because storing is deduplicated under a lock.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

from foundation.core.jobruns import run_job


def summarize(result: dict[str, Any]) -> str:
    text = ", ".join(f"{key} {value}" for key, value in result["summary"].items())
    return text + (f", closed {len(result['closed'])}" if result.get("closed") else "")


@shared_task(name="conflicts.detect_conflicts")
def detect_conflicts_task(transport: str = "task") -> dict[str, Any]:
    return run_job("conflict detection", "detect_conflicts", transport=transport,
                   summarize=summarize)
