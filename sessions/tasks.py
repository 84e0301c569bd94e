"""Celery beat jobs: crash detection every HEARTBEAT_INTERVAL_MS (spec 7.1.1, 11.4.2) and
stale-session cleanup every STALE_SESSION_SWEEP_INTERVAL_SECONDS. Both are conditional
UPDATE/DELETE statements, so overlapping runs on several workers are harmless."""

from __future__ import annotations

from orchestrator import metrics
from orchestrator.celery import app
from sessions.services import recovery


@app.task(name="sessions.detect_crashed_sessions")
def detect_crashed_sessions_task() -> list[str]:
    crashed = recovery.detect_crashed_sessions()
    metrics.mark_job_success("detect_crashed_sessions")
    return crashed


@app.task(name="sessions.clean_stale_sessions")
def clean_stale_sessions_task() -> list[str]:
    removed = recovery.clean_stale_sessions()
    metrics.mark_job_success("clean_stale_sessions")
    return removed

