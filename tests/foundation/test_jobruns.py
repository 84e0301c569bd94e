"""record_job_run and the beat tasks it wraps."""

from __future__ import annotations

import io
import threading
import time

import psycopg
import pytest
from django.db import connection, connections

from foundation.core import jobruns
from foundation.core.jobruns import record_job_run
from foundation.core.models import JobRun

pytestmark = pytest.mark.django_db


def test_a_run_is_recorded_with_outcome_and_summary():
    with record_job_run("hot sync") as run:
        assert JobRun.objects.get().outcome == JobRun.RUNNING
        run.ok("2 task(s) cached")
    stored = JobRun.objects.get()
    assert (stored.outcome, stored.summary) == ("ok", "2 task(s) cached")
    assert stored.finished_at >= stored.started_at


def test_a_reported_failure_and_an_exception_are_failed_runs():
    with record_job_run("graph sync") as run:
        run.fail("graph failed: refused")
    with pytest.raises(RuntimeError), record_job_run("graph sync"):
        raise RuntimeError("boom")
    outcomes = list(JobRun.objects.order_by("id").values_list("outcome", "summary"))
    assert outcomes == [("failed", "graph failed: refused"), ("failed", "RuntimeError: boom")]


def test_only_the_newest_runs_are_kept(monkeypatch):
    monkeypatch.setattr(jobruns, "KEPT_RUNS", 3)
    for _ in range(5):
        with record_job_run("crash sweep"):
            pass
    with record_job_run("hot sync"):
        pass
    assert JobRun.objects.filter(job_name="crash sweep").count() == 3
    assert JobRun.objects.filter(job_name="hot sync").count() == 1


def test_latest_runs_and_periods_follow_beat(settings):
    settings.STALE_SESSION_SWEEP_INTERVAL_SECONDS = 1234
    settings.ENABLE_NEO4J = False
    with record_job_run("crash sweep") as run:
        run.ok("first")
    with record_job_run("crash sweep") as run:
        run.ok("second")
    assert jobruns.latest_runs()["crash sweep"]["summary"] == "second"
    periods = jobruns.job_periods()
    assert periods["stale-session cleanup"] == 1234
    assert periods["graph sync"] is None
    assert periods["retention"] == settings.RETENTION_INTERVAL_SECONDS


def test_every_beat_task_records_its_run(tools, settings):
    from conflicts.tasks import detect_conflicts_task
    from contexts.tasks import sync_hot_context_task
    from graph.tasks import sync_graph_task
    from sessions.tasks import clean_stale_sessions_task, detect_crashed_sessions_task

    for task in (sync_hot_context_task, detect_crashed_sessions_task, clean_stale_sessions_task,
                 detect_conflicts_task, sync_graph_task):
        task()
    runs = {r.job_name: r for r in JobRun.objects.all()}
    assert set(runs) == {"hot sync", "crash sweep", "stale-session cleanup",
                         "conflict detection", "graph sync"}
    assert all(r.outcome == "ok" for r in runs.values()), {n: r.summary for n, r in runs.items()}
    assert runs["crash sweep"].summary == "0 session(s) marked crashed"


def test_the_management_commands_record_full_runs_only(tools):
    from django.core.management import call_command

    for command in ("detect_crashed_sessions", "clean_stale_sessions", "sync_graph",
                    "sync_hot_context", "detect_conflicts"):
        call_command(command, stdout=io.StringIO())
    assert set(JobRun.objects.values_list("job_name", flat=True)) == {
        "crash sweep", "stale-session cleanup", "graph sync", "hot sync", "conflict detection"}
    assert set(JobRun.objects.values_list("outcome", flat=True)) == {"ok"}
    # A partial run (some tasks only) is not a run of the periodic job.
    tools.ok("create_task", {"taskId": "only-me", "name": "x"})
    call_command("sync_hot_context", "only-me", stdout=io.StringIO())
    call_command("detect_conflicts", "--task", "only-me", stdout=io.StringIO())
    assert JobRun.objects.count() == 5


def test_a_failed_command_run_is_recorded_with_its_code(settings, tmp_path):
    from django.core.management import CommandError, call_command

    # A context directory that is a file: every file write fails while Redis takes its
    # copies, so the run fails with the file backend's code (E1651).
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    settings.CONTEXT_DIR = str(blocked)
    with pytest.raises(CommandError):
        call_command("sync_hot_context", stdout=io.StringIO())
    run = JobRun.objects.get()
    assert (run.job_name, run.outcome) == ("hot sync", "failed")
    assert run.summary.startswith("E1651: ")


def _in_thread(target, *args) -> threading.Thread:
    def run() -> None:
        try:
            target(*args)
        finally:
            connections.close_all()
    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True)
def test_heavy_jobs_take_turns_and_light_ones_do_not_wait(monkeypatch):
    """Hot sync, conflict detection and graph sync fall due in the same second; they run
    one at a time across stacks (a Postgres advisory lock), and waiting has a limit."""
    ran: list[tuple[str, float]] = []

    def job(name: str) -> None:
        with jobruns.one_heavy_job_at_a_time(name):
            ran.append((name, time.monotonic()))

    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [jobruns.HEAVY_JOB_LOCK_KEY])
        heavy = _in_thread(job, "hot sync")
        _in_thread(job, "crash sweep").join(10)
        time.sleep(0.6)
        assert [name for name, _ in ran] == ["crash sweep"]
        released = time.monotonic()
        other.execute("SELECT pg_advisory_unlock(%s)", [jobruns.HEAVY_JOB_LOCK_KEY])
        heavy.join(10)
        assert ran[-1][0] == "hot sync" and ran[-1][1] >= released
        # It gave its turn back.
        assert other.execute("SELECT pg_try_advisory_lock(%s)",
                             [jobruns.HEAVY_JOB_LOCK_KEY]).fetchone()[0]
        # A turn held too long: the job runs anyway once the wait is over.
        monkeypatch.setattr(jobruns, "HEAVY_JOB_WAIT_SECONDS", 0.5)
        started = time.monotonic()
        _in_thread(job, "graph sync").join(10)
        assert ran[-1][0] == "graph sync" and 0.5 <= ran[-1][1] - started < 5
