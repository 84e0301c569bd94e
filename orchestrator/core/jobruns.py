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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.utils import timezone

from orchestrator.core.errors import OrchestratorError
from orchestrator.core.models import JobRun
from orchestrator.core.tools import ToolContext, call_tool
from orchestrator.observability import metrics

logger = logging.getLogger("orchestrator.jobs")

KEPT_RUNS = 100
SUMMARY_LENGTH = 500

# Job name shown to people -> the Celery task beat runs it as.
KNOWN_JOBS: dict[str, str] = {
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


# Who a periodic job's tool call is made by, per door.
JOB_ACTORS = {"task": "celery-beat", "command": "manage.py"}


def run_job(job_name: str, tool: str, arguments: dict[str, Any] | None = None, *,
            transport: str, summarize: Callable[[dict[str, Any]], str],
            progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """One run of a periodic job: ``tool`` called through the registry (so it is traced,
    metered and audited like any call), recorded for the console.

    Beat runs it as transport "task", cron as "command" (``manage.py``). An error is a
    failed run, returned as the spec's error object rather than raised: the next run
    tries again, and a worker must not crash on it. An answer with ``success: false`` is
    a failed run too.
    """
    with record_job_run(job_name) as run:
        context = ToolContext(transport, actor=JOB_ACTORS.get(transport, transport),
                              progress=progress)
        try:
            result = call_tool(tool, arguments or {}, context)
        except OrchestratorError as exc:
            logger.warning("%s failed: %s", job_name, exc)
            run.fail(str(exc))
            return exc.to_dict()
        if result.get("success", True):
            run.ok(summarize(result))
        else:
            run.fail(summarize(result))
        return result


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

    by_task = {entry["task"]: entry["schedule"] for entry in periodic_jobs().values()}
    return {name: by_task.get(task) for name, task in KNOWN_JOBS.items()}


def latest_runs() -> dict[str, dict[str, Any]]:
    """The newest run of each job that has ever run: {job: {startedAt, ..., outcome}}."""
    runs = (JobRun.objects.order_by("job_name", "-id").distinct("job_name")
            .values("job_name", "started_at", "finished_at", "outcome", "summary"))
    return {run["job_name"]: run for run in runs}
