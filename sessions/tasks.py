"""Celery beat jobs: crash detection every HEARTBEAT_INTERVAL_MS and
stale-session cleanup every STALE_SESSION_SWEEP_INTERVAL_SECONDS, the auto-resume of
paused sessions every HEARTBEAT_INTERVAL_MS, each a tool call through the registry; and
the Slack notifications of start_session / end_session, with retries. The sweeps are
conditional UPDATE statements (neither deletes), so overlapping runs on several workers
are harmless."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.conf import settings

from foundation.core.jobruns import run_job
from sessions.services import notifications


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


@shared_task(name=notifications.SEND_TASK, bind=True, ignore_result=True)
def send_notification_task(self, message: str) -> None:
    """Post a session notification (queued by start_session / end_session); a failed post
    is tried again SLACK_NOTIFY_RETRIES times, SLACK_NOTIFY_RETRY_SECONDS later and twice
    as long after each further failure, then given up (logged and counted by the notifier)."""
    try:
        notifications.deliver(message)
    except notifications.NotificationFailed as exc:
        if self.request.retries >= settings.SLACK_NOTIFY_RETRIES:
            return
        raise self.retry(exc=exc, max_retries=settings.SLACK_NOTIFY_RETRIES,
                         countdown=settings.SLACK_NOTIFY_RETRY_SECONDS
                         * 2 ** self.request.retries) from exc
