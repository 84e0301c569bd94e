"""Celery beat jobs: crash detection every HEARTBEAT_INTERVAL_MS (spec 7.1.1, 11.4.2) and
stale-session cleanup every STALE_SESSION_SWEEP_INTERVAL_SECONDS. Both are conditional
UPDATE/DELETE statements, so overlapping runs on several workers are harmless."""

from __future__ import annotations

from celery import shared_task

from orchestrator.core.jobruns import record_job_run
from sessions.services import recovery


@shared_task(name="sessions.detect_crashed_sessions")
def detect_crashed_sessions_task() -> list[str]:
    with record_job_run("crash sweep") as run:
        crashed = recovery.detect_crashed_sessions()
        run.ok(f"{len(crashed)} session(s) marked crashed")
        return crashed


@shared_task(name="sessions.clean_stale_sessions")
def clean_stale_sessions_task() -> list[str]:
    with record_job_run("stale-session cleanup") as run:
        removed = recovery.clean_stale_sessions()
        run.ok(f"{len(removed)} stale session(s) removed")
        return removed

