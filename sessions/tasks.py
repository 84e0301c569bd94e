"""Celery beat jobs: crash detection every HEARTBEAT_INTERVAL_MS and
stale-session cleanup every STALE_SESSION_SWEEP_INTERVAL_SECONDS, the auto-resume of
paused sessions every HEARTBEAT_INTERVAL_MS, each a tool call through
the registry. The sweeps are conditional UPDATE statements (neither deletes), so overlapping runs on
several workers are harmless."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from orchestrator.core.jobruns import run_job


@shared_task(name="sessions.detect_crashed_sessions")
def detect_crashed_sessions_task(transport: str = "task") -> dict[str, Any]:
    return run_job("crash sweep", "detect_crashed_sessions", transport=transport,
                   summarize=lambda r: f"{len(r['crashed'])} session(s) marked crashed")


@shared_task(name="sessions.clean_stale_sessions")
def clean_stale_sessions_task(transport: str = "task") -> dict[str, Any]:
    return run_job("stale-session cleanup", "clean_stale_sessions", transport=transport,
                   summarize=lambda r: f"{len(r['closed'])} abandoned session(s) closed")


@shared_task(name="sessions.resume_paused_sessions")
def resume_paused_sessions_task(transport: str = "task") -> dict[str, Any]:
    return run_job("pause auto-resume", "resume_paused_sessions", transport=transport,
                   summarize=lambda r: f"{len(r['resumed'])} paused session(s) resumed")
