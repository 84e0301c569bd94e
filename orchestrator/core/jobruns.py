"""Records each run of a periodic job, so the console can tell a live beat from a dead one.

``record_job_run(name)`` wraps a job's body: a row is written when it starts and finished
with an outcome (ok / failed) and a short summary. Recording is best effort: a failure to
write the row is logged and never fails or hides the job itself.

The periodic jobs the console lists are ``KNOWN_JOBS``; each is matched to its Celery
beat entry to learn its period (a job is stale once its last run is older than twice
that period).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.utils import timezone

from orchestrator.core.errors import OrchestratorError
from orchestrator.core.models import JobRun
from orchestrator.observability import metrics

logger = logging.getLogger("orchestrator.jobs")

KEPT_RUNS = 100
SUMMARY_LENGTH = 500

# Job name shown to people -> the Celery task beat runs it as. Retention is found by its
# beat entry's name instead (its task lives in another branch of work).
KNOWN_JOBS: dict[str, str | None] = {
    "crash sweep": "sessions.detect_crashed_sessions",
    "hot sync": "contexts.sync_hot_context",
    "conflict detection": "conflicts.detect_conflicts",
    "graph sync": "graph.sync_graph",
    "stale-session cleanup": "sessions.clean_stale_sessions",
    "retention": "orchestrator.retention",
}


# Job name shown to people -> the `job` label of session_orchestration_job_last_success_*.
METRIC_JOB_NAMES = {"crash sweep": "detect_crashed_sessions", "hot sync": "sync_hot_context",
                    "conflict detection": "detect_conflicts", "graph sync": "sync_graph",
                    "stale-session cleanup": "clean_stale_sessions"}


@dataclass
class RunOutcome:
    """What the job's body reports; left as is, the run counts as ok with no summary."""

    failed: bool = False
    summary: str = ""

    def ok(self, summary: str) -> None:
        self.failed, self.summary = False, summary

    def fail(self, summary: str) -> None:
        self.failed, self.summary = True, summary


@contextmanager
def record_job_run(job_name: str) -> Iterator[RunOutcome]:
    """Record one run of ``job_name``; an exception marks it failed and propagates."""
    run = _start(job_name)
    outcome = RunOutcome()
    try:
        yield outcome
    except Exception as exc:
        # An OrchestratorError already reads "E16xx: message".
        summary = str(exc) if isinstance(exc, OrchestratorError) else \
            f"{type(exc).__name__}: {exc}"
        _finish(run, JobRun.FAILED, summary)
        raise
    _finish(run, JobRun.FAILED if outcome.failed else JobRun.OK, outcome.summary)
    if not outcome.failed:
        # The Prometheus gauge behind the PeriodicJobNotRunning alert, labelled by task.
        metrics.mark_job_success(METRIC_JOB_NAMES.get(job_name, job_name))


def _start(job_name: str) -> JobRun | None:
    try:
        return JobRun.objects.create(job_name=job_name, started_at=timezone.now())
    except Exception as exc:  # the job matters more than its record
        logger.warning("job run of %s not recorded: %s", job_name, exc)
        return None


def _finish(run: JobRun | None, outcome: str, summary: str) -> None:
    if run is None:
        return
    try:
        JobRun.objects.filter(pk=run.pk).update(
            finished_at=timezone.now(), outcome=outcome, summary=summary[:SUMMARY_LENGTH])
        # Keep the table small: only the newest KEPT_RUNS runs of each job.
        with connection.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {JobRun._meta.db_table} WHERE job_name = %s AND id < ("
                f"SELECT id FROM {JobRun._meta.db_table} WHERE job_name = %s "
                "ORDER BY id DESC OFFSET %s LIMIT 1)", [run.job_name, run.job_name, KEPT_RUNS - 1])
    except Exception as exc:
        logger.warning("job run of %s not finished in the record: %s", run.job_name, exc)


def job_periods() -> dict[str, float | None]:
    """Each known job's beat period in seconds; None when beat does not run it (disabled)."""
    from orchestrator.celery import periodic_jobs

    entries = periodic_jobs()
    by_task = {entry["task"]: entry["schedule"] for entry in entries.values()}
    periods: dict[str, float | None] = {}
    for name, task in KNOWN_JOBS.items():
        if task is not None:
            periods[name] = by_task.get(task)
        else:
            periods[name] = next((entry["schedule"] for key, entry in entries.items()
                                  if name in key or name in entry["task"]), None)
    return periods


def latest_runs() -> dict[str, dict[str, Any]]:
    """The newest run of each job that has ever run: {job: {startedAt, ..., outcome}}."""
    runs = (JobRun.objects.order_by("job_name", "-id").distinct("job_name")
            .values("job_name", "started_at", "finished_at", "outcome", "summary"))
    return {run["job_name"]: run for run in runs}
