"""Celery beat jobs: crash detection every HEARTBEAT_INTERVAL_MS (spec 7.1.1, 11.4.2) and
stale-session cleanup every STALE_SESSION_SWEEP_INTERVAL_SECONDS. Both are conditional
UPDATE/DELETE statements, so overlapping runs on several workers are harmless."""

from __future__ import annotations

from orchestrator.celery import app
from sessions.services import recovery


@app.task(name="sessions.detect_crashed_sessions")
def detect_crashed_sessions_task() -> list[str]:
    return recovery.detect_crashed_sessions()


@app.task(name="sessions.clean_stale_sessions")
def clean_stale_sessions_task() -> list[str]:
    return recovery.clean_stale_sessions()

