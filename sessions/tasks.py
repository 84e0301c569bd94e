"""Celery beat jobs: crash detection every HEARTBEAT_INTERVAL_MS (spec 7.1.1, 11.4.2) and
stale-session cleanup every STALE_SESSION_SWEEP_INTERVAL_SECONDS. Both are conditional
UPDATE/DELETE statements, so overlapping runs on several workers are harmless."""

from __future__ import annotations

from django.conf import settings

from orchestrator.celery import app
from sessions.services import recovery


@app.task(name="sessions.detect_crashed_sessions")
def detect_crashed_sessions_task() -> list[str]:
    return recovery.detect_crashed_sessions()


@app.task(name="sessions.clean_stale_sessions")
def clean_stale_sessions_task() -> list[str]:
    return recovery.clean_stale_sessions()


def setup_periodic(sender, **kwargs) -> None:
    sender.add_periodic_task(settings.HEARTBEAT_INTERVAL_MS / 1000,
                             detect_crashed_sessions_task.s(), name="detect crashed sessions")
    sender.add_periodic_task(settings.STALE_SESSION_SWEEP_INTERVAL_SECONDS,
                             clean_stale_sessions_task.s(), name="clean stale sessions")


# Celery's autodiscovery imports this module only after the app is configured (worker
# and beat start-up), when on_after_configure has already fired: register directly then.
if app.configured:
    setup_periodic(app)
else:
    app.on_after_configure.connect(setup_periodic)
