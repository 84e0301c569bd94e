"""The Celery app and its beat schedule.

The schedule lives here, in one table, rather than in each app's tasks.py: Celery imports
those modules only after the app is configured, so per-module ``on_after_configure``
hooks never ran and beat scheduled nothing. Each job is a thin task calling a service
(see the apps' tasks.py), and each also exists as a management command.

Beat keeps this schedule in Redis (celery-redbeat) and only the beat holding the leader
lock sends it, so several stacks sharing the servers run each job once per period
(orchestrator/ops/beat.py).
"""

import os
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

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
        "check checkpoints": ("contexts.check_checkpoints",
                              settings.CHECKPOINT_CHECK_INTERVAL_SECONDS),
        # A pause ends by itself at resets_at + PAUSE_RESUME_GRACE_MINUTES: a minute late
        # at most, as the crash sweep.
        "resume paused sessions": ("sessions.resume_paused_sessions",
                                   settings.HEARTBEAT_INTERVAL_MS / 1000),
        # Saves held in RECOVERY_DIR/.pending-saves.json while Postgres was down: applied
        # within a heartbeat interval of its return even if no save comes to apply them.
        "replay pending saves": ("contexts.replay_pending_saves",
                                 settings.HEARTBEAT_INTERVAL_MS / 1000),
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


# celery-redbeat's keys (orchestrator/ops/beat.py): the schedule entries, the set of
# static entry names, and the leader lock "orchestrator:beat::lock".
BEAT_KEY_PREFIX = "orchestrator:beat:"


def beat_leadership() -> dict[str, Any]:
    """celery-redbeat's settings. They are set on the app, not as CELERY_REDBEAT_* Django
    settings: redbeat tells whether a key is configured without Celery's namespace, so
    it would take those for absent (and drop its Redis client options)."""
    from django.conf import settings

    # A Redis that accepts and never answers must not hold beat past its lock period.
    timeout = min(5.0, settings.BEAT_LOCK_TIMEOUT_SECONDS / 3)
    return {"redbeat_redis_url": redis_py_url(settings.CELERY_BROKER_URL),
            "redbeat_key_prefix": BEAT_KEY_PREFIX,
            "redbeat_lock_timeout": settings.BEAT_LOCK_TIMEOUT_SECONDS,
            "redbeat_redis_options": {"socket_connect_timeout": timeout,
                                      "socket_timeout": timeout}}


def redis_py_url(broker_url: str) -> str:
    """The broker's Redis as redis-py (redbeat's client) spells it: kombu's Unix socket URL
    ``redis+socket://`` (what `make run`'s Redis gives Celery) is redis-py's ``unix://``,
    and its database, kombu's ``?virtual_host=N``, is redis-py's ``?db=N``."""
    prefix = "redis+socket://"
    if not broker_url.startswith(prefix):
        return broker_url
    parts = urlsplit("unix://" + broker_url[len(prefix):])
    query = [("db" if key == "virtual_host" else key, value)
             for key, value in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit(parts._replace(query=urlencode(query)))


@app.on_after_configure.connect
def install_beat_schedule(sender, **kwargs) -> None:
    # The beat that starts writes this into Redis (redbeat's setup_schedule): definitions
    # replaced, last runs kept, entries no longer here removed.
    sender.conf.beat_schedule = periodic_jobs()
    sender.conf.update(beat_leadership())
