"""The Celery app and its beat schedule.

The schedule lives here, in one table, rather than in each app's tasks.py: Celery imports
those modules only after the app is configured, so per-module ``on_after_configure``
hooks never ran and beat scheduled nothing. Each job is a thin task calling a service
(see the apps' tasks.py), and each also exists as a management command.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orchestrator.settings")

app = Celery("orchestrator")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def periodic_jobs() -> dict[str, dict]:
    """Beat entries from the current settings (periods in seconds)."""
    from django.conf import settings

    jobs = {
        "sync hot context": ("contexts.sync_hot_context", settings.HOT_SYNC_INTERVAL_SECONDS),
        "detect crashed sessions": ("sessions.detect_crashed_sessions",
                                    settings.HEARTBEAT_INTERVAL_MS / 1000),
        "clean stale sessions": ("sessions.clean_stale_sessions",
                                 settings.STALE_SESSION_SWEEP_INTERVAL_SECONDS),
        "retention": ("orchestrator.retention", settings.RETENTION_INTERVAL_SECONDS),
    }
    if settings.ENABLE_CONFLICT_DETECTION:
        jobs["detect conflicts"] = ("conflicts.detect_conflicts",
                                    settings.CONFLICT_DETECTION_INTERVAL_SECONDS)
    if settings.ENABLE_NEO4J:
        jobs["sync graph"] = ("graph.sync_graph", settings.GRAPH_SYNC_INTERVAL_SECONDS)
    # Also with the graph off: the drain then discards what the triggers queued.
    jobs["drain graph outbox"] = ("graph.drain_outbox", settings.GRAPH_OUTBOX_INTERVAL_SECONDS)
    if settings.BACKUP_DIR:
        jobs["back up"] = ("orchestrator.backup", settings.BACKUP_INTERVAL_SECONDS)
    return {name: {"task": task, "schedule": float(seconds)}
            for name, (task, seconds) in jobs.items()}


@app.on_after_configure.connect
def install_beat_schedule(sender, **kwargs) -> None:
    sender.conf.beat_schedule = periodic_jobs()
