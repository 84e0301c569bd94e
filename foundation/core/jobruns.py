"""Records each run of a periodic job, so the console can tell a live beat from a dead one.

``record_job_run(name)`` wraps a job's body: a row is written when it starts and finished
with an outcome (ok / failed) and a short summary. Recording is best effort: a failure to
write the row is logged and never fails or hides the job itself.

The periodic jobs the console lists are registered by the apps that run them
(``register_job``); each is matched to its Celery beat entry to learn its period (a job is
stale once its last run is older than twice that period).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.utils import timezone

from foundation.core.errors import OrchestratorError
from foundation.core.models import JobRun
from foundation.core.tools import ToolContext, call_tool
from foundation.observability import metrics

logger = logging.getLogger("orchestrator.jobs")

KEPT_RUNS = 100
SUMMARY_LENGTH = 500

@dataclass(frozen=True)
class Job:
    """A periodic job the console lists, registered by the app that runs it: the name shown
    to people, the Celery task beat runs it as (whose beat entry gives its period: a job is
    stale once its last run is older than twice that period), the ``job`` label of
    session_orchestration_job_last_success_* (its name when None), and whether it is one
    of the heavy jobs that take turns (``one_heavy_job_at_a_time``)."""

    name: str
    task: str
    metric: str | None = None
    heavy: bool = False


_jobs: dict[str, Job] = {}
# The beat schedule ({entry: {"task": ..., "schedule": seconds}}), registered by the layer
# that owns the Celery app.
_schedule: Callable[[], dict[str, dict[str, Any]]] | None = None


def register_job(name: str, task: str, *, metric: str | None = None,
                 heavy: bool = False) -> None:
    """List a periodic job (each app registers its own, in its AppConfig.ready)."""
    _jobs[name] = Job(name, task, metric, heavy)


def known_jobs() -> dict[str, Job]:
    """The registered jobs by name, in the order they were registered."""
    return dict(_jobs)


def register_schedule(source: Callable[[], dict[str, dict[str, Any]]]) -> None:
    """Where ``job_periods`` reads the beat schedule from."""
    global _schedule
    _schedule = source


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
        job = _jobs.get(job_name)
        metrics.mark_job_success(job.metric or job_name if job else job_name)


# The heavy periodic jobs (registered ``heavy``): each reads every active task or the whole
# graph. They share a
# period, so they fall due in the same second, and the worker runs two at a time: at 2,000
# agents that pulse took both cores for seconds and stalled hook calls by hundreds of ms
# (bench/PROFILE.md), while each alone went unnoticed. They run one at a time, across every
# stack that shares the database (a session-level advisory lock); one that waits longer
# than HEAVY_JOB_WAIT_SECONDS runs anyway rather than miss its period.
HEAVY_JOB_LOCK_KEY = 0x6865617679_6A6F62  # "heavy" "job"
HEAVY_JOB_WAIT_SECONDS = 120.0
HEAVY_JOB_POLL_SECONDS = 0.2


@contextmanager
def one_heavy_job_at_a_time(job_name: str) -> Iterator[None]:
    """Wait until no other heavy job runs (no-op for the others); hold the turn while
    the body runs."""
    job = _jobs.get(job_name)
    if job is None or not job.heavy:
        yield
        return
    held = _wait_for_turn(job_name)
    try:
        yield
    finally:
        if held:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [HEAVY_JOB_LOCK_KEY])
            except Exception as exc:  # the connection went: so did its lock
                logger.warning("%s: heavy-job turn not released: %s", job_name, exc)


def _wait_for_turn(job_name: str) -> bool:
    """True once this connection holds the turn; False when the wait ran out or Postgres
    could not be asked (the job runs anyway, and reports its own database errors)."""
    deadline = time.monotonic() + HEAVY_JOB_WAIT_SECONDS
    try:
        with connection.cursor() as cursor:
            while True:
                cursor.execute("SELECT pg_try_advisory_lock(%s)", [HEAVY_JOB_LOCK_KEY])
                if cursor.fetchone()[0]:
                    return True
                if time.monotonic() >= deadline:
                    logger.warning("%s: another heavy job ran for over %.0f s; running "
                                   "alongside it", job_name, HEAVY_JOB_WAIT_SECONDS)
                    return False
                time.sleep(HEAVY_JOB_POLL_SECONDS)
    except Exception as exc:
        logger.warning("%s: could not wait for its turn: %s", job_name, exc)
        return False


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
    a failed run too. The heavy jobs run one at a time (``one_heavy_job_at_a_time``);
    the wait for a turn is not part of the recorded run.
    """
    with one_heavy_job_at_a_time(job_name), record_job_run(job_name) as run:
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
    schedule = _schedule() if _schedule is not None else {}
    by_task = {entry["task"]: entry["schedule"] for entry in schedule.values()}
    return {name: by_task.get(job.task) for name, job in _jobs.items()}


def latest_runs() -> dict[str, dict[str, Any]]:
    """The newest run of each job that has ever run: {job: {startedAt, ..., outcome}}."""
    runs = (JobRun.objects.order_by("job_name", "-id").distinct("job_name")
            .values("job_name", "started_at", "finished_at", "outcome", "summary"))
    return {run["job_name"]: dict(run) for run in runs}
